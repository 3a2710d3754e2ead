#!/usr/bin/env bash
# `nereus standalone` starts, listens on --port, and exits 0 on SIGTERM (graceful stop); and
# tests/support/standalone.sh notices a broker that exits at start.
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
# The helper sees a broker that exits at start (an unknown flag): standalone_start fails, reaped.
if standalone_start "$nereus" "$dir/bad" "$dir/bad.log" --no-such-flag >/dev/null; then
    echo "standalone_start did not see the broker exit"; exit 1
fi
[ -z "$NEREUS_PID" ] && [ "$NEREUS_RC" -ne 0 ] || { echo "standalone_start left PID '$NEREUS_PID' rc '$NEREUS_RC'"; exit 1; }
echo "ok"
