#!/usr/bin/env bash
# `nereus storage verify` passes a healthy data dir written by a real appending process that
# is then killed, then names the file and offset of a flipped byte in checkpointed segment data
# and exits 1.
set -euo pipefail
nereus=$1
child=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

# Runs the appending child until it has confirmed more than $1 appends, then SIGKILLs it.
# Fails if it does not get there in 60 s: killed earlier (a loaded machine), the second run
# might not have recovered yet, and the flipped byte would not be checkpointed data.
run_child() {
    # Emptied first: the background job's own redirection happens asynchronously, and until it
    # does the file would still hold the previous run's confirmations (the second run was once
    # killed at once, before its recovery, by counting the first run's lines).
    : > "$dir/acks.txt"
    "$child" "$dir/streams" >> "$dir/acks.txt" 2>/dev/null &
    local pid=$! reached=0
    for _ in $(seq 1 600); do
        if [ "$(wc -l < "$dir/acks.txt")" -gt "$1" ]; then reached=1; break; fi
        sleep 0.1
    done
    kill -9 "$pid"
    wait "$pid" 2>/dev/null || true
    [ "$reached" -eq 1 ] || { echo "the appending child confirmed <= $1 appends in 60 s"; exit 1; }
}

run_child 100
# A second run's open recovers, checkpoints (syncing the first run's segment data) and starts a
# fresh journal, so the first run's records are no longer covered by the journal: damage there
# is corruption, not a torn tail that recovery would refill.
run_child 10

"$nereus" storage verify --data-dir "$dir" > "$dir/ok.txt"
grep -q "verify: .* ok" "$dir/ok.txt" || { cat "$dir/ok.txt"; exit 1; }

# Flip one byte inside the first record (offset 0) of the first stream's first segment.
# The glob, not `ls | head -1`: with ~100 segments ls writes more than a pipe buffer, head
# exits after the first line, and ls's SIGPIPE failed the pipeline (pipefail) now and then.
segs=("$dir"/streams/streams/*/*.log)
seg=${segs[0]}
[ -s "$seg" ] || { echo "no segment data in $seg"; exit 1; }
printf '\xff' | dd of="$seg" bs=1 seek=40 conv=notrunc 2>/dev/null
set +e
"$nereus" storage verify --data-dir "$dir" > "$dir/bad.txt"
rc=$?
set -e
cat "$dir/bad.txt"
[ "$rc" -eq 1 ] || { echo "verify exited $rc on a corrupt segment, want 1"; exit 1; }
grep -q "CORRUPT: stream=.* file=$seg .*offset=0" "$dir/bad.txt" || { echo "corruption not located"; exit 1; }
echo "ok"
