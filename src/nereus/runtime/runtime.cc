#include "nereus/runtime/runtime.h"

#include "nereus/runtime/driver.h"
#include "nereus/runtime/errc.h"
#include "nereus/runtime/logger.h"

#include <algorithm>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <deque>
#include <exception>
#include <functional>
#include <list>

namespace nereus::runtime {

namespace asio = boost::asio;
namespace {
constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);
}

// One delivery taken from the channel and not yet accounted for.
struct tracked {
    delivery d;
    bool accounted = false;
};
using ticket = std::list<tracked>::iterator;

// A lane: a queue of deliveries and how many of them may run at once. An ordered lane
// (sequential, by_key) blocks after a retry until the retried message comes back.
struct lane {
    std::deque<ticket> queue;
    std::size_t active = 0;
    std::size_t limit = 1;
    std::optional<message_id> blocked_on;
    std::string blocked_topic;
    std::uint64_t blocked_epoch = 0;
};

struct runtime::subscriber {
    runtime* rt = nullptr;
    subscriber_spec spec;
    raw_handler handler;
    raw_batch_handler batch_handler;
    std::shared_ptr<subscription_channel> ch;
    std::unique_ptr<driver> drv;
    std::vector<lane> lanes;
    std::list<tracked> live;  // taken, not yet accounted (or accounted late, after a timeout)
    std::size_t live_unaccounted = 0;
    std::size_t running = 0;  // handlers running now
    std::size_t cap = 16;
    bool stopping = false;
    bool pull_done = false;
    subscription_stats st;
    std::unique_ptr<asio::steady_timer> wake;  // the pull loop waits here at capacity
    std::unique_ptr<asio::steady_timer> idle;  // shutdown waits here for the drain

    [[nodiscard]] bool blocking_lanes() const {
        return spec.batch_size == 0 && spec.dispatch.of != lanes::kind::workers &&
               spec.type != subscription_type::shared;
    }
    [[nodiscard]] std::size_t parked() const {
        std::size_t n = 0;
        for (const auto& l : lanes) {
            if (l.blocked_on)
                n += l.queue.size();
        }
        return n;
    }
    void poke() {
        wake->cancel();
        if (live_unaccounted == 0 || stopping)
            idle->cancel();
    }
    ticket take(delivery d) {
        ++st.received;
        ++live_unaccounted;
        live.push_back(tracked{std::move(d), false});
        return std::prev(live.end());
    }
    // Moves `t` into exactly one final count (once; a late second call is ignored) and forgets it.
    void account(ticket t, std::uint64_t subscription_stats::*count) {
        if (!t->accounted) {
            t->accounted = true;
            ++(st.*count);
            --live_unaccounted;
        }
        live.erase(t);
        poke();
    }
    lane& lane_of(const message& m) {
        if (spec.dispatch.of != lanes::kind::by_key || lanes.size() == 1)
            return lanes.front();
        const std::size_t h = std::hash<std::string>{}(m->key.value_or(std::string()));
        return lanes[h % lanes.size()];
    }
    void unblock_if_stale(lane& l) const {
        if (l.blocked_on && l.blocked_epoch != ch->epoch)
            l.blocked_on.reset();
    }
};

