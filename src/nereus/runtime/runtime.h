#pragma once

// The subscriber runtime: handlers registered with declared specs, mounted into one runtime on
// one transport; dispatch into lanes, settlement, batches, publishing, seeking and the lifecycle.
//
//   runtime rt(ex, transport, clock);
//   rt.subscribe<json_codec<order>>(spec, handle_order);        // before start()
//   rt.on_startup(...); rt.after_startup(...); rt.on_shutdown(...); rt.after_shutdown(...);
//   co_await rt.start();                      // on_startup, subscribe all, drivers run,
//   after_startup
//   ...
//   auto report = co_await rt.shutdown(5s);   // on_shutdown, drain, broker shutdown,
//   after_shutdown
//
// Settlement: every delivery taken from a subscription's channel ends in exactly one count of
// subscription_stats: acked, nacked, dead_lettered, dropped, discarded (buffered before a seek),
// settle_failed (the broker did not confirm) or unsettled (left to the broker at shutdown).
// A count moves only when the broker confirmed: nothing is reported settled before that.
//
// Ownership: owns its subscribers, their drivers and the producer pool; holds the transport
// handle; borrows the clock (which must outlive it). Handlers, publishers and seekers must not
// outlive it. The runtime must outlive every coroutine it started: run the executor until
// shutdown() has completed.
// Thread-safety: strand-confined. Everything (drivers, lanes, handlers) runs on the one executor
// given at construction; a handler must not block it (post CPU-heavy work elsewhere).

