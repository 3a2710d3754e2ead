# shellcheck shell=bash
# standalone.sh — sourced by the shell tests that run a real `nereus standalone` (the C++ tests
# have the same in standalone_process.h): two free ports of 127.0.0.1 (never the default 8080,
# so tests and brokers run side by side), a bounded wait until both ports answer, a stop by the
# broker's PID; and the pulsar-flex node_modules set-up of the JavaScript tests.
# Call the functions in the test's own shell (not in $(...)): they set these globals:
#   NEREUS_PORT NEREUS_HTTP_PORT  the ports (picked once; a restart keeps them)
#   NEREUS_PID                    the running broker's PID ("" when none)
#   NEREUS_RC                     the exit status seen by standalone_stop / standalone_wait
# The caller's EXIT trap calls standalone_kill (SIGKILL + reap; never `kill 0`).

NEREUS_PORT=${NEREUS_PORT:-}
NEREUS_HTTP_PORT=${NEREUS_HTTP_PORT:-}
NEREUS_PID=
NEREUS_RC=

# standalone_ports: picks NEREUS_PORT and NEREUS_HTTP_PORT, two distinct free ports.
standalone_ports() {
    read -r NEREUS_PORT NEREUS_HTTP_PORT < <(python3 -c 'import socket
a=socket.socket(); a.bind(("127.0.0.1",0)); b=socket.socket(); b.bind(("127.0.0.1",0))
print(a.getsockname()[1], b.getsockname()[1])')
}

# standalone_health: 0 when GET /admin/v2/brokers/health on NEREUS_HTTP_PORT answers 200.
standalone_health() (
    line=
    exec 3<>"/dev/tcp/127.0.0.1/$NEREUS_HTTP_PORT" || exit 1
    printf 'GET /admin/v2/brokers/health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n' >&3 || exit 1
    read -r -t 5 line <&3 || true
    [[ "$line" == "HTTP/1.1 200"* ]]
) 2>/dev/null

# standalone_start NEREUS DATA_DIR LOG [FLAGS...]: starts
#   NEREUS standalone --data-dir DATA_DIR --bind 127.0.0.1 --port P --http-port H FLAGS...
# in the background (stdout and stderr appended to LOG; ports picked if not yet), sets
# NEREUS_PID and waits, bounded (STANDALONE_WAIT_TRIES x 0.1 s, default 300), until the Pulsar
# port accepts and the admin health route answers 200. Returns 1 (the log printed) when the
# broker exited or did not come up; it is then SIGKILLed.
standalone_start() {
    local bin=$1 data=$2 log=$3
    shift 3
    [ -n "$NEREUS_PORT" ] || standalone_ports
    "$bin" standalone --data-dir "$data" --bind 127.0.0.1 --port "$NEREUS_PORT" \
        --http-port "$NEREUS_HTTP_PORT" "$@" >>"$log" 2>&1 &
    NEREUS_PID=$!
    local _
    for _ in $(seq 1 "${STANDALONE_WAIT_TRIES:-300}"); do
        if ! kill -0 "$NEREUS_PID" 2>/dev/null; then
            NEREUS_RC=0
            wait "$NEREUS_PID" 2>/dev/null || NEREUS_RC=$?
            NEREUS_PID=
            echo "standalone exited ($NEREUS_RC) before listening on $NEREUS_PORT/$NEREUS_HTTP_PORT:"
            cat "$log"
            return 1
        fi
        if (exec 3<>"/dev/tcp/127.0.0.1/$NEREUS_PORT") 2>/dev/null && standalone_health; then
            return 0
        fi
        sleep 0.1
    done
    echo "standalone did not listen on $NEREUS_PORT/$NEREUS_HTTP_PORT:"
    cat "$log"
    standalone_kill
    return 1
}

# standalone_wait: waits for the broker to exit (signalled by someone else), sets NEREUS_RC.
standalone_wait() {
    NEREUS_RC=0
    [ -n "$NEREUS_PID" ] || { NEREUS_RC=-1; return 0; }
    wait "$NEREUS_PID" 2>/dev/null || NEREUS_RC=$?
    NEREUS_PID=
}

# standalone_stop [SIGNAL]: sends SIGNAL (default TERM) to the broker, waits for its exit and
# sets NEREUS_RC (0 after a graceful stop, 128+n when signal n ended it).
standalone_stop() {
    [ -n "$NEREUS_PID" ] && kill "-${1:-TERM}" "$NEREUS_PID" 2>/dev/null
    standalone_wait
}

# standalone_kill: SIGKILL and reap the broker if it runs (for EXIT traps); always 0.
standalone_kill() {
    if [ -n "$NEREUS_PID" ]; then
        kill -KILL "$NEREUS_PID" 2>/dev/null || true
        wait "$NEREUS_PID" 2>/dev/null || true
        NEREUS_PID=
    fi
    return 0
}

# flex_node_modules FLEX_DIR WORK: the pulsar-flex node_modules in WORK — a link to
# FLEX_DIR/node_modules (installed by scripts/install-deps), else a bounded npm install of
# WORK/package.json.
flex_node_modules() {
    if [ -d "$1/node_modules/pulsar-flex" ]; then
        ln -s "$1/node_modules" "$2/node_modules"
    else
        (cd "$2" && timeout 120 npm install --no-audit --no-fund --silent)
    fi
}
