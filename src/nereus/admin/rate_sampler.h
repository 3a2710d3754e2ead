#pragma once

// Message and byte rates as Pulsar's stats report them (msgRateIn, msgThroughputIn,
// msgRateOut, msgThroughputOut, msgRateRedeliver), per topic and per subscription. Like
// Pulsar's broker, the counters of every open topic are sampled once per interval
// (`statsUpdateFrequencyInSecs`, default 60 s); a rate is the counter's growth between the
// last two samples divided by the time between them. A topic or subscription sampled fewer
// than two times reports 0, as does one whose counters restarted (the topic was closed and
// reopened) since the last sample.
//
// Ownership: borrows the topic registry (it must outlive the sampler); owns the sampling
//   thread (started by start(), joined by stop() or the destructor).
// Thread-safety: thread-safe.
// Durability: none (in memory, read-only towards the broker).

#include "nereus/broker/topic.h"

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <thread>

namespace nereus::admin {

struct rates {
    double msg_in = 0;     // messages per second made durable (msgRateIn)
    double bytes_in = 0;   // bytes per second made durable (msgThroughputIn)
    double msg_out = 0;    // messages per second dispatched (msgRateOut)
    double bytes_out = 0;  // bytes per second dispatched (msgThroughputOut)
    double redeliver = 0;  // messages per second put back for redelivery (msgRateRedeliver)
};

class rate_sampler {
public:
    using clock = std::chrono::steady_clock;

    rate_sampler(broker::topic_registry& topics, std::chrono::milliseconds interval);
    rate_sampler(const rate_sampler&) = delete;
    rate_sampler& operator=(const rate_sampler&) = delete;
    ~rate_sampler();

    // Samples every interval on a thread of its own until stop(). Idempotent.
    void start();
    void stop();

    // Takes one sample of every open topic as of `now` (the thread calls it with
    // clock::now(); tests pass their own times). Topics no longer open are forgotten.
    void sample_at(clock::time_point now);

    // The rates from the last two samples (all 0 when unknown). A topic's out and redeliver
    // rates sum its subscriptions'.
    rates topic(const std::string& full_name) const;
    rates subscription(const std::string& full_name, const std::string& sub) const;

private:
    struct counters {
        std::uint64_t msg = 0;
        std::uint64_t bytes = 0;
    };
    struct sub_state {
        counters last;
        std::uint64_t last_redeliver = 0;
        rates r;
    };
    struct topic_state {
        clock::time_point at;
        counters last_in;
        rates r;
        std::map<std::string, sub_state> subs;
    };

    broker::topic_registry& topics_;
    const std::chrono::milliseconds interval_;

    mutable std::mutex mu_;
    std::map<std::string, topic_state> state_;  // guarded by mu_

    std::mutex run_mu_;
    std::condition_variable run_cv_;
    bool stopping_ = false;  // guarded by run_mu_
    std::thread thread_;     // touched by start()/stop() only
};

}  // namespace nereus::admin
