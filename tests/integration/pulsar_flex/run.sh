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
source "$here/../../support/standalone.sh"
nereus=${1:-build/nereus}
work=$(mktemp -d)
trap 'standalone_kill; rm -rf "$work"' EXIT
cp "$here/package.json" "$here/lib.js" "$here/smoke.js" "$here/multi.js" "$here/compaction.js" "$work/"
flex_node_modules "$here" "$work"
standalone_start "$nereus" "$work/data" "$work/broker.log" || exit 1
port=$NEREUS_PORT
http_port=$NEREUS_HTTP_PORT
for sub in SHARED EXCLUSIVE FAILOVER KEY_SHARED; do
    (cd "$work" && timeout 30 node smoke.js "$port" "$sub") || { tail -n 40 "$work/broker.log"; exit 1; }
done
(cd "$work" && timeout 40 node compaction.js "$port" "$http_port") || { tail -n 40 "$work/broker.log"; exit 1; }
for mode in FAILOVER KEY_SHARED FAILOVER_KILL KEY_SHARED_KILL; do
    (cd "$work" && timeout 40 node multi.js "$port" "$mode") || { tail -n 40 "$work/broker.log"; exit 1; }
done
standalone_stop TERM
[ "$NEREUS_RC" -eq 0 ] || { echo "broker exited with $NEREUS_RC on SIGTERM"; tail -n 40 "$work/broker.log"; exit 1; }
echo "pulsar-flex smoke: OK"
