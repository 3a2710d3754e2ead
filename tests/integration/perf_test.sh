#!/usr/bin/env bash
# `nereus perf` against a real `nereus standalone` on a free port over a temp data directory:
# every message produced is receipted and consumed (exit 0, counts in the perf-summary line).
# No timing assertions. Usage: perf_test.sh path/to/nereus
set -euo pipefail
source "$(dirname "$0")/../support/standalone.sh"
nereus=$1
dir=$(mktemp -d)
trap 'standalone_kill; rm -rf "$dir"' EXIT
standalone_start "$nereus" "$dir/data" "$dir/broker.log" || exit 1
url="pulsar://127.0.0.1:$NEREUS_PORT"

# run NAME EXPECT ARGS...: runs `nereus perf ARGS` (bounded by `timeout`), wants exit 0 and every
# key=value of EXPECT (space separated) in its perf-summary line.
run() {
    local name=$1 expect=$2
    shift 2
    local out="$dir/$name.out" rc=0
    timeout 120 "$nereus" perf "$@" --service-url "$url" --report-interval 1 >"$out" 2>&1 || rc=$?
    if [ "$rc" -ne 0 ]; then
        echo "FAIL $name: exit $rc"; cat "$out"; tail -20 "$dir/broker.log"; exit 1
    fi
    local summary
    summary=$(grep '^perf-summary:' "$out" || true)
    for kv in $expect; do
        if ! grep -q -- " $kv\b" <<<"$summary"; then
            echo "FAIL $name: want $kv in: $summary"; cat "$out"; exit 1
        fi
    done
    echo "ok $name: $summary"
}

# Batched, individual acks with ACK_RESPONSE, end-to-end in one process.
run batched "sent=2000 receipted=2000 consumed=2000 distinct=2000 duplicates=0 errors=0" \
    produce --num-messages 2000 --consume --size 100 --topics it-batched
# One SEND per message, two topics, cumulative acks, a small window and a fixed rate.
run unbatched "sent=2000 receipted=2000 distinct=2000 errors=0" \
    produce --num-messages 2000 --consume --size 64 --topics 2 --no-batching \
    --max-pending 50 --ack cumulative --rate 4000
# The publish latency's split: each message's SEND-encoded -> receipt and send lag are parts of
# its intended -> receipt, so their percentiles can never exceed the whole's (same histograms).
check_split() {
    local summary key part whole
    summary=$(grep '^perf-summary:' "$dir/$1.out")
    for key in sent_p50_ms:pub_p50_ms sent_p99_ms:pub_p99_ms lag_p50_ms:pub_p50_ms lag_p99_ms:pub_p99_ms; do
        part=$(grep -o " ${key%%:*}=[0-9.]*" <<<"$summary" | cut -d= -f2)
        whole=$(grep -o " ${key##*:}=[0-9.]*" <<<"$summary" | cut -d= -f2)
        if [ -z "$part" ] || [ -z "$whole" ] || ! awk -v a="$part" -v b="$whole" 'BEGIN { exit !(a <= b) }'; then
            echo "FAIL $1: want ${key%%:*} ($part) <= ${key##*:} ($whole) in: $summary"; exit 1
        fi
    done
}
check_split unbatched
check_split batched
# The consumers on the producers' thread (--no-consumer-thread; the default gives them their own).
run one_thread "sent=2000 receipted=2000 consumed=2000 distinct=2000 duplicates=0 errors=0" \
    produce --num-messages 2000 --consume --size 100 --topics it-one-thread --no-consumer-thread
# Two producers and two Shared consumers on one topic.
run shared "sent=2000 receipted=2000 distinct=2000 errors=0" \
    produce --num-messages 2000 --consume --topics it-shared --producers 2 --consumers 2 \
    --subscription-type Shared --batch-max-messages 7
# Produce only (backlog), then `perf consume` reads all of it from Earliest.
run backlog "sent=2000 receipted=2000 errors=0" \
    produce --num-messages 2000 --size 200 --topics it-backlog
run consume "consumed=2000 errors=0" \
    consume --num-messages 2000 --topics it-backlog --subscription-position Earliest \
    --subscription late-sub

standalone_stop TERM
[ "$NEREUS_RC" -eq 0 ] || { echo "standalone exited $NEREUS_RC after SIGTERM, want 0:"; cat "$dir/broker.log"; exit 1; }

# journalLeaderCommits=true (off by default): io threads write the stream log's groups at a low
# rate. Every message still receipted and consumed, and /metrics shows leader commits.
printf 'journalLeaderCommits=true\n' >"$dir/leader.conf"
standalone_start "$nereus" "$dir/data-leader" "$dir/broker.log" --config "$dir/leader.conf" || exit 1
run leader "sent=1000 receipted=1000 consumed=1000 distinct=1000 duplicates=0 errors=0" \
    produce --num-messages 1000 --consume --size 64 --topics it-leader --no-batching --rate 2000
metrics=$(python3 -c 'import sys, urllib.request
print(urllib.request.urlopen("http://127.0.0.1:%s/metrics" % sys.argv[1], timeout=10).read().decode())' \
    "$NEREUS_HTTP_PORT")
leaders=$(grep -o '^nereus_log_leader_commits_total{[^}]*} [0-9]*' <<<"$metrics" | awk '{print $2}')
if [ -z "$leaders" ] || [ "$leaders" -lt 1 ]; then
    echo "FAIL leader: want nereus_log_leader_commits_total >= 1, got '$leaders'"; exit 1
fi
echo "ok leader commits: $leaders"
standalone_stop TERM
[ "$NEREUS_RC" -eq 0 ] || { echo "standalone (leader commits) exited $NEREUS_RC after SIGTERM, want 0:"; cat "$dir/broker.log"; exit 1; }
echo "ok"
