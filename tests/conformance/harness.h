#pragma once

// The conformance suite's harness: an `env` is the transport under test (the in-process test
// transport, or a live `nereus standalone` the suite starts itself), and an `app` is one runtime
// mounted on a connection of it. The behaviours (conformance_test.cc) are written once against
// this interface, with the same assertions for every env; feature flags name only what one
// transport alone can do.
//
// Time: on the test env nothing moves unless the test says so — wait_for() runs every ready
// handler and then checks, advance(d) moves the virtual clock. On a live env wait_for() runs the
// event loop until the condition holds (bounded), advance(d) lets `d` of real time pass.
// Ownership: an env outlives its apps. Thread-safety: one test thread.

#include "nereus/runtime/runtime.h"

#include <boost/asio/co_spawn.hpp>
#include <chrono>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace nereus::runtime::conformance {

using namespace std::chrono_literals;
namespace asio = boost::asio;
using clock_type = ::nereus::runtime::clock;

enum class feature {
    fault_injection,    // the test transport can make the broker refuse to confirm an ack
    broker_inspection,  // the test transport can show a subscription's backlog directly
    live_server,  // a real server: Shared pick, Key_Shared hash ranges, ack timeout, partitions
};

class env {
public:
    virtual ~env() = default;
    [[nodiscard]] virtual std::string name() const = 0;
    [[nodiscard]] virtual asio::any_io_executor executor() = 0;
    [[nodiscard]] virtual clock_type& clock() = 0;
    [[nodiscard]] virtual transport connect() = 0;
    // Runs until `done()` holds (bounded); returns done().
    virtual bool wait_for(const std::function<bool()>& done) = 0;
    // Runs for a while with nothing to wait for (to check that nothing more happens).
    virtual void settle() = 0;
    // Lets `d` pass on the runtime's clock, running what becomes ready.
    virtual void advance(clock_type::duration d) = 0;
    [[nodiscard]] virtual bool has(feature f) const = 0;
    // Only on an env with broker_inspection: unacknowledged messages of a subscription.
    [[nodiscard]] virtual std::size_t backlog(const std::string& topic, const std::string& sub) {
        (void)topic;
        (void)sub;
        return 0;
    }
    virtual void fail_next_acks(std::size_t n) { (void)n; }
    // Only on an env with live_server: creates `topic` (full name) with `partitions` partitions
    // through the admin API; true when the broker confirmed it.
    virtual bool create_partitioned_topic(const std::string& topic, int partitions) {
        (void)topic;
        (void)partitions;
        return false;
    }

    // A topic name unique to this test.
    std::string topic(const std::string& base) {
        return "persistent://public/default/" + prefix_ + "-" + base;
    }
    [[nodiscard]] const std::string& prefix() const { return prefix_; }
    void set_prefix(std::string p) { prefix_ = std::move(p); }

    // Starts `a`; the returned slot fills when it completes.
    template <class T>
    std::shared_ptr<std::optional<T>> spawn(asio::awaitable<T> a) {
        auto out = std::make_shared<std::optional<T>>();
        asio::co_spawn(executor(), std::move(a), [out](std::exception_ptr e, T v) {
            if (e)
                std::rethrow_exception(e);
            *out = std::move(v);
        });
        return out;
    }
    // Runs `a` to completion (bounded); nullopt when it did not complete.
    template <class T>
    std::optional<T> run(asio::awaitable<T> a) {
        auto out = spawn(std::move(a));
        wait_for([&] { return out->has_value(); });
        return *out;
    }

private:
    std::string prefix_ = "t";
};

// What a handler saw of one delivery.
struct seen {
    std::string payload;
    std::optional<std::string> key;
    std::uint32_t redelivery = 0;
    std::string topic;
    message_id id;
    std::vector<property> properties;
    clock_type::time_point at{0};
};

struct recorder {
    std::vector<seen> got;
    void add(const message_data& m, clock_type::time_point at) {
        got.push_back(seen{m.payload, m.key, m.redelivery_count, m.topic, m.id, m.properties, at});
    }
    [[nodiscard]] std::vector<std::string> payloads() const {
        std::vector<std::string> v;
        for (const auto& s : got)
            v.push_back(s.payload);
        return v;
    }
    [[nodiscard]] std::size_t count(const std::string& p) const {
        std::size_t n = 0;
        for (const auto& s : got)
            n += s.payload == p ? 1 : 0;
        return n;
    }
};

// One runtime on a connection of the env.
class app {
public:
    explicit app(env& e)
        : e_(&e), rt_(std::make_unique<runtime>(e.executor(), e.connect(), e.clock())) {}
    app(const app&) = delete;
    app& operator=(const app&) = delete;
    ~app() {
        if (rt_->current_state() == runtime::state::started)
            stop();
    }

    runtime& rt() { return *rt_; }
    runtime* operator->() { return rt_.get(); }

    result<void> start() {
        auto r = e_->run(rt_->start());
        if (!r)
            return error(std::make_error_code(std::errc::timed_out));
        return *r;
    }
    shutdown_report stop(clock_type::duration drain = 5s) {
        auto r = e_->run(rt_->shutdown(drain));
        return r.value_or(shutdown_report{});
    }
    result<message_id> publish(const std::string& topic,
                               std::string payload,
                               std::optional<std::string> key = {},
                               std::vector<property> props = {}) {
        outgoing m{std::move(payload), std::move(key), std::move(props)};
        auto r = e_->run(rt_->publisher_handle().publish(topic, std::move(m)));
        if (!r)
            return error(std::make_error_code(std::errc::timed_out));
        return *r;
    }
    // Registers a raw handler that records each delivery and settles it by `decide`.
    result<void> record(subscriber_spec spec,
                        recorder& rec,
                        std::function<outcome(const message_data&)> decide = {}) {
        clock_type* clk = &e_->clock();
        return rt_->subscribe<raw_codec>(std::move(spec), [&rec, clk, decide = std::move(decide)](
                                                              const std::string&, context& ctx) {
            rec.add(ctx.msg(), clk->now());
            return decide ? decide(ctx.msg()) : outcome::ack();
        });
    }

private:
    env* e_;
    std::unique_ptr<runtime> rt_;
};

inline subscriber_spec spec_for(const std::string& topic,
                                const std::string& sub,
                                subscription_type type = subscription_type::shared) {
    subscriber_spec s;
    s.topics = topic_selector::one(topic);
    s.subscription = sub;
    s.type = type;
    s.initial = initial_position::earliest;
    return s;
}

// The envs the suite is instantiated for (conformance_main / the test file registers them).
std::unique_ptr<env> make_env(const std::string& name);

}  // namespace nereus::runtime::conformance
