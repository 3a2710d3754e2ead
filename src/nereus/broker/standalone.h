#pragma once

// `nereus standalone`: a single-node broker over the ledger backend in one data directory,
// serving until SIGTERM or SIGINT, then stopping gracefully (in-flight appends answered,
// clients closed, ledgers and stores closed).
// Thread-safety: call once, from the main thread, before other threads exist.

#include <cstdint>
#include <string>

namespace nereus::broker {

struct standalone_options {
    std::string data_dir = "./data";
    std::string bind_address = "127.0.0.1";
    std::uint16_t port = 6650;
    std::uint16_t http_port = 8080;  // admin REST: not served yet (next slice)
    unsigned io_threads = 4;
};

// Returns the process exit status: 0 after a graceful stop, 1 when the broker cannot start.
int run_standalone(const standalone_options& options);

}  // namespace nereus::broker
