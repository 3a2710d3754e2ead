#!/usr/bin/env bash
# `nereus --help` works; `nereus standalone` says plainly it is not there yet (exit 2).
set -euo pipefail
nereus=$1
"$nereus" --help | grep -q "standalone"
"$nereus" storage --help | grep -q "verify"
set +e
out=$("$nereus" standalone --data-dir "$(mktemp -d)" 2>&1)
rc=$?
set -e
[ "$rc" -eq 2 ] || { echo "standalone exited $rc, want 2"; exit 1; }
echo "$out" | grep -q "not implemented yet" || { echo "standalone did not say so: $out"; exit 1; }
echo "ok"