namespace {

using subscriber = runtime::subscriber;

asio::awaitable<void> run_one(subscriber& s, lane& l, ticket t);
asio::awaitable<void> run_batch(subscriber& s, lane& l, std::vector<ticket> batch);

void kick(subscriber& s, lane& l) {
    s.unblock_if_stale(l);
    while (!s.stopping && !l.blocked_on && l.active < l.limit && !l.queue.empty()) {
        ++l.active;
        if (s.spec.batch_size == 0) {
            ticket t = l.queue.front();
            l.queue.pop_front();
            asio::co_spawn(s.rt->executor(), run_one(s, l, t), asio::detached);
        } else {
            std::vector<ticket> batch;
            while (!l.queue.empty() && batch.size() < s.spec.batch_size) {
                batch.push_back(l.queue.front());
                l.queue.pop_front();
            }
            asio::co_spawn(s.rt->executor(), run_batch(s, l, std::move(batch)), asio::detached);
        }
    }
}

// Puts a delivery into its lane; a redelivery a blocked lane waits for goes first and unblocks
// it.
void route(subscriber& s, ticket t) {
    lane& l = s.lane_of(t->d.msg);
    s.unblock_if_stale(l);
    const auto& m = *t->d.msg;
    if (l.blocked_on && *l.blocked_on == m.id && l.blocked_topic == m.topic) {
        l.blocked_on.reset();
        l.queue.push_front(t);
    } else {
        l.queue.push_back(t);
    }
    kick(s, l);
}

// Records the confirmed (or failed) settlement of `t`.
void settled(subscriber& s,
             ticket t,
             const result<void>& r,
             std::uint64_t subscription_stats::*ok,
             outcome::kind what) {
    if (!r) {
        NEREUS_LOG(runtime_log(), warn, "settle failed sub={} id={} outcome={}: {}",
                   s.spec.subscription, t->d.msg->id.to_string(), to_string(what),
                   r.error().message());
    }
    s.account(t, r ? ok : &subscription_stats::settle_failed);
}

// Settles one delivery by `o`, confirmed; moves it into exactly one count. (No lambdas and no
// const locals in this coroutine: g++ 12 destroyed a const shared_ptr local early here.)
asio::awaitable<void> settle(subscriber& s, lane& l, ticket t, outcome o) {
    settlement way(s.ch);
    message m = t->d.msg;
    result<void> r;
    switch (o.what()) {
        case outcome::kind::ack:
            r = co_await way.ack(m);
            settled(s, t, r, &subscription_stats::acked, o.what());
            co_return;
        case outcome::kind::drop:
            r = co_await way.ack(m);
            settled(s, t, r, &subscription_stats::dropped, o.what());
            co_return;
        case outcome::kind::dead_letter:
            r = co_await way.dead_letter(m);
            settled(s, t, r, &subscription_stats::dead_lettered, o.what());
            co_return;
        case outcome::kind::retry_after:
            if (!co_await s.rt->runtime_clock().sleep(o.delay(), s.rt)) {
                s.account(t, &subscription_stats::unsettled);  // shutdown ended the hold
                co_return;
            }
            [[fallthrough]];
        case outcome::kind::retry:
            break;
    }
    if (s.spec.dead_letter && m->redelivery_count >= s.spec.dead_letter->max_redeliveries) {
        r = co_await way.dead_letter(m);
        settled(s, t, r, &subscription_stats::dead_lettered, outcome::kind::dead_letter);
        co_return;
    }
    bool block = s.blocking_lanes() && !t->accounted;
    if (block) {  // before the nack: the redelivery may arrive while it is in flight
        l.blocked_on = m->id;
        l.blocked_topic = m->topic;
        l.blocked_epoch = s.ch->epoch;
    }
    r = co_await way.nack(m);
    if (!r && block)
        l.blocked_on.reset();
    settled(s, t, r, &subscription_stats::nacked, outcome::kind::retry);
}

void finish(subscriber& s, lane& l) {
    --l.active;
    kick(s, l);
    // A redelivery may already be queued behind the block that settle() just set.
    if (l.blocked_on) {
        for (auto it = l.queue.begin(); it != l.queue.end(); ++it) {
            const auto& m = *(*it)->d.msg;
            if (m.id == *l.blocked_on && m.topic == l.blocked_topic) {
                ticket t = *it;
                l.queue.erase(it);
                l.blocked_on.reset();
                l.queue.push_front(t);
                kick(s, l);
                break;
            }
        }
    }
    s.poke();
}

asio::awaitable<void> run_one(subscriber& s, lane& l, ticket t) {
    if (t->d.epoch != s.ch->epoch) {
        s.account(t, &subscription_stats::discarded);
        finish(s, l);
        co_return;
    }
    ++s.running;
    s.st.max_concurrent = std::max<std::uint64_t>(s.st.max_concurrent, s.running);
    ++s.st.handled;
    message m = t->d.msg;
    context ctx(*s.rt, std::span<const message>(&m, 1), settlement(s.ch));
    std::optional<outcome> out;
    bool threw = false;
    try {
        out = co_await s.handler(m, ctx);
    } catch (const std::exception& e) {
        threw = true;
        NEREUS_LOG(runtime_log(), warn, "handler threw sub={} id={}: {}", s.spec.subscription,
                   m->id.to_string(), e.what());
    } catch (...) {
        threw = true;
    }
    --s.running;
    outcome o = threw ? s.spec.on_exception : out ? *out : s.spec.on_decode_failure;
    if (!t->accounted && o.what() == outcome::kind::retry_after && !s.blocking_lanes()) {
        // An unordered lane does not wait out the hold: the worker moves on; the delivery
        // stays in flight (and counts against max_in_flight) until its nack.
        asio::co_spawn(s.rt->executor(), settle(s, l, t, o), asio::detached);
    } else if (!t->accounted) {
        co_await settle(s, l, t, o);
    } else {
        s.live.erase(t);  // counted unsettled at a shutdown timeout; nothing is sent now
    }
    finish(s, l);
}

asio::awaitable<void> run_batch(subscriber& s, lane& l, std::vector<ticket> batch) {
    if (s.spec.batch_linger.count() > 0 && batch.size() < s.spec.batch_size) {
        co_await s.rt->runtime_clock().sleep(s.spec.batch_linger, s.rt);
        while (!s.stopping && !l.queue.empty() && batch.size() < s.spec.batch_size) {
            batch.push_back(l.queue.front());
            l.queue.pop_front();
        }
    }
    std::vector<ticket> current;
    std::vector<message> msgs;
    for (ticket t : batch) {
        if (t->accounted) {
            s.live.erase(t);
        } else if (t->d.epoch != s.ch->epoch) {
            s.account(t, &subscription_stats::discarded);
        } else {
            current.push_back(t);
            msgs.push_back(t->d.msg);
        }
    }
    if (!current.empty()) {
        ++s.st.batches;
        s.st.max_batch = std::max<std::uint64_t>(s.st.max_batch, current.size());
        s.st.handled += current.size();
        ++s.running;
        s.st.max_concurrent = std::max<std::uint64_t>(s.st.max_concurrent, s.running);
        context ctx(*s.rt, msgs, settlement(s.ch));
        batch_verdict v;
        bool threw = false;
        try {
            v = co_await s.batch_handler(msgs, ctx);
        } catch (...) {
            threw = true;
        }
        --s.running;
        for (std::size_t i = 0; i < current.size(); ++i) {
            bool bad =
                std::find(v.undecodable.begin(), v.undecodable.end(), i) != v.undecodable.end();
            outcome o = threw ? s.spec.on_exception : bad ? s.spec.on_decode_failure : v.out;
            if (current[i]->accounted) {
                s.live.erase(current[i]);
            } else {
                co_await settle(s, l, current[i], o);
            }
        }
    }
    finish(s, l);
}

asio::awaitable<void> pull(subscriber& s) {
    stream in(s.ch);
    for (;;) {
        while (!s.stopping &&
               (s.live_unaccounted - s.parked() >= s.cap || s.parked() >= s.spec.max_parked)) {
            s.wake->expires_at(asio::steady_timer::time_point::max());
            co_await s.wake->async_wait(use_tuple);
        }
        if (s.stopping)
            break;
        auto d = co_await in.next();
        if (!d)
            break;
        std::vector<ticket> got{s.take(std::move(*d))};
        // Whatever else is already buffered, up to the capacity: fuller batches, fewer wakeups.
        while (!s.stopping && s.live_unaccounted - s.parked() < s.cap) {
            auto more = in.try_next();
            if (!more)
                break;
            got.push_back(s.take(std::move(*more)));
        }
        for (ticket t : got) {
            route(s, t);
        }
    }
    s.pull_done = true;
    s.poke();
}

}  // namespace

