#!/usr/bin/env bash
# `nereus --help` lists the subcommands and each group's help works. (`nereus standalone` itself
# is tested as a process in tests/integration.)
set -euo pipefail
nereus=$1
"$nereus" --help | grep -q "standalone"
"$nereus" storage --help | grep -q "verify"
"$nereus" cursor --help | grep -q "bench"
"$nereus" standalone --help | grep -q -- "--data-dir"
echo "ok"
