#include "nereus/admin/rate_sampler.h"

#include "nereus/base/thread_name.h"
#include "nereus/broker/subscription.h"

namespace nereus::admin {

namespace {

// Growth per second; 0 when the counter went backwards (reopened topic) or no time passed.
double per_second(std::uint64_t now, std::uint64_t before, double seconds) {
    if (now < before || seconds <= 0) {
        return 0;
    }
    return static_cast<double>(now - before) / seconds;
}

}  // namespace

rate_sampler::rate_sampler(broker::topic_registry& topics, std::chrono::milliseconds interval)
    : topics_(topics), interval_(interval) {}

rate_sampler::~rate_sampler() {
    stop();
}

void rate_sampler::start() {
    if (thread_.joinable()) {
        return;
    }
    {
        std::lock_guard lock(run_mu_);
        stopping_ = false;
    }
    thread_ = std::thread([this] {
        set_thread_name("nereus-rates");
        std::unique_lock lock(run_mu_);
        while (!run_cv_.wait_for(lock, interval_, [this] { return stopping_; })) {
            lock.unlock();
            sample_at(clock::now());
            lock.lock();
        }
    });
}

void rate_sampler::stop() {
    {
        std::lock_guard lock(run_mu_);
        stopping_ = true;
    }
    run_cv_.notify_all();
    if (thread_.joinable()) {
        thread_.join();
    }
}

void rate_sampler::sample_at(clock::time_point now) {
    // Read the broker's counters without holding mu_ (topic calls take topic locks).
    struct observed {
        counters in;
        std::map<std::string, std::pair<counters, std::uint64_t>> subs;  // out, redeliveries
    };
    std::map<std::string, observed> seen;
    for (const auto& t : topics_.open_topics()) {
        observed o;
        o.in = {t->messages_in(), t->bytes_in()};
        for (const auto& s : t->open_subscriptions()) {
            const auto st = s->stats();
            o.subs[s->name()] = {{st.messages_dispatched, st.bytes_dispatched}, st.redeliveries};
        }
        seen.emplace(t->full_name(), std::move(o));
    }

    std::lock_guard lock(mu_);
    std::map<std::string, topic_state> next;
    for (auto& [name, o] : seen) {
        topic_state ts;
        ts.at = now;
        ts.last_in = o.in;
        const auto prev = state_.find(name);
        const double dt =
            prev == state_.end() ? 0 : std::chrono::duration<double>(now - prev->second.at).count();
        if (prev != state_.end()) {
            ts.r.msg_in = per_second(o.in.msg, prev->second.last_in.msg, dt);
            ts.r.bytes_in = per_second(o.in.bytes, prev->second.last_in.bytes, dt);
        }
        for (const auto& [sub, seen_sub] : o.subs) {
            const auto& [c, redelivered] = seen_sub;
            sub_state ss;
            ss.last = c;
            ss.last_redeliver = redelivered;
            if (prev != state_.end()) {
                if (auto ps = prev->second.subs.find(sub); ps != prev->second.subs.end()) {
                    ss.r.msg_out = per_second(c.msg, ps->second.last.msg, dt);
                    ss.r.bytes_out = per_second(c.bytes, ps->second.last.bytes, dt);
                    ss.r.redeliver = per_second(redelivered, ps->second.last_redeliver, dt);
                }
            }
            ts.r.msg_out += ss.r.msg_out;
            ts.r.bytes_out += ss.r.bytes_out;
            ts.r.redeliver += ss.r.redeliver;
            ts.subs.emplace(sub, ss);
        }
        next.emplace(name, std::move(ts));
    }
    state_.swap(next);
}

rates rate_sampler::topic(const std::string& full_name) const {
    std::lock_guard lock(mu_);
    const auto it = state_.find(full_name);
    return it == state_.end() ? rates{} : it->second.r;
}

rates rate_sampler::subscription(const std::string& full_name, const std::string& sub) const {
    std::lock_guard lock(mu_);
    const auto it = state_.find(full_name);
    if (it == state_.end()) {
        return {};
    }
    const auto s = it->second.subs.find(sub);
    return s == it->second.subs.end() ? rates{} : s->second.r;
}

}  // namespace nereus::admin
