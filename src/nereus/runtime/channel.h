#pragma once

// The way between a subscription's driver (which owns the client consumer) and the runtime:
//  - deliveries go out through a channel of 16 (driver -> runtime);
//  - acknowledgements, nacks, dead-letters and seeks come back through a command channel of 16
//    (runtime/handlers -> driver), each with a reply the driver fills once the broker confirmed.
//
// stream     - the runtime's end of the deliveries (one per subscription);
// settlement - the way back a delivery carries to its driver (and a seeker uses).
// Both are exactly one shared_ptr to the channel they wrap (static_assert below).
//
// Ownership: the channel is shared by the driver, the stream and every settlement/seeker.
// Thread-safety: strand-confined to the runtime's executor.
// Durability: a settlement's result is *confirmed*: it completes after the driver applied the
// command to the consumer and the broker answered; errc::shut_down once the driver closed.

#include "nereus/base/result.h"
#include "nereus/runtime/message.h"

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/experimental/channel.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/system/error_code.hpp>
#include <cstdint>
#include <memory>
#include <optional>

namespace nereus::runtime {

// A message as the runtime receives it: `epoch` is the subscription's seek epoch when the driver
// took it from the consumer; a delivery from an older epoch is discarded, never handled.
struct delivery {
    message msg;
    std::uint64_t epoch = 0;
};

struct command_reply {
    boost::asio::steady_timer timer;
    result<void> value;
    bool done = false;
};

struct command {
    enum class kind : std::uint8_t { ack, nack, dead_letter, seek };
    kind what = kind::ack;
    message msg;
    position pos{};
    command_reply* reply = nullptr;  // in the requester's coroutine frame; filled by the driver
};

class subscription_channel {
public:
    static constexpr std::size_t capacity = 16;
    using delivery_channel =
        boost::asio::experimental::channel<void(boost::system::error_code, delivery)>;
    using command_channel =
        boost::asio::experimental::channel<void(boost::system::error_code, command)>;

    explicit subscription_channel(const boost::asio::any_io_executor& ex)
        : deliveries(ex, capacity), commands(ex, capacity) {}

    delivery_channel deliveries;
    command_channel commands;
    std::uint64_t epoch = 0;  // incremented by every confirmed seek
    bool stopping = false;    // no more deliveries (drain started)
    bool closed = false;      // the driver closed the consumer: every command is refused

    // Sends `c` to the driver and waits for its confirmation.
    boost::asio::awaitable<result<void>> request(command c);
};

class stream {
public:
    explicit stream(std::shared_ptr<subscription_channel> ch) : ch_(std::move(ch)) {}
    // The next delivery; nullopt once the subscription stops.
    boost::asio::awaitable<std::optional<delivery>> next();
    // A delivery already in the channel, without waiting.
    std::optional<delivery> try_next();
    [[nodiscard]] const std::shared_ptr<subscription_channel>& channel() const { return ch_; }

private:
    std::shared_ptr<subscription_channel> ch_;
};

class settlement {
public:
    explicit settlement(std::shared_ptr<subscription_channel> ch) : ch_(std::move(ch)) {}
    boost::asio::awaitable<result<void>> ack(message m);
    boost::asio::awaitable<result<void>> nack(message m);
    boost::asio::awaitable<result<void>> dead_letter(message m);
    boost::asio::awaitable<result<void>> seek(position p);
    [[nodiscard]] std::uint64_t epoch() const { return ch_->epoch; }
    [[nodiscard]] bool closed() const { return ch_->closed; }

private:
    std::shared_ptr<subscription_channel> ch_;
};

static_assert(sizeof(stream) == sizeof(std::shared_ptr<subscription_channel>),
              "a subscription's stream is exactly the channel it wraps");
static_assert(sizeof(settlement) == sizeof(std::shared_ptr<subscription_channel>),
              "a delivery's settlement is exactly the channel it wraps");

}  // namespace nereus::runtime