runtime::runtime(asio::any_io_executor ex, transport t, clock& clk)
    : ex_(std::move(ex)), transport_(std::move(t)), clock_(&clk), pool_(ex_, transport_) {}

runtime::~runtime() = default;

result<void> runtime::subscribe_raw(subscriber_spec spec, raw_handler h) {
    if (state_ != state::created) {
        return error(state_ == state::stopped ? errc::shut_down : errc::already_started);
    }
    NEREUS_TRY(validate(spec));
    if (spec.batch_size != 0)
        return error(errc::invalid_spec);
    auto s = std::make_unique<subscriber>();
    s->spec = std::move(spec);
    s->handler = std::move(h);
    subs_.push_back(std::move(s));
    return {};
}

result<void> runtime::subscribe_raw_batch(subscriber_spec spec, raw_batch_handler h) {
    if (state_ != state::created) {
        return error(state_ == state::stopped ? errc::shut_down : errc::already_started);
    }
    NEREUS_TRY(validate(spec));
    if (spec.batch_size == 0)
        return error(errc::invalid_spec);
    auto s = std::make_unique<subscriber>();
    s->spec = std::move(spec);
    s->batch_handler = std::move(h);
    subs_.push_back(std::move(s));
    return {};
}

namespace {
result<void> add_hook(std::vector<hook>& to, hook h, runtime::state st) {
    if (st != runtime::state::created)
        return error(errc::already_started);
    to.push_back(std::move(h));
    return {};
}
}  // namespace

