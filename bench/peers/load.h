#pragma once

// The shared workload of the peer load generators (bench/run drives them; see bench/README.md).
//
// One process drives one system: a producer keeps at most `window` publishes in flight, each
// one completed by the system's durable receipt (Redis XADD reply, RabbitMQ publisher confirm,
// NATS PubAck), and a consumer on its own connection reads the durable subscription and acks.
// Modes: `seq` (produce everything, then consume it), `concurrent` (producer and consumer at
// once, two threads) and `rate` (a fixed send rate paced by schedule, consumer concurrent).
// Every payload starts with the message index and its intended send time (CLOCK_MONOTONIC ns),
// so the consumer checks every message off once and measures end-to-end latency.
// Latencies are kept in arrays sized up front: nothing is allocated per message by this code
// (the client libraries may).
// Thread-safety: a producer and a consumer each belong to one thread; `run` joins them.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace nereus::bench {

struct plan {
    std::string mode = "seq";  // seq | concurrent | rate
    std::uint64_t count = 10000;
    std::size_t size = 100;
    std::uint32_t window = 1000;
    double rate = 0;      // msg/s, rate mode
    double duration = 0;  // s, rate mode (count = rate * duration)
    double timeout = 120;  // s, a run that takes longer fails
    std::string host = "127.0.0.1";
    int port = 0;
    std::string name = "bench";  // stream / queue / subject of this run
    std::string label;           // system label printed in the result line
};

std::uint64_t now_ns();

// Microsecond latencies, preallocated; percentile() sorts a copy at the end.
class latencies {
public:
    explicit latencies(std::uint64_t capacity) { us_.reserve(capacity); }
    void add_ns(std::uint64_t ns) {
        if (us_.size() < us_.capacity()) {
            us_.push_back(static_cast<std::uint32_t>(ns / 1000));
        }
    }
    [[nodiscard]] double percentile_ms(double q) const;
    [[nodiscard]] std::size_t size() const { return us_.size(); }

private:
    std::vector<std::uint32_t> us_;
};

struct producer_stats {
    explicit producer_stats(std::uint64_t n) : publish(n) {}
    std::uint64_t start_ns = 0;
    std::uint64_t last_ack_ns = 0;
    std::uint64_t acked = 0;
    std::uint64_t errors = 0;
    latencies publish;
};

struct consumer_stats {
    explicit consumer_stats(std::uint64_t n) : e2e(n), seen(n, false) {}
    std::uint64_t start_ns = 0;
    std::uint64_t first_ns = 0;
    std::uint64_t last_ns = 0;
    std::uint64_t consumed = 0;
    std::uint64_t distinct = 0;
    std::uint64_t duplicates = 0;
    std::uint64_t foreign = 0;
    std::uint64_t errors = 0;
    latencies e2e;
    std::vector<bool> seen;
    // Called for each delivered payload (before its ack is sent).
    void on_message(const void* data, std::size_t n, std::uint64_t now);
};

// The payload: index, intended send time, then filler up to plan.size bytes.
void fill_payload(char* buf, std::size_t size, std::uint64_t index, std::uint64_t intended_ns);

// Intended send time of message i (rate mode: start + i/rate; otherwise `now`).
inline std::uint64_t intended_ns(const plan& p, std::uint64_t start, std::uint64_t i,
                                 std::uint64_t now) {
    return p.rate > 0 ? start + static_cast<std::uint64_t>(static_cast<double>(i) * 1e9 / p.rate)
                      : now;
}

class producer {
public:
    virtual ~producer() = default;
    // Publishes p.count messages; returns an error text or "".
    virtual std::string run(const plan& p, producer_stats& st) = 0;
};

class consumer {
public:
    virtual ~consumer() = default;
    // Marks itself ready (subscribed) through `ready`, then consumes until p.count distinct
    // messages were seen or p.timeout passed; returns an error text or "".
    virtual std::string run(const plan& p, consumer_stats& st, const std::function<void()>& ready) = 0;
};

struct system_hooks {
    std::function<std::string(const plan&)> setup;  // create stream/queue/subscription
    std::function<std::unique_ptr<producer>(const plan&)> make_producer;
    std::function<std::unique_ptr<consumer>(const plan&)> make_consumer;
};

// Parses argv (--mode --count --size --window --rate --duration --timeout --port --name
// --label), runs the plan and prints one `result:` line. Returns the exit status.
int run_main(int argc, char** argv, const system_hooks& hooks);

}  // namespace nereus::bench
