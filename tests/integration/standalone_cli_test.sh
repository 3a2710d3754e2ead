#!/usr/bin/env bash
# `nereus standalone` starts, listens on --port, and exits 0 on SIGTERM (graceful stop).
# Usage: standalone_cli_test.sh path/to/nereus
set -euo pipefail
source "$(dirname "$0")/../support/standalone.sh"
nereus=$1
dir=$(mktemp -d)
trap 'standalone_kill; rm -rf "$dir"' EXIT
standalone_start "$nereus" "$dir/data" "$dir/log" || exit 1
standalone_stop TERM
[ "$NEREUS_RC" -eq 0 ] || { echo "standalone exited $NEREUS_RC after SIGTERM, want 0:"; cat "$dir/log"; exit 1; }
grep -q "broker stopped" "$dir/log" || { echo "no graceful stop in the log:"; cat "$dir/log"; exit 1; }
echo "ok"