#include "nereus/base/result.h"
#include "nereus/runtime/clock.h"
#include "nereus/runtime/codec.h"
#include "nereus/runtime/message.h"
#include "nereus/runtime/outcome.h"
#include "nereus/runtime/publisher.h"
#include "nereus/runtime/seeker.h"
#include "nereus/runtime/spec.h"
#include "nereus/runtime/transport.h"

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace nereus::runtime {

class runtime;

// Per subscription: what happened to every delivery taken from its channel.
struct subscription_stats {
    std::string subscription;
    std::uint64_t received = 0;  // taken from the channel
    std::uint64_t handled = 0;   // handler invocations (a batch counts each message)
    std::uint64_t acked = 0;
    std::uint64_t nacked = 0;  // retry / retry_after, confirmed nack
    std::uint64_t dead_lettered = 0;
    std::uint64_t dropped = 0;
    std::uint64_t discarded = 0;  // buffered before a seek, never handled
    std::uint64_t settle_failed = 0;
    std::uint64_t unsettled = 0;       // returned to the broker at shutdown
    std::uint64_t max_concurrent = 0;  // most handlers running at once
    std::uint64_t batches = 0;
    std::uint64_t max_batch = 0;

    [[nodiscard]] std::uint64_t accounted() const {
        return acked + nacked + dead_lettered + dropped + discarded + settle_failed + unsettled;
    }
};

struct shutdown_report {
    std::vector<subscription_stats> subscriptions;
    bool drained = true;  // every in-flight handler and settlement finished before the timeout
    // Each subscription accounts for every delivery it received, exactly once.
    [[nodiscard]] bool balanced() const {
        for (const auto& s : subscriptions) {
            if (s.accounted() != s.received)
                return false;
        }
        return true;
    }
};

// What a handler gets besides its payload.
class context {
public:
    context(runtime& rt, std::span<const message> msgs, settlement way_back)
        : rt_(&rt), msgs_(msgs), way_back_(std::move(way_back)) {}
    // The message (a batch handler: the first of its batch).
    [[nodiscard]] const message_data& msg() const { return *msgs_.front(); }
    [[nodiscard]] std::span<const message> messages() const { return msgs_; }
    [[nodiscard]] publisher publisher_handle() const;
    // The seeker of this delivery's subscription (the same way back as its settlement).
    [[nodiscard]] seeker seeker_handle() const { return seeker(way_back_); }
    [[nodiscard]] clock& runtime_clock() const;

private:
    runtime* rt_;
    std::span<const message> msgs_;
    settlement way_back_;
};

// A type-erased handler: nullopt when the payload did not decode.
using raw_handler =
    std::function<boost::asio::awaitable<std::optional<outcome>>(const message&, context&)>;
struct batch_verdict {
    outcome out = outcome::ack();
    std::vector<std::size_t> undecodable;  // indices settled by on_decode_failure instead
};
using raw_batch_handler =
    std::function<boost::asio::awaitable<batch_verdict>(std::span<const message>, context&)>;
using hook = std::function<void(runtime&)>;

namespace detail {
template <class T>
struct is_awaitable : std::false_type {};
template <class T, class E>
struct is_awaitable<boost::asio::awaitable<T, E>> : std::true_type {};
}  // namespace detail

class runtime {
public:
    enum class state : std::uint8_t { created, starting, started, stopping, stopped };

    runtime(boost::asio::any_io_executor ex, transport t, clock& clk);
    ~runtime();
    runtime(const runtime&) = delete;
    runtime& operator=(const runtime&) = delete;

    // Registers a handler `f(const T&, context&) -> outcome | awaitable<outcome>` for the
    // subscription `spec` declares; payloads are decoded with `Codec` (codec.h).
    template <class Codec, class F>
    result<void> subscribe(subscriber_spec spec, F f) {
        using T = typename Codec::value_type;
        return subscribe_raw(
            std::move(spec),
            [f = std::move(f)](const message& m,
                               context& ctx) -> boost::asio::awaitable<std::optional<outcome>> {
                auto v = Codec::decode(m->payload);
                if (!v)
                    co_return std::nullopt;
                using R = std::invoke_result_t<const F&, const T&, context&>;
                if constexpr (detail::is_awaitable<R>::value) {
                    co_return co_await f(*v, ctx);
                } else {
                    co_return f(*v, ctx);
                }
            });
    }
    // Registers a batch handler `f(std::vector<T>&, context&) -> outcome | awaitable<outcome>`;
    // spec.batch_size (> 0) bounds the batches the runtime assembles. The outcome settles every
    // message of the batch; messages that do not decode settle by on_decode_failure.
    template <class Codec, class F>
    result<void> subscribe_batch(subscriber_spec spec, F f) {
        using T = typename Codec::value_type;
        if (spec.batch_size == 0)
            spec.batch_size = 16;
        return subscribe_raw_batch(
            std::move(spec),
            [f = std::move(f)](std::span<const message> ms,
                               context& ctx) -> boost::asio::awaitable<batch_verdict> {
                batch_verdict v;
                std::vector<T> values;
                values.reserve(ms.size());
                for (std::size_t i = 0; i < ms.size(); ++i) {
                    auto d = Codec::decode(ms[i]->payload);
                    if (d) {
                        values.push_back(std::move(*d));
                    } else {
                        v.undecodable.push_back(i);
                    }
                }
                if (values.empty())
                    co_return v;
                using R = std::invoke_result_t<const F&, std::vector<T>&, context&>;
                if constexpr (detail::is_awaitable<R>::value) {
                    v.out = co_await f(values, ctx);
                } else {
                    v.out = f(values, ctx);
                }
                co_return v;
            });
    }
    result<void> subscribe_raw(subscriber_spec spec, raw_handler h);
    result<void> subscribe_raw_batch(subscriber_spec spec, raw_batch_handler h);

    // Lifecycle hooks, run on the executor in this order: on_startup (before any subscription
    // is opened), after_startup (all subscriptions open), on_shutdown (before the drain),
    // after_shutdown (after the broker connection closed).
    result<void> on_startup(hook h);
    result<void> after_startup(hook h);
    result<void> on_shutdown(hook h);
    result<void> after_shutdown(hook h);

    // Opens one consumer (and starts its driver) per registration. On an error (e.g.
    // errc::consumer_busy) the consumers opened so far are closed and the runtime is stopped.
    boost::asio::awaitable<result<void>> start();
    // on_shutdown; stop pulling; drain in-flight handlers and their settlements (bounded by
    // `drain_timeout` on the runtime's clock); close consumers, producers and the transport;
    // after_shutdown. Deliveries still in lanes, parked, held by retry_after or running past
    // the timeout are counted unsettled (the consumer close returns them to the broker).
    boost::asio::awaitable<shutdown_report> shutdown(clock::duration drain_timeout);

    [[nodiscard]] publisher publisher_handle() { return publisher(&pool_); }
    // The seeker of a registered subscription (errc::not_started before start()).
    [[nodiscard]] result<seeker> seeker_for(std::string_view subscription) const;
    [[nodiscard]] std::optional<subscription_stats> stats(std::string_view subscription) const;
    [[nodiscard]] std::vector<subscription_stats> all_stats() const;
    [[nodiscard]] std::size_t producers() const { return pool_.producers(); }
    [[nodiscard]] clock& runtime_clock() { return *clock_; }
    [[nodiscard]] state current_state() const { return state_; }
    [[nodiscard]] const boost::asio::any_io_executor& executor() const { return ex_; }

    struct subscriber;  // one registration (runtime.cc)

private:
    boost::asio::awaitable<void> close_all();

    boost::asio::any_io_executor ex_;
    transport transport_;
    clock* clock_;
    producer_pool pool_;
    std::vector<std::unique_ptr<subscriber>> subs_;
    std::vector<hook> on_startup_, after_startup_, on_shutdown_, after_shutdown_;
    state state_ = state::created;
};

inline publisher context::publisher_handle() const {
    return rt_->publisher_handle();
}
inline clock& context::runtime_clock() const {
    return rt_->runtime_clock();
}

}  // namespace nereus::runtime
