#pragma once

// standalone_process — a real `nereus standalone` child for the process-level tests: two free
// ports of 127.0.0.1 (the Pulsar protocol and the admin HTTP, never the default 8080), a data
// directory, extra flags, stdout and stderr appended to a log file. start() waits, bounded,
// until the broker answers a Pulsar CONNECT with CONNECTED and (unless turned off) the admin
// API answers GET /admin/v2/brokers/health with 200; stop() signals it by its PID and waits,
// bounded, then SIGKILLs. start() again restarts it on the same ports and data directory.
//
// Used by tests/integration/{standalone,admin_http,zk_*}_test.cc and tests/crash/
// broker_campaign.cc; the shell tests have the same in tests/support/standalone.sh.
// Library nereus_test_standalone (tests/support/CMakeLists.txt), which also carries the wire
// test driver (tests/unit/broker/support/wire_client.cc) it probes with.
//
// Ownership: owns the child process (SIGKILLed and reaped on destruction if still running).
// Thread-safety: thread-compatible (one test thread).

#include "support/child_process.h"
#include <chrono>
#include <cstdint>
#include <optional>
#include <signal.h>
#include <string>
#include <vector>

namespace nereus::test {

// A port of 127.0.0.1 that was free a moment ago (bound to port 0 and closed); 0 on failure.
std::uint16_t free_tcp_port();

// A bounded HTTP/1.1 GET on 127.0.0.1:port (Connection: close): {status, body}, status 0 when
// the connection failed or timed out.
struct http_reply {
    int status = 0;
    std::string body;
};
http_reply http_get(std::uint16_t port,
                    const std::string& path,
                    std::chrono::milliseconds timeout = std::chrono::seconds(5));
// The same with any method and a JSON body (Content-Type: application/json).
http_reply http_request(std::uint16_t port,
                        const std::string& method,
                        const std::string& path,
                        const std::string& body,
                        std::chrono::milliseconds timeout = std::chrono::seconds(5));

struct standalone_options {
    std::string binary;             // path of `nereus`
    std::string data_dir;           // --data-dir DIR (none when empty: e.g. given by --config)
    std::string log;                // stdout + stderr appended here (default: data_dir + ".log")
    std::vector<std::string> args;  // more flags after `standalone` (--metadata, --config, ...)
    bool wait_http = true;          // start() also waits for the admin health route
};

class standalone_process {
public:
    // Picks the two free ports; starts nothing.
    explicit standalone_process(standalone_options o);
    ~standalone_process() = default;  // the child_process SIGKILLs and reaps
    standalone_process(const standalone_process&) = delete;
    standalone_process& operator=(const standalone_process&) = delete;

    [[nodiscard]] std::uint16_t port() const { return port_; }
    [[nodiscard]] std::uint16_t http_port() const { return http_port_; }
    [[nodiscard]] std::string url() const;  // pulsar://127.0.0.1:port
    [[nodiscard]] pid_t pid() const { return child_ ? child_->pid() : -1; }
    [[nodiscard]] const std::string& log() const { return opts_.log; }

    // Picks two new free ports for the next spawn (a broker that must not be reached on the
    // old ones by clients of its previous life).
    void pick_ports();

    // spawn() + wait_ready(timeout).
    bool start(std::chrono::milliseconds timeout = std::chrono::seconds(30));
    // Spawns `binary standalone [--data-dir D] ARGS --bind 127.0.0.1 --port P --http-port H`
    // without waiting (a kill during recovery). False when it is running or the spawn failed.
    bool spawn();
    // Bounded wait until it is ready (see above); false when it exited (it is then reaped) or
    // `timeout` passed.
    bool wait_ready(std::chrono::milliseconds timeout = std::chrono::seconds(30));

    // Sends `sig` to the running child (SIGSTOP / SIGCONT for a paused owner, ...).
    void signal(int sig) const;
    // Sends `sig` (and SIGCONT, so a stopped child handles it), waits (bounded) for the exit
    // and reaps: its exit status, 128 + the signal that ended it, or -1 (not running, or still
    // running after `timeout`: then SIGKILLed and reaped).
    int stop(int sig = SIGTERM, std::chrono::milliseconds timeout = std::chrono::seconds(15));
    // SIGKILL and reap: 128 + SIGKILL, or -1 when not running.
    int kill9() { return stop(SIGKILL); }

private:
    bool ready() const;

    standalone_options opts_;
    std::uint16_t port_ = 0;
    std::uint16_t http_port_ = 0;
    std::optional<child_process> child_;
};

}  // namespace nereus::test
