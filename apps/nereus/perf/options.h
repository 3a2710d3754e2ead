#pragma once

// Options of `nereus perf produce|consume` and their validation.
//
// add_perf_options() binds the flags to a CLI11 (sub)command; finalize() checks them after
// parsing and derives what the run needs (service endpoint, full topic names). Kept apart from
// the run so the parsing is unit-tested (tests/unit/perf/options_test.cc).
// Thread-safety: thread-compatible value types.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace CLI {
class App;
}  // namespace CLI

namespace nereus::app::perf {

enum class perf_mode { produce, consume };
enum class ack_mode { individual, cumulative };

struct endpoint {
    std::string host;
    std::uint16_t port = 6650;
    friend bool operator==(const endpoint&, const endpoint&) = default;
};

struct perf_options {
    perf_mode mode = perf_mode::produce;
    std::string service_url = "pulsar://127.0.0.1:6650";
    // One number N (topics perf-0 .. perf-(N-1)) or topic names.
    std::vector<std::string> topics = {"1"};
    double rate = 0;  // msg/s over all producers; 0 = as fast as the window allows
    std::uint32_t size = 1024;
    std::uint64_t num_messages = 0;  // total over all producers (produce) / consumers (consume)
    double time_seconds = 0;         // 0 = no time limit
    std::uint32_t max_pending = 1000;
    std::uint32_t batch_max_messages = 1000;  // 0 or --no-batching: every message its own SEND
    double batch_delay_ms = 1;
    std::uint32_t batch_max_bytes = 4 * 1024 * 1024;  // pulsar-perf's default
    bool no_batching = false;
    std::uint32_t producers = 1;  // per topic
    std::uint32_t consumers = 1;  // per topic
    std::string subscription = "perf-sub";
    std::string subscription_type = "Exclusive";
    std::string subscription_position = "Latest";
    std::string ack = "individual";
    std::uint32_t receiver_queue = 1000;
    // consume: the first FLOW only once every consumer is subscribed, so the consume rate is
    // delivery alone, not bounded by how fast thousands of subscriptions open.
    bool defer_flow = false;
    std::uint32_t ack_group_max = 1000;  // ids per ACK frame (individual)
    double ack_group_ms = 100;
    bool consume = false;         // produce: also consume in this process (end-to-end latency)
    bool consumer_thread = true;  // produce --consume: the consumers on a thread of their own
    double report_interval = 5;
    double drain_timeout = 30;
    std::string raw_baseline_dir;  // non-empty: measure the raw fdatasync ceiling there
    double raw_seconds = 2;

    // ---- derived by finalize() ----
    endpoint service;
    std::vector<std::string> topic_names;  // full names
    std::int32_t sub_type = 0;             // CommandSubscribe.SubType wire value
    std::int32_t initial_position = 0;     // Latest 0, Earliest 1
    ack_mode ack_kind = ack_mode::individual;

    [[nodiscard]] bool batching() const noexcept { return !no_batching && batch_max_messages > 1; }
};

// Adds every option of `mode` to `cmd` (bound to `o`).
void add_perf_options(CLI::App& cmd, perf_options& o, perf_mode mode);

// Validates `o` and fills its derived fields. Returns an error text on failure.
[[nodiscard]] std::optional<std::string> finalize(perf_options& o);

// "pulsar://host[:port]" (port 6650 by default).
[[nodiscard]] std::optional<endpoint> parse_service_url(std::string_view url);

// "name" and "tenant/ns/name" become "persistent://public/default/name" and
// "persistent://tenant/ns/name"; full names are kept.
[[nodiscard]] std::string full_topic_name(std::string_view name);

}  // namespace nereus::app::perf
