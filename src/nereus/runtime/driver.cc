#include "nereus/runtime/driver.h"

#include "nereus/runtime/errc.h"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace nereus::runtime {

namespace asio = boost::asio;
namespace {
constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);
}

driver::driver(std::shared_ptr<subscription_channel> ch,
               std::unique_ptr<consumer_port> consumer,
               producer_pool& pool,
               const subscriber_spec& spec)
    : ch_(std::move(ch)),
      consumer_(std::move(consumer)),
      pool_(&pool),
      spec_(&spec),
      done_(ch_->commands.get_executor()) {
    done_.expires_at(asio::steady_timer::time_point::max());
}

asio::awaitable<void> driver::run() {
    running_ = 2;
    auto ex = co_await asio::this_coro::executor;
    asio::co_spawn(ex, pump(), asio::detached);
    co_await commands();
    if (running_ > 0) {  // wait for the pump
        co_await done_.async_wait(use_tuple);
    }
}

asio::awaitable<void> driver::pump() {
    while (!ch_->stopping) {
        auto m = co_await consumer_->receive();
        if (!m || ch_->stopping) {
            break;  // not handed out: the consumer's close returns it to the broker
        }
        const std::uint64_t epoch = ch_->epoch;
        delivery d{std::move(*m), epoch};
        const boost::system::error_code none;
        auto [ec] = co_await ch_->deliveries.async_send(none, std::move(d), use_tuple);
        if (ec) {
            break;
        }
        ++pumped_;
    }
    if (--running_ == 0) {
        done_.cancel();
    }
}

asio::awaitable<void> driver::commands() {
    for (;;) {
        auto [ec, c] = co_await ch_->commands.async_receive(use_tuple);
        if (ec) {
            break;
        }
        // (No co_await inside ?: — g++ 12 destroys temporaries of such an expression twice.)
        result<void> r = error(errc::shut_down);
        if (!ch_->closed) {
            r = co_await apply(c);
        }
        c.reply->value = r;
        c.reply->done = true;
        c.reply->timer.cancel();
    }
    if (--running_ == 0) {
        done_.cancel();
    }
}

asio::awaitable<result<void>> driver::apply(const command& c) {
    switch (c.what) {
        case command::kind::ack:
            co_return co_await consumer_->ack(c.msg);
        case command::kind::nack:
            co_return co_await consumer_->nack(c.msg);
        case command::kind::dead_letter: {
            outgoing out;
            out.payload = c.msg->payload;
            out.key = c.msg->key;
            out.properties = c.msg->properties;
            out.properties.emplace_back("REAL_TOPIC", c.msg->topic);
            out.properties.emplace_back("ORIGIN_MESSAGE_ID", c.msg->id.to_string());
            auto sent =
                co_await pool_->send(dead_letter_topic(*spec_, c.msg->topic), std::move(out));
            if (!sent) {
                co_return error(sent.error());  // not acknowledged: it stays unsettled
            }
            co_return co_await consumer_->ack(c.msg);
        }
        case command::kind::seek: {
            auto r = co_await consumer_->seek(c.pos);
            if (r) {
                ++ch_->epoch;
            }
            co_return r;
        }
    }
    co_return error(errc::unsupported);
}

void driver::stop_deliveries() {
    ch_->stopping = true;
    consumer_->interrupt();
    ch_->deliveries.cancel();
}

asio::awaitable<void> driver::close() {
    stop_deliveries();
    ch_->closed = true;
    ch_->commands.close();  // queued commands are still received, and refused (closed)
    if (running_ > 0) {
        co_await done_.async_wait(use_tuple);
    }
    co_await consumer_->close();
}

}  // namespace nereus::runtime
