#pragma once

// The driver's port over one nereus::client consumer (one per subscription; the driver owns it).
//
// receive(): the next message, converted once into the runtime's message (payload copied once;
//   the client's id, with its batch index and size, rides along for the ack). A client receive
//   is kept outstanding at most one at a time; interrupt() ends the wait at once (a message the
//   client hands over afterwards stays unacknowledged and goes back to the broker at close).
// ack():  *confirmed* — the broker's ACK_RESPONSE (the client completes acks on it).
// nack(): *confirmed* as far as the protocol allows — REDELIVER_UNACKNOWLEDGED at once, then a
//   GET_LAST_MESSAGE_ID on the same connection answered (consumer::redeliver in the client).
// seek(): *confirmed* — the broker's SUCCESS for the SEEK on every partition; the client drops
//   what it had buffered. earliest / latest / a message id (one-topic subscriptions only; a
//   multi-topic one refuses it with errc::seek_failed) / a publish time.
// close(): the broker confirmed the CLOSE_CONSUMER; it redelivers what is unacknowledged.
// Exclusive / Failover: the broker keeps no redelivery count for them and answers a nack by
// redelivering every unacknowledged message of the consumer (as Pulsar does). The port counts
// its own nacks per message (in memory; redelivery_count is the larger of the two) and, since
// one active consumer gets a topic's messages in order, drops a copy of a message at or below
// the highest it handed out unless that message was nacked or its ack went unconfirmed — so a
// retry in one lane never hands the other lanes' messages out twice. (An ack-timeout
// redelivery of a message the runtime still holds is dropped the same way.)
//
// Ownership: owned by its driver; the receive state is shared with the pending client receive
// (it may complete after the port is gone). Thread-safety: strand-confined to the runtime's
// executor (client completions are bound to it).

#include "nereus/client/consumer.h"
#include "nereus/runtime/ports.h"
#include "nereus/runtime/spec.h"

#include <boost/asio/any_io_executor.hpp>
#include <memory>

namespace nereus::runtime::pulsar {

std::unique_ptr<consumer_port> make_consumer_port(const boost::asio::any_io_executor& ex,
                                                  nereus::client::consumer c,
                                                  subscription_type type);

}  // namespace nereus::runtime::pulsar
