#!/usr/bin/env bash
# ctest examples.orders_self_check (label integration): starts `nereus standalone` on free
# ports (127.0.0.1, a temp data dir), runs the orders service in --self-check mode against it
# (bounded: --timeout-s 120 inside, `timeout 200` outside), checks its output, stops the broker
# by PID.
# Usage: self_check.sh path/to/nereus path/to/orders_service
#        self_check.sh --in-process path/to/orders_service   (the in-process test transport)
set -euo pipefail
source "$(dirname "$0")/../../tests/support/standalone.sh"
nereus=$1
service=$2
orders=20
dir=$(mktemp -d)
trap 'standalone_kill; rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; [ -f "$dir/broker.log" ] && { echo "--- broker log (tail)"; tail -20 "$dir/broker.log"; }; exit 1; }
# The output says the same as the service's own self-check.
check_output() {
    grep -q '^self-check: ok' "$dir/out" || fail "no 'self-check: ok'"
    for i in $(seq 0 $((orders - 1))); do
        n=$(grep -c "^billing: o-$i for c[0-9]* billed" "$dir/out" || true)
        [ "$n" -eq 1 ] || fail "o-$i billed $n times in the output"
    done
    n=$(grep -c '^dlq-audit: o-poison for c[0-9]* dead-lettered' "$dir/out" || true)
    [ "$n" -eq 1 ] || fail "o-poison dead-lettered $n times in the output"
    if grep -q '^billing: o-poison .*billed' "$dir/out"; then fail "the poison order was billed"; fi
    grep -q '^report: drained=yes balanced=yes' "$dir/out" || fail "shutdown report not drained/balanced"
}
if [ "$nereus" = "--in-process" ]; then
    rc=0
    timeout 200 "$service" --in-process --orders "$orders" --self-check --timeout-s 120 \
        >"$dir/out" 2>&1 || rc=$?
    cat "$dir/out"
    [ "$rc" -eq 0 ] || fail "orders_service exited $rc"
    check_output
    echo "ok"
    exit 0
fi
standalone_start "$nereus" "$dir/data" "$dir/broker.log" || fail "standalone did not start"

rc=0
timeout 200 "$service" --url "pulsar://127.0.0.1:$NEREUS_PORT" --orders "$orders" --self-check \
    --timeout-s 120 >"$dir/out" 2>&1 || rc=$?
cat "$dir/out"
[ "$rc" -eq 0 ] || fail "orders_service exited $rc"
check_output

standalone_stop TERM
[ "$NEREUS_RC" -eq 0 ] || fail "standalone exited $NEREUS_RC after SIGTERM"
echo "ok"
