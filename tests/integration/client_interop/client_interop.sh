#!/usr/bin/env bash
# Interoperability of nereus::client with the stock pulsar-flex client (ctest
# `client_interop.pulsar_flex`) against one `nereus standalone` on free ports of 127.0.0.1:
#   1. nereus::client produces 10 messages (batched, keyed, property src=nereus), each receipted;
#      pulsar-flex consumes them on a subscription created beforehand, in order, acking each.
#   2. pulsar-flex produces 10 messages (single sends and batches, property src=flex);
#      nereus::client consumes them from Earliest, in order, acking each with its ACK_RESPONSE.
# The broker is started and stopped by its PID; the temp directory is removed on exit.
# Usage: client_interop.sh path/to/nereus path/to/interop_tool
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
flex_dir=$(cd "$here/../pulsar_flex" && pwd)
nereus=$1
tool=$2
work=$(mktemp -d)
broker=
cleanup() {
    if [ -n "$broker" ]; then
        kill -TERM "$broker" 2>/dev/null || true
        wait "$broker" 2>/dev/null || true
    fi
    rm -rf "$work"
}
trap cleanup EXIT
cp "$here/interop.js" "$flex_dir/package.json" "$work/"
if [ -d "$flex_dir/node_modules/pulsar-flex" ]; then
    ln -s "$flex_dir/node_modules" "$work/node_modules"  # installed by scripts/install-deps
else
    (cd "$work" && timeout 120 npm install --no-audit --no-fund --silent)
fi
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
if [ -z "$up" ]; then
    echo "broker did not come up on $port"; cat "$work/broker.log"; exit 1
fi
topic1=persistent://public/default/interop-to-flex
topic2=persistent://public/default/interop-from-flex
# 1. nereus::client -> pulsar-flex (the subscription exists before the messages: pulsar-flex
#    subscribes at Latest only).
timeout 30 "$tool" subscribe "$port" "$topic1" flex-sub
timeout 30 "$tool" produce "$port" "$topic1" 10 n2f
(cd "$work" && timeout 45 node interop.js "$port" consume "$topic1" flex-sub 10 n2f) || { tail -n 30 "$work/broker.log"; exit 1; }
# 2. pulsar-flex -> nereus::client
(cd "$work" && timeout 45 node interop.js "$port" produce "$topic2" 10 f2n) || { tail -n 30 "$work/broker.log"; exit 1; }
timeout 30 "$tool" consume "$port" "$topic2" cpp-sub 10 f2n
kill -TERM "$broker"
rc=0
wait "$broker" || rc=$?
broker=
if [ "$rc" -ne 0 ]; then
    echo "broker exited with $rc"; tail -n 30 "$work/broker.log"; exit 1
fi
echo "client interop: OK"
