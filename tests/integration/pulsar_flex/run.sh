#!/usr/bin/env bash
# End-to-end smoke test with the stock pulsar-flex client (pure JavaScript, from npm), ctest
# `pulsar_flex.smoke`, against one `nereus standalone` on a free port of 127.0.0.1:
#   * smoke.js, each subscription type: a single message, a batch and another message; a nack
#     redelivered (redelivery_count 1 on Shared/Key_Shared, 0 on Exclusive/Failover); every
#     other message acked with an ACK_RESPONSE awaited;
#   * multi.js FAILOVER: two consumers, the active one closes, the other gets exactly the
#     unacked messages; multi.js KEY_SHARED: two consumers, each key to one consumer, in order;
#     FAILOVER_KILL / KEY_SHARED_KILL: the same with the leaving consumer's process SIGKILLed;
#   * compaction.js: PUT/GET .../compaction, then readCompacted vs a plain consumer.
# The crash/restart scenario is crash.sh (ctest `pulsar_flex.crash`).
# The broker is started and stopped by its PID; the temp directory is removed on exit.
# Usage: tests/integration/pulsar_flex/run.sh [path/to/nereus]   (needs node; npm if
# node_modules is not installed)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
nereus=${1:-build/nereus}
work=$(mktemp -d)
broker=
# Stops the broker by its PID (never `kill 0`: that would signal the whole process group).
cleanup() {
    if [ -n "$broker" ]; then
        kill -TERM "$broker" 2>/dev/null || true
        wait "$broker" 2>/dev/null || true
    fi
    rm -rf "$work"
}
trap cleanup EXIT
cp "$here/package.json" "$here/lib.js" "$here/smoke.js" "$here/multi.js" "$here/compaction.js" "$work/"
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
"$nereus" standalone --data-dir "$work/data" --bind 127.0.0.1 --port "$port" --http-port "$http_port" >"$work/broker.log" 2>&1 &
broker=$!
up=
for _ in $(seq 1 100); do
    kill -0 "$broker" 2>/dev/null || break
    (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && { up=1; break; }
    sleep 0.1
done
sleep 0.2
if [ -z "$up" ] || ! kill -0 "$broker" 2>/dev/null; then
    echo "broker did not come up on $port"; cat "$work/broker.log"; exit 1
fi
for sub in SHARED EXCLUSIVE FAILOVER KEY_SHARED; do
    (cd "$work" && timeout 30 node smoke.js "$port" "$sub") || { tail -n 40 "$work/broker.log"; exit 1; }
done
(cd "$work" && timeout 40 node compaction.js "$port" "$http_port") || { tail -n 40 "$work/broker.log"; exit 1; }
for mode in FAILOVER KEY_SHARED FAILOVER_KILL KEY_SHARED_KILL; do
    (cd "$work" && timeout 40 node multi.js "$port" "$mode") || { tail -n 40 "$work/broker.log"; exit 1; }
done
kill -TERM "$broker"
rc=0
wait "$broker" || rc=$?
broker=
[ "$rc" -eq 0 ] || { echo "broker exited with $rc on SIGTERM"; tail -n 40 "$work/broker.log"; exit 1; }
echo "pulsar-flex smoke: OK"
