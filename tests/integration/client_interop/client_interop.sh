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
source "$here/../../support/standalone.sh"
nereus=$1
tool=$2
work=$(mktemp -d)
trap 'standalone_kill; rm -rf "$work"' EXIT
cp "$here/interop.js" "$flex_dir/package.json" "$work/"
flex_node_modules "$flex_dir" "$work"
standalone_start "$nereus" "$work/data" "$work/broker.log" || exit 1
port=$NEREUS_PORT
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
standalone_stop TERM
if [ "$NEREUS_RC" -ne 0 ]; then
    echo "broker exited with $NEREUS_RC"; tail -n 30 "$work/broker.log"; exit 1
fi
echo "client interop: OK"
