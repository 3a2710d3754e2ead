#!/usr/bin/env bash
# `nereus standalone --config FILE`: a bad file stops the start with the file and line named
# (exit 2, nothing created); a good file's ports are used; a flag given on the command line
# overrides the file; a busy admin port stops the start. Every broker started here is stopped by its PID.
# Usage: config_test.sh path/to/nereus
set -euo pipefail
nereus=$1
dir=$(mktemp -d)
pid=
cleanup() {
    if [ -n "$pid" ]; then kill -KILL "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
    rm -rf "$dir"
}
trap cleanup EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# 1. A bad file: exit 2, the line named, no data directory created.
printf 'dataDir=%s\nbrokerServicePort=7000\nbrokerServicePrt=1\n' "$dir/bad-data" >"$dir/bad.conf"
set +e
"$nereus" standalone --config "$dir/bad.conf" >"$dir/bad.log" 2>&1
rc=$?
set -e
[ "$rc" -eq 2 ] || { echo "bad config: exit $rc, want 2"; cat "$dir/bad.log"; exit 1; }
grep -q "bad.conf:3: unknown key 'brokerServicePrt'" "$dir/bad.log" || { echo "bad config: no line in the error:"; cat "$dir/bad.log"; exit 1; }
[ ! -e "$dir/bad-data" ] || { echo "bad config: the data directory was created"; exit 1; }

# 2. A missing file.
set +e
"$nereus" standalone --config "$dir/missing.conf" >"$dir/missing.log" 2>&1
rc=$?
set -e
[ "$rc" -eq 2 ] && grep -q "missing.conf: cannot be read" "$dir/missing.log" || { echo "missing config: exit $rc"; cat "$dir/missing.log"; exit 1; }

# Starts the broker with the given arguments and waits until $1 (a port) accepts connections.
start_and_wait() {
    local want=$1; shift
    "$nereus" standalone "$@" >"$dir/run.log" 2>&1 &
    pid=$!
    for _ in $(seq 1 100); do
        if (exec 3<>"/dev/tcp/127.0.0.1/$want") 2>/dev/null; then return 0; fi
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    echo "standalone did not listen on $want:"; cat "$dir/run.log"; return 1
}
stop() {
    kill -TERM "$pid"
    set +e; wait "$pid"; local rc=$?; set -e
    pid=
    [ "$rc" -eq 0 ] || { echo "exit $rc after SIGTERM"; cat "$dir/run.log"; exit 1; }
}

# 3. The file's ports and data directory are used.
p1=$(free_port); h1=$(free_port)
printf '# test\ndataDir=%s\nbrokerServicePort=%s\nwebServicePort=%s\n' "$dir/data" "$p1" "$h1" >"$dir/good.conf"
start_and_wait "$p1" --config "$dir/good.conf"
[ -d "$dir/data" ] || { echo "dataDir from the file not used"; exit 1; }
stop

# 4. A flag overrides the file.
p2=$(free_port)
start_and_wait "$p2" --config "$dir/good.conf" --port "$p2"
stop

# 5. A busy admin port stops the start (as in Pulsar), with the port named.
busy=$(free_port); p3=$(free_port)
python3 -c 'import socket,sys,time; s=socket.socket(); s.bind(("127.0.0.1",int(sys.argv[1]))); s.listen(); time.sleep(60)' "$busy" &
holder=$!
for _ in $(seq 1 50); do (exec 3<>"/dev/tcp/127.0.0.1/$busy") 2>/dev/null && break; sleep 0.1; done
set +e
timeout 30 "$nereus" standalone --data-dir "$dir/data" --port "$p3" --http-port "$busy" >"$dir/busy.log" 2>&1
rc=$?
set -e
kill "$holder" 2>/dev/null || true
wait "$holder" 2>/dev/null || true
[ "$rc" -eq 1 ] || { echo "busy admin port: exit $rc, want 1"; cat "$dir/busy.log"; exit 1; }
grep -q "cannot serve the admin REST API on 127.0.0.1:$busy" "$dir/busy.log" || { echo "busy admin port: no message"; cat "$dir/busy.log"; exit 1; }
echo "ok"
