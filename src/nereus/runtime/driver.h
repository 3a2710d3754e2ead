#pragma once

// The driver of one subscription: the only owner of its client consumer. It passes each message
// on through the subscription's channel of 16 and takes back the acknowledgements, nacks,
// dead-letters and seeks that deliveries (and seekers) send it, applies them to the consumer and
// replies once the broker confirmed.
//
// A dead-letter is a publish of the message (payload, key, properties, plus REAL_TOPIC and
// ORIGIN_MESSAGE_ID as Pulsar's client adds them) to the subscription's dead-letter topic
// through the runtime's producer pool; once its receipt is back the original is acknowledged.
//
// A seek increments the channel's epoch once the consumer confirmed it: deliveries taken from
// the consumer before it are discarded by the runtime (never handled).
//
// Ownership: owns the consumer_port; shares the channel. run() returns after stop() once both of
// its loops ended and the consumer is closed. Thread-safety: strand-confined.

#include "nereus/runtime/channel.h"
#include "nereus/runtime/ports.h"
#include "nereus/runtime/publisher.h"
#include "nereus/runtime/spec.h"

#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>
#include <cstdint>
#include <memory>

namespace nereus::runtime {

class driver {
public:
    driver(std::shared_ptr<subscription_channel> ch,
           std::unique_ptr<consumer_port> consumer,
           producer_pool& pool,
           const subscriber_spec& spec);

    // Runs the pump (consumer -> channel) and the command loop until close().
    boost::asio::awaitable<void> run();
    // Stops handing out deliveries (drain begins); commands are still applied.
    void stop_deliveries();
    // Refuses further commands, replies errc::shut_down to any still queued, closes the consumer
    // and waits until run() has finished.
    boost::asio::awaitable<void> close();

    // Messages handed into the channel (taken from the consumer) so far.
    [[nodiscard]] std::uint64_t pumped() const { return pumped_; }

private:
    boost::asio::awaitable<void> pump();
    boost::asio::awaitable<void> commands();
    boost::asio::awaitable<result<void>> apply(const command& c);

    std::shared_ptr<subscription_channel> ch_;
    std::unique_ptr<consumer_port> consumer_;
    producer_pool* pool_;
    const subscriber_spec* spec_;
    boost::asio::steady_timer done_;
    int running_ = 0;
    std::uint64_t pumped_ = 0;
};

}  // namespace nereus::runtime
