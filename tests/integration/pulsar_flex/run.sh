#!/usr/bin/env bash
# End-to-end smoke test with the stock pulsar-flex client (pure JavaScript, from npm):
# subscribe (each subscription type), produce a single message, a batch and another message, nack one message
# and see it redelivered with redelivery_count 1, ack everything with ack responses.
# Usage: tests/integration/pulsar_flex/run.sh [path/to/nereus]   (needs node + npm)
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
cp "$here/package.json" "$here/smoke.js" "$work/"
if [ -d "$here/node_modules/pulsar-flex" ]; then
    ln -s "$here/node_modules" "$work/node_modules"  # installed by scripts/install-deps
else
    (cd "$work" && npm install --no-audit --no-fund --silent)
fi
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$nereus" standalone --data-dir "$work/data" --port "$port" >"$work/broker.log" 2>&1 &
broker=$!
for _ in $(seq 1 100); do
    (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
    sleep 0.1
done
for sub in SHARED EXCLUSIVE FAILOVER KEY_SHARED; do
    (cd "$work" && timeout 60 node smoke.js "$port" "$sub") || { cat "$work/broker.log"; exit 1; }
done
kill -TERM "$broker"
wait "$broker"
broker=
echo "pulsar-flex smoke: OK"
