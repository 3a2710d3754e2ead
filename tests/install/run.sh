#!/usr/bin/env bash
# CI stage `install`: the client as another project uses it.
#   1. `cmake --install <build-dir>` into a fresh prefix (the main build, reused: no rebuild);
#   2. configures and builds tests/install (find_package(nereus) + nereus::client) against it;
#   3. builds the same program with `pkg-config --cflags --libs nereus-client`;
#   4. runs both against a `nereus standalone` started here on free ports (127.0.0.1), stopped
#      by its PID: each produces one message, consumes it and acknowledges it; and the example
#      service (examples/orders), built against the installed nereus::runtime, in --self-check.
# Usage: tests/install/run.sh [build-dir]   (default: build)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
source "$root/tests/support/standalone.sh"
build=$(cd "${1:-$root/build}" && pwd)
# Under the build dir (inside CCACHE_BASEDIR), so ccache hits across runs and clean clones.
work="$build/install-check"
rm -rf "$work"
mkdir -p "$work"
data=$(mktemp -d)
trap 'standalone_kill; rm -rf "$data"' EXIT
t0=$(date +%s)
step() { echo "install: [$(($(date +%s) - t0)) s] $*"; }

step "cmake --install $build --prefix $work/prefix"
cmake --install "$build" --prefix "$work/prefix" >"$work/install.log" || { cat "$work/install.log"; exit 1; }

step "configure + build tests/install with find_package(nereus) (client; runtime: the example)"
launcher=()
if command -v ccache >/dev/null 2>&1; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache); fi
cmake -S "$root/tests/install" -B "$work/app" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_PREFIX_PATH="$work/prefix" "${launcher[@]}" >"$work/configure.log" || { cat "$work/configure.log"; exit 1; }
cmake --build "$work/app" -j 2

step "build the same program with pkg-config nereus-client"
pc=$(find "$work/prefix" -name nereus-client.pc | head -1)
[ -n "$pc" ] || { echo "FAIL: no nereus-client.pc installed"; exit 1; }
export PKG_CONFIG_PATH="$(dirname "$pc")${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
cc=(${CXX:-g++})
if command -v ccache >/dev/null 2>&1; then cc=(ccache "${cc[@]}"); fi
# Compile and link apart: ccache caches compilations only.
# shellcheck disable=SC2046
"${cc[@]}" -O1 -c -o "$work/hello_pc.o" "$root/tests/install/hello_nereus.cc" \
    $(pkg-config --cflags nereus-client)
# shellcheck disable=SC2046
${CXX:-g++} -o "$work/hello_pc" "$work/hello_pc.o" $(pkg-config --libs nereus-client)

standalone_ports
port=$NEREUS_PORT
step "run against nereus standalone on 127.0.0.1:$port (http $NEREUS_HTTP_PORT)"
standalone_start "$build/nereus" "$data/data" "$data/broker.log" || { echo "FAIL: standalone"; exit 1; }

check() {
    local bin=$1 topic=$2 out
    out=$(timeout 60 "$bin" "pulsar://127.0.0.1:$port" "$topic") || {
        echo "FAIL: $bin exited non-zero: $out"; exit 1; }
    echo "$out"
    grep -qx "received: hello from $topic" <<<"$out" || { echo "FAIL: nothing received"; exit 1; }
    grep -q '^acknowledged ' <<<"$out" || { echo "FAIL: no confirmed ack"; exit 1; }
}
check "$work/app/hello_nereus" install-cmake
check "$work/hello_pc" install-pkgconfig
if [ -x "$work/app/orders_service" ]; then
    out=$(timeout 120 "$work/app/orders_service" --url "pulsar://127.0.0.1:$port" --orders 5 \
        --self-check --timeout-s 90 --prefix install) || { echo "$out"; echo "FAIL: orders_service (nereus::runtime)"; exit 1; }
    grep '^self-check: ok' <<<"$out" || { echo "$out"; echo "FAIL: orders_service self-check"; exit 1; }
else
    echo "FAIL: orders_service (nereus::runtime) was not built"; exit 1
fi

standalone_stop TERM
[ "$NEREUS_RC" -eq 0 ] || { echo "FAIL: standalone exited $NEREUS_RC after SIGTERM"; cat "$data/broker.log"; exit 1; }
step "ok"
