#pragma once

// What a transport gives the runtime: one consumer per subscription and one producer per topic.
// The Pulsar binding implements them over nereus::client; the test transport (NEREUS_TESTING)
// over its in-process broker. The runtime never talks to a consumer directly: the subscription's
// driver owns it (driver.h).
//
// Ownership: a consumer_port is owned by its driver, a producer_port by the runtime's producer
// pool. Thread-safety: strand-confined to the runtime's executor.
// Durability: ack/nack/send return only once the broker confirmed them (ack receipt, send
// receipt) — *confirmed*, never merely queued.

#include "nereus/base/result.h"
#include "nereus/runtime/message.h"

#include <boost/asio/awaitable.hpp>

namespace nereus::runtime {

class consumer_port {
public:
    virtual ~consumer_port() = default;
    // The next message of the subscription. errc::shut_down once interrupted or closed.
    virtual boost::asio::awaitable<result<message>> receive() = 0;
    // Makes a pending receive() (and every later one) return errc::shut_down.
    virtual void interrupt() = 0;
    // Confirmed acknowledgement / negative acknowledgement of one message.
    virtual boost::asio::awaitable<result<void>> ack(const message& m) = 0;
    virtual boost::asio::awaitable<result<void>> nack(const message& m) = 0;
    // Moves the subscription (see position); messages the consumer had buffered are dropped.
    virtual boost::asio::awaitable<result<void>> seek(const position& p) = 0;
    // Closes the consumer; the broker redelivers what it left unacknowledged.
    virtual boost::asio::awaitable<void> close() = 0;
};

class producer_port {
public:
    virtual ~producer_port() = default;
    // Publishes one message; the id is the broker's receipt.
    virtual boost::asio::awaitable<result<message_id>> send(outgoing m) = 0;
    virtual boost::asio::awaitable<void> close() = 0;
};

}  // namespace nereus::runtime
