#!/usr/bin/env bash
# Crash/restart end-to-end test with the stock pulsar-flex client (ctest `pulsar_flex.crash`):
#   1. starts `nereus standalone` on a free port of 127.0.0.1 over a temp data directory;
#   2. starts `crash.js produce` (durable Shared/Exclusive/Failover/Key_Shared subscriptions and
#      an audit subscription; singles and batches produced with sends in flight; a known subset
#      acked with ack responses, nacks on Shared; every receipt and confirmed ack journaled) and
#      `crash.js survive` (a consumer and a producer that stay up across the crash);
#   3. `produce` SIGKILLs the broker by the PID given to it at a moment with sends and acks in
#      flight (mid-run); this script reaps the broker and SIGKILLs `produce` by its PID;
#   4. restarts the broker on the same port and data directory;
#   5. `crash.js verify`: fresh consumers on the same subscriptions get exactly the receipted,
#      not confirmed-acked messages; the audit subscription and a new Earliest subscription get
#      every receipted message; redelivery counts of nacked messages are reported (tolerant);
#      `survive` checks pulsar-flex's own reconnect got the unacked and the new messages.
# Every process is started and stopped by its PID; the temp directory is removed on exit.
# Usage: tests/integration/pulsar_flex/crash.sh [path/to/nereus]   (needs node; npm if
# node_modules is not installed)
set -euo pipefail
scale=${FLEX_CRASH_SCALE:-1}  # manual longer runs: FLEX_CRASH_SCALE=20 (ctest: 1)
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../../support/standalone.sh"
nereus=$(realpath "${1:-build/nereus}")
work=$(mktemp -d)
produce=
survive=
stop_pid() {  # stop_pid PID SIGNAL: signal one process we started, then reap it
    if [ -n "$1" ] && kill -0 "$1" 2>/dev/null; then
        kill "-$2" "$1" 2>/dev/null || true
        wait "$1" 2>/dev/null || true
    fi
}
cleanup() {
    stop_pid "$produce" KILL
    stop_pid "$survive" KILL
    standalone_kill
    rm -rf "$work"
}
trap cleanup EXIT
dump() {
    echo "--- produce.log"; cat "$work/produce.log" 2>/dev/null || true
    echo "--- survive.log"; cat "$work/survive.log" 2>/dev/null || true
    echo "--- broker1.log (tail)"; tail -n 40 "$work/broker1.log" 2>/dev/null || true
    echo "--- broker2.log (tail)"; tail -n 40 "$work/broker2.log" 2>/dev/null || true
}
cp "$here/package.json" "$here/lib.js" "$here/crash.js" "$work/"
flex_node_modules "$here" "$work"
standalone_ports
port=$NEREUS_PORT
wait_file() {  # wait_file PATH SECONDS PID: the file appears while PID is alive
    local n=$(($2 * 20))
    for _ in $(seq 1 "$n"); do
        [ -e "$1" ] && return 0
        kill -0 "$3" 2>/dev/null || return 1
        sleep 0.05
    done
    return 1
}

standalone_start "$nereus" "$work/data" "$work/broker1.log" || exit 1
cd "$work"
node crash.js survive "$port" "$work" >"$work/survive.log" 2>&1 &
survive=$!
node crash.js produce "$port" "$work" "$NEREUS_PID" >"$work/produce.log" 2>&1 &
produce=$!
wait_file "$work/mark.survivor" 30 "$survive" || { echo "survive did not get ready"; dump; exit 1; }
# produce SIGKILLs the broker by its PID at a moment with sends and acks in flight, then writes
# mark.produce; should it not, the broker is SIGKILLed here.
if ! wait_file "$work/mark.produce" $((30 * scale)) "$produce"; then
    echo "produce did not kill the broker"; dump; exit 1
fi
standalone_wait
[ "$NEREUS_RC" -eq 137 ] || { echo "broker exit status $NEREUS_RC, expected 137 (SIGKILL)"; dump; exit 1; }
echo "broker SIGKILLed mid-run: $(cat "$work/mark.produce")"
stop_pid "$produce" KILL
produce=

standalone_start "$nereus" "$work/data" "$work/broker2.log" || exit 1
echo "broker restarted on port $port"
: >"$work/mark.restarted"

rc=0
timeout $((60 * scale)) node crash.js verify "$port" "$work" || rc=$?
# survive bounds itself (70 s x scale); wait for its verdict.
src=0
wait "$survive" || src=$?
survive=
cat "$work/survive.log"
if [ "$rc" -ne 0 ] || [ "$src" -ne 0 ]; then
    dump
    exit 1
fi
standalone_stop TERM
echo "pulsar-flex crash: OK"