result<void> runtime::on_startup(hook h) {
    return add_hook(on_startup_, std::move(h), state_);
}
result<void> runtime::after_startup(hook h) {
    return add_hook(after_startup_, std::move(h), state_);
}
result<void> runtime::on_shutdown(hook h) {
    return add_hook(on_shutdown_, std::move(h), state_);
}
result<void> runtime::after_shutdown(hook h) {
    return add_hook(after_shutdown_, std::move(h), state_);
}

asio::awaitable<result<void>> runtime::start() {
    if (state_ != state::created) {
        co_return error(state_ == state::stopped ? errc::shut_down : errc::already_started);
    }
    state_ = state::starting;
    for (auto& h : on_startup_)
        h(*this);
    pool_.start();
    std::size_t n = 0;
    for (auto& sp : subs_) {
        auto& s = *sp;
        s.rt = this;
        s.st.subscription = s.spec.subscription;
        std::string name = s.spec.consumer_name.empty()
                               ? s.spec.subscription + "-" + std::to_string(n)
                               : s.spec.consumer_name;
        ++n;
        auto consumer = co_await transport_.subscribe(ex_, s.spec, std::move(name));
        if (!consumer) {
            NEREUS_LOG(runtime_log(), warn, "subscribe failed sub={}: {}", s.spec.subscription,
                       consumer.error().message());
            co_await close_all();
            co_await pool_.close();
            co_await transport_.shutdown();
            state_ = state::stopped;
            co_return error(consumer.error());
        }
        const std::size_t per_lane =
            s.spec.dispatch.of == lanes::kind::workers ? s.spec.dispatch.n : 1;
        const std::size_t n_lanes =
            s.spec.dispatch.of == lanes::kind::by_key ? s.spec.dispatch.n : 1;
        s.lanes.resize(n_lanes);
        for (auto& l : s.lanes)
            l.limit = per_lane;
        const std::size_t batch = std::max<std::size_t>(1, s.spec.batch_size);
        s.cap = s.spec.max_in_flight != 0 ? s.spec.max_in_flight
                                          : std::max<std::size_t>(subscription_channel::capacity,
                                                                  per_lane * n_lanes * batch);
        s.ch = std::make_shared<subscription_channel>(ex_);
        s.wake = std::make_unique<asio::steady_timer>(ex_);
        s.idle = std::make_unique<asio::steady_timer>(ex_);
        s.drv = std::make_unique<driver>(s.ch, std::move(*consumer), pool_, s.spec);
        asio::co_spawn(ex_, s.drv->run(), asio::detached);
        asio::co_spawn(ex_, pull(s), asio::detached);
    }
    state_ = state::started;
    for (auto& h : after_startup_)
        h(*this);
    co_return result<void>{};
}

