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
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace nereus::bench {

struct plan {
    std::string mode = "seq";  // seq | concurrent | rate
    std::uint64_t count = 10000;
    std::size_t size = 100;
    std::uint32_t window = 1000;
    double rate = 0;       // msg/s, rate mode
    double duration = 0;   // s, rate mode (count = rate * duration)
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
inline std::uint64_t intended_ns(const plan& p,
                                 std::uint64_t start,
                                 std::uint64_t i,
                                 std::uint64_t now) {
    return p.rate > 0 ? start + static_cast<std::uint64_t>(static_cast<double>(i) * 1e9 / p.rate)
                      : now;
}

// The windowed producer loop the Redis and RabbitMQ generators share: at most p.window
// publishes in flight, each sent once its intended time has come (rate mode), its intended
// time kept by index so that its receipt's latency is measured from it. Receipts complete the
// oldest publish in flight (both systems answer in publish order). Sets st.start_ns.
class send_window {
public:
    send_window(const plan& p, producer_stats& st)
        : p_(p), st_(st), buf_(p.size, 'x'), sent_at_(p.count) {
        st_.start_ns = now_ns();
        deadline_ = st_.start_ns + static_cast<std::uint64_t>(p.timeout * 1e9);
    }

    [[nodiscard]] bool done() const { return st_.acked >= p_.count; }
    [[nodiscard]] bool timed_out(std::uint64_t now) const { return now > deadline_; }
    [[nodiscard]] bool nothing_in_flight() const { return sent_ == st_.acked; }

    // Publishes every message that may go at `now` (window open, intended time reached): fills
    // the payload buffer, then calls publish(buffer), which returns "" or an error text (then
    // returned at once, that message not counted as sent).
    template <class Publish>
    std::string send_due(std::uint64_t now, Publish&& publish) {
        while (sent_ < p_.count && sent_ - st_.acked < p_.window) {
            const auto t = intended_ns(p_, st_.start_ns, sent_, now);
            if (t > now) {
                break;
            }
            fill_payload(buf_.data(), p_.size, sent_, t);
            if (std::string e = publish(buf_); !e.empty()) {
                return e;
            }
            sent_at_[sent_] = t;
            ++sent_;
        }
        return {};
    }

    // Rate mode with the window open: nanoseconds until the next send is due (0: now).
    // Otherwise nullopt: wait for a receipt.
    [[nodiscard]] std::optional<std::uint64_t> next_send_in() const {
        if (sent_ < p_.count && sent_ - st_.acked < p_.window && p_.rate > 0) {
            const auto now = now_ns();
            const auto t = intended_ns(p_, st_.start_ns, sent_, now);
            return t > now ? t - now : 0;
        }
        return std::nullopt;
    }

    // The oldest publish in flight got its receipt at `now`: latency recorded, acked.
    void receipt(std::uint64_t now) {
        st_.publish.add_ns(now - sent_at_[st_.acked]);
        ++st_.acked;
    }
    // The oldest publish in flight got an error answer: counted as an error, not a latency.
    void failed() {
        ++st_.errors;
        ++st_.acked;
    }

private:
    const plan& p_;
    producer_stats& st_;
    std::vector<char> buf_;
    std::vector<std::uint64_t> sent_at_;
    std::uint64_t sent_ = 0;
    std::uint64_t deadline_ = 0;
};

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
    virtual std::string run(const plan& p,
                            consumer_stats& st,
                            const std::function<void()>& ready) = 0;
};

struct system_hooks {
    std::function<std::string(const plan&)> setup;  // create stream/queue/subscription
    std::function<std::unique_ptr<producer>(const plan&)> make_producer;
    std::function<std::unique_ptr<consumer>(const plan&)> make_consumer;
};

// Parses argv (--mode --count --size --window --rate --duration --timeout --port --name
// --label), runs the plan and prints one `result:` line. Returns the exit status.
int run_main(int argc, char** argv, const system_hooks& hooks);

// The same for a system whose producer and consumer are constructed from the plan.
template <class Producer, class Consumer>
int run_main(int argc, char** argv, std::function<std::string(const plan&)> setup) {
    system_hooks h;
    h.setup = std::move(setup);
    h.make_producer = [](const plan& p) {
        return std::make_unique<Producer>(p);
    };
    h.make_consumer = [](const plan& p) {
        return std::make_unique<Consumer>(p);
    };
    return run_main(argc, argv, h);
}

}  // namespace nereus::bench
