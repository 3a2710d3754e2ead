#!/usr/bin/env bash
# examples/orders_projection against a real `nereus standalone` on free ports (ctest label
# integration). Usage: self_check.sh path/to/nereus path/to/orders_projection pass|fault
#   pass   the self-check exits 0 with a PASS last line, and the two dumps (--dump-projection,
#          --dump-source: the source read back independently) are byte-identical
#   fault  with --debug-ack-before-apply (the projection acks a page before applying it, and is
#          SIGKILLed in between) the self-check must exit 1 with a FAIL last line, and the two
#          dumps must differ: the self-check can fail, and the dumps see it without it
# The broker is stopped by its PID (SIGTERM, then SIGKILL on exit if still running).
set -euo pipefail
source "$(dirname "$0")/../../support/standalone.sh"
nereus=$1
example=$2
mode=$3
dir=$(mktemp -d)
trap 'standalone_kill; rm -rf "$dir"' EXIT
standalone_start "$nereus" "$dir/data" "$dir/broker.log" || exit 1
url="pulsar://127.0.0.1:$NEREUS_PORT"
admin="http://127.0.0.1:$NEREUS_HTTP_PORT"

extra=()
[ "$mode" = fault ] && extra=(--debug-ack-before-apply --no-snapshot-restart)
rc=0
start=$(date +%s)
timeout 300 "$example" --self-check --url "$url" --admin-url "$admin" --work-dir "$dir/work" \
    "${extra[@]}" >"$dir/self_check.out" 2>"$dir/self_check.err" || rc=$?
echo "self-check ($mode) exit $rc after $(($(date +%s) - start)) s; its output:"
cat "$dir/self_check.out"
echo "(its stderr, last 15 lines:)"
tail -n 15 "$dir/self_check.err"
last=$(tail -n 1 "$dir/self_check.out")
topic=$(sed -n 's/^self-check: source topic \([^ ]*\) .*/\1/p' "$dir/self_check.out" | head -1)
[ -n "$topic" ] || { echo "FAIL: no source topic in the output"; tail -30 "$dir/broker.log"; exit 1; }

"$example" --dump-projection "$dir/work" >"$dir/projection.jsonl"
"$example" --dump-source "$url" "$topic" >"$dir/source.jsonl"
echo "dumps: projection $(wc -l <"$dir/projection.jsonl") lines $(sha256sum <"$dir/projection.jsonl" | cut -c1-16)," \
     "source $(wc -l <"$dir/source.jsonl") lines $(sha256sum <"$dir/source.jsonl" | cut -c1-16)"

case "$mode" in
pass)
    if [ "$rc" -ne 0 ]; then
        echo "FAIL: self-check exit $rc, want 0; the projection processes' last lines:"
        for f in "$dir"/work/projection-*.log; do [ -f "$f" ] && { echo "== $f"; tail -n 12 "$f"; }; done
        tail -30 "$dir/broker.log"
        exit 1
    fi
    [[ "$last" == "orders_projection self-check: PASS "* ]] || { echo "FAIL: last line is not PASS"; exit 1; }
    [ -s "$dir/source.jsonl" ] || { echo "FAIL: the source dump is empty"; exit 1; }
    if ! diff -q "$dir/projection.jsonl" "$dir/source.jsonl" >/dev/null; then
        echo "FAIL: the dumps differ although the self-check passed:"
        diff "$dir/projection.jsonl" "$dir/source.jsonl" | head -20
        exit 1
    fi
    # The last line's count is the dumps' line count.
    n=$(wc -l <"$dir/source.jsonl")
    grep -q "projection $n orders .* source $n orders" <<<"$last" || { echo "FAIL: counts in the last line are not $n"; exit 1; }
    ;;
fault)
    [ "$rc" -eq 1 ] || { echo "FAIL: self-check exit $rc with --debug-ack-before-apply, want 1"; exit 1; }
    [[ "$last" == "orders_projection self-check: FAIL "* ]] || { echo "FAIL: last line is not FAIL"; exit 1; }
    grep -q "^self-check: projection #1 (pid [0-9]*) SIGKILLed at CRASH-POINT" "$dir/self_check.out" ||
        { echo "FAIL: the fault run did not reach its SIGKILL (failed for another reason)"; exit 1; }
    if diff -q "$dir/projection.jsonl" "$dir/source.jsonl" >/dev/null; then
        echo "FAIL: the dumps are equal although updates were acked and never applied"
        exit 1
    fi
    echo "the dumps differ, as they must:"
    diff "$dir/projection.jsonl" "$dir/source.jsonl" | head -6 || true
    ;;
*) echo "mode must be pass or fault"; exit 2 ;;
esac

standalone_stop TERM
[ "$NEREUS_RC" -eq 0 ] || { echo "standalone exited $NEREUS_RC after SIGTERM, want 0:"; tail -30 "$dir/broker.log"; exit 1; }
echo "ok ($mode)"
