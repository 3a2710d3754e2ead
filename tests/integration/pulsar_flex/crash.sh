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
nereus=$(realpath "${1:-build/nereus}")
work=$(mktemp -d)
broker=
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
    stop_pid "$broker" TERM
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
if [ -d "$here/node_modules/pulsar-flex" ]; then
    ln -s "$here/node_modules" "$work/node_modules"  # installed by scripts/install-deps
else
    (cd "$work" && timeout 120 npm install --no-audit --no-fund --silent)
fi
# Two free ports of 127.0.0.1: the Pulsar protocol and the admin HTTP (never the default 8080, so
# tests and brokers can run side by side).
read -r port http_port < <(python3 -c 'import socket
a=socket.socket(); a.bind(("127.0.0.1",0)); b=socket.socket(); b.bind(("127.0.0.1",0))
print(a.getsockname()[1], b.getsockname()[1])')
start_broker() {  # start_broker LOG: sets $broker, waits (10 s at most) for the port
    "$nereus" standalone --data-dir "$work/data" --bind 127.0.0.1 --port "$port" --http-port "$http_port" >"$1" 2>&1 &
    broker=$!
    for _ in $(seq 1 100); do
        kill -0 "$broker" 2>/dev/null || { echo "broker exited"; cat "$1"; exit 1; }
        if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
            sleep 0.2  # still up after binding the admin port too
            kill -0 "$broker" 2>/dev/null || { echo "broker exited"; cat "$1"; exit 1; }
            return 0
        fi
        sleep 0.1
    done
    echo "broker did not listen on $port in 10 s"; cat "$1"; exit 1
}
wait_file() {  # wait_file PATH SECONDS PID: the file appears while PID is alive
    local n=$(($2 * 20))
    for _ in $(seq 1 "$n"); do
        [ -e "$1" ] && return 0
        kill -0 "$3" 2>/dev/null || return 1
        sleep 0.05
    done
    return 1
}

start_broker "$work/broker1.log"
cd "$work"
node crash.js survive "$port" "$work" >"$work/survive.log" 2>&1 &
survive=$!
node crash.js produce "$port" "$work" "$broker" >"$work/produce.log" 2>&1 &
produce=$!
wait_file "$work/mark.survivor" 30 "$survive" || { echo "survive did not get ready"; dump; exit 1; }
# produce SIGKILLs the broker by its PID at a moment with sends and acks in flight, then writes
# mark.produce; should it not, the broker is SIGKILLed here.
if ! wait_file "$work/mark.produce" $((30 * scale)) "$produce"; then
    echo "produce did not kill the broker"; dump; exit 1
fi
rc=0
wait "$broker" 2>/dev/null || rc=$?
broker=
[ "$rc" -eq 137 ] || { echo "broker exit status $rc, expected 137 (SIGKILL)"; dump; exit 1; }
echo "broker SIGKILLed mid-run: $(cat "$work/mark.produce")"
stop_pid "$produce" KILL
produce=

start_broker "$work/broker2.log"
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
stop_pid "$broker" TERM
broker=
echo "pulsar-flex crash: OK"