asio::awaitable<void> runtime::close_all() {
    for (auto& s : subs_) {
        if (s->drv) {
            s->stopping = true;
            if (s->wake)
                s->wake->cancel();
            co_await s->drv->close();
        }
    }
}

asio::awaitable<shutdown_report> runtime::shutdown(clock::duration drain_timeout) {
    shutdown_report report;
    if (state_ != state::started) {
        report.subscriptions = all_stats();
        co_return report;
    }
    state_ = state::stopping;
    for (auto& h : on_shutdown_)
        h(*this);
    // Stop pulling. What is queued in lanes (not started) goes back to the broker unsettled;
    // handlers already running finish, and so do their settlements.
    for (auto& sp : subs_) {
        auto& s = *sp;
        s.stopping = true;
        s.drv->stop_deliveries();
        s.wake->cancel();
        for (auto& l : s.lanes) {
            l.blocked_on.reset();
            while (!l.queue.empty()) {
                ticket t = l.queue.front();
                l.queue.pop_front();
                s.account(t, &subscription_stats::unsettled);
            }
        }
    }
    // The runtime's own waits end now: retry_after holds (a held retry is unsettled) and batch
    // lingers. Handlers' own sleeps are theirs (bounded by the drain timeout).
    clock_->cancel(this);
    auto timed_out = std::make_shared<bool>(false);
    auto any_busy = [this] {
        for (auto& s : subs_) {
            if (s->live_unaccounted != 0 || !s->pull_done)
                return true;
        }
        return false;
    };
    if (any_busy()) {
        asio::co_spawn(
            ex_,
            [](nereus::runtime::clock& c, nereus::runtime::clock::duration d,
               std::shared_ptr<bool> flag, std::vector<asio::steady_timer*> idles,
               const void* owner) -> asio::awaitable<void> {
                if (co_await c.sleep(d, owner)) {
                    *flag = true;
                    for (auto* i : idles)
                        i->cancel();
                }
            }(
                                      *clock_, drain_timeout, timed_out,
                                      [this] {
                                          std::vector<asio::steady_timer*> v;
                                          for (auto& s : subs_)
                                              v.push_back(s->idle.get());
                                          return v;
                                      }(),
                                      static_cast<const void*>(this)),
            asio::detached);
        for (auto& sp : subs_) {
            auto& s = *sp;
            while ((s.live_unaccounted != 0 || !s.pull_done) && !*timed_out) {
                s.idle->expires_at(asio::steady_timer::time_point::max());
                co_await s.idle->async_wait(use_tuple);
            }
        }
    }
    report.drained = !*timed_out;
    // Past the timeout: whatever is still in flight is left to the broker; a late settlement
    // is refused (the driver is closed below) and counts nothing more.
    for (auto& sp : subs_) {
        auto& s = *sp;
        for (auto it = s.live.begin(); it != s.live.end(); ++it) {
            if (!it->accounted) {
                it->accounted = true;
                ++s.st.unsettled;
                --s.live_unaccounted;
            }
        }
    }
    co_await close_all();
    co_await pool_.close();
    co_await transport_.shutdown();
    clock_->cancel(this);  // the drain timer, if it is still pending
    state_ = state::stopped;
    for (auto& h : after_shutdown_)
        h(*this);
    report.subscriptions = all_stats();
    co_return report;
}

result<seeker> runtime::seeker_for(std::string_view subscription) const {
    if (state_ == state::stopped)
        return error(errc::shut_down);
    for (const auto& s : subs_) {
        if (s->spec.subscription == subscription) {
            if (!s->ch)
                return error(errc::not_started);
            return seeker(settlement(s->ch));
        }
    }
    return error(errc::invalid_spec);
}

std::optional<subscription_stats> runtime::stats(std::string_view subscription) const {
    for (const auto& s : subs_) {
        if (s->spec.subscription == subscription)
            return s->st;
    }
    return std::nullopt;
}

std::vector<subscription_stats> runtime::all_stats() const {
    std::vector<subscription_stats> v;
    for (const auto& s : subs_)
        v.push_back(s->st);
    return v;
}

}  // namespace nereus::runtime
