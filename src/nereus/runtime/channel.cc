#include "nereus/runtime/channel.h"

#include "nereus/runtime/errc.h"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace nereus::runtime {

namespace asio = boost::asio;
constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);

asio::awaitable<result<void>> subscription_channel::request(command c) {
    if (closed) {
        co_return error(errc::shut_down);
    }
    command_reply reply{asio::steady_timer(commands.get_executor()), {}, false};
    reply.timer.expires_at(asio::steady_timer::time_point::max());
    c.reply = &reply;
    const boost::system::error_code none;
    auto [ec] = co_await commands.async_send(none, std::move(c), use_tuple);
    if (ec) {
        co_return error(errc::shut_down);
    }
    if (!reply.done) {
        co_await reply.timer.async_wait(use_tuple);
    }
    co_return reply.value;
}

asio::awaitable<std::optional<delivery>> stream::next() {
    if (ch_->stopping) {
        co_return std::nullopt;
    }
    auto [ec, d] = co_await ch_->deliveries.async_receive(use_tuple);
    if (ec) {
        co_return std::nullopt;
    }
    co_return std::move(d);
}

std::optional<delivery> stream::try_next() {
    std::optional<delivery> out;
    if (ch_->stopping) {
        return out;
    }
    ch_->deliveries.try_receive([&](boost::system::error_code ec, delivery d) {
        if (!ec)
            out = std::move(d);
    });
    return out;
}

// Each command is built as a named local before the co_await: g++ 12 destroys a braced
// temporary inside a co_await expression twice (the client's headers note the same bug).
asio::awaitable<result<void>> settlement::ack(message m) {
    command c{command::kind::ack, std::move(m), {}, nullptr};
    co_return co_await ch_->request(std::move(c));
}
asio::awaitable<result<void>> settlement::nack(message m) {
    command c{command::kind::nack, std::move(m), {}, nullptr};
    co_return co_await ch_->request(std::move(c));
}
asio::awaitable<result<void>> settlement::dead_letter(message m) {
    command c{command::kind::dead_letter, std::move(m), {}, nullptr};
    co_return co_await ch_->request(std::move(c));
}
asio::awaitable<result<void>> settlement::seek(position p) {
    command c{command::kind::seek, nullptr, p, nullptr};
    co_return co_await ch_->request(std::move(c));
}

}  // namespace nereus::runtime
