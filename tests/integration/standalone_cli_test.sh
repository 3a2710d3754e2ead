#!/usr/bin/env bash
# `nereus standalone` starts, listens on --port, and exits 0 on SIGTERM (graceful stop).
# Usage: standalone_cli_test.sh path/to/nereus
set -euo pipefail
nereus=$1
dir=$(mktemp -d)
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
port=$(free_port)
http_port=$(free_port)
"$nereus" standalone --data-dir "$dir/data" --port "$port" --http-port "$http_port" >"$dir/log" 2>&1 &
pid=$!
trap 'kill -KILL "$pid" 2>/dev/null || true; rm -rf "$dir"' EXIT
up=0
for _ in $(seq 1 100); do
    if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then up=1; break; fi
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
done
[ "$up" -eq 1 ] || { echo "standalone did not listen on $port:"; cat "$dir/log"; exit 1; }
kill -TERM "$pid"
set +e
wait "$pid"
rc=$?
set -e
[ "$rc" -eq 0 ] || { echo "standalone exited $rc after SIGTERM, want 0:"; cat "$dir/log"; exit 1; }
grep -q "broker stopped" "$dir/log" || { echo "no graceful stop in the log:"; cat "$dir/log"; exit 1; }
echo "ok"
