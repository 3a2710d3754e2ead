#pragma once

// A consumer of one subscription over one or more topics (a partitioned topic counts as all its
// partitions; each topic partition has its own broker-side consumer, their messages meet in one
// receive queue).
//
// Flow control: each partition grants the broker receiver_queue_size FLOW permits up front and
// refills them in halves as the application receive()s, so at most about that many messages
// per partition wait in memory.
// Settlement, and what each call promises:
//   acknowledge(id)             *confirmed*: completes when the broker's ACK_RESPONSE for the
//                               ack arrived (Nereus answers once the ack is durable); an error
//                               response, the operation timeout or a lost connection complete
//                               it with an error (the message will be redelivered then).
//                               A message of a batch is acked by batch index (ack_set), so
//                               acking 1 of 10 never settles the other 9.
//                               Grouping: an individual ack made while another ACK of the
//                               same topic partition awaits its answer waits for that answer
//                               and then goes out with the other waiting acks as one ACK (up
//                               to consumer_options::max_acks_per_request ids; a full group
//                               goes at once). No timer: a lone ack is sent at once, and under
//                               load the groups grow with the ack latency. Each completion
//                               still fires on the answer to the ACK that carried its id.
//                               close(), seek() and unsubscribe() send waiting acks first.
//                               From any thread, acks join the consumer's inbox in call order
//                               (one strand post per burst); a call made after acknowledge()
//                               returned runs after that ack was handed over.
//   acknowledge_cumulative(id)  *confirmed*, likewise; Exclusive/Failover only.
//   negative_acknowledge(id)    *applied*: the message is redelivered after
//                               nack_redelivery_delay (REDELIVER_UNACKNOWLEDGED has no answer).
//   reconsume_later(m, delay)   *confirmed*: the message was published to the retry-letter
//                               topic (receipted) and then acked here (ACK_RESPONSE). After
//                               max_redeliver_count reconsumes it goes to the dead-letter topic.
// Dead letters (consumer_options::dead_letter): a message delivered with redelivery_count >=
// max_redeliver_count is not handed to receive(); it is published to the dead-letter topic and,
// once receipted, acknowledged (as Pulsar's Java client does).
// Ack timeout: a message received and not acked within ack_timeout is redelivered.
// Pattern subscriptions (consumer_options::topics_pattern): the namespace is listed at
// subscribe and again every pattern_auto_discovery_period; a topic that appeared is subscribed
// (its own broker-side consumer, FLOW permits, as any other topic of the consumer) and a topic
// no longer listed has its consumer closed (its buffered messages dropped); the other topics'
// consumers, buffers and pending acks are not touched. (Nereus has no topic-list watcher,
// CommandWatchTopicList, so the periodic listing is the only discovery.)
// Reconnect: a lost connection is re-established with backoff (same consumer id and name;
// the receive queue is cleared since the broker redelivers what was not acked); pending acks
// fail with errc::disconnected.
//
// Ownership: a cheap copyable handle (one shared_ptr); copies share the consumer. Dropping
//   handles does not close it: call close() (closing the client closes every consumer).
// Thread-safety: thread-safe; every member may be called from any thread.

#include "nereus/client/completion.h"
#include "nereus/client/message.h"
#include "nereus/client/message_id.h"

#include <chrono>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace nereus::client {

namespace detail {
class consumer_impl;
}  // namespace detail

class consumer {
public:
    consumer() = default;  // an empty handle
    explicit consumer(std::shared_ptr<detail::consumer_impl> impl) noexcept
        : impl_(std::move(impl)) {}

    [[nodiscard]] bool valid() const noexcept { return impl_ != nullptr; }
    [[nodiscard]] const std::string& subscription() const noexcept;
    // Every concrete topic (partition) this consumer reads now (a copy: a pattern consumer's
    // set changes as topics appear in or disappear from its namespace).
    [[nodiscard]] std::vector<std::string> topics() const;

    // Completes with void(result<message>) with the next message (waits for one). Several
    // receives may be outstanding; they are served in call order.
    template <class Token>
    auto receive(Token&& token) const {
        return asio::async_initiate<Token, void(result<message>)>(
            [](auto h, std::shared_ptr<detail::consumer_impl> impl) {
                initiate_receive(impl, detail::handler<message>(std::move(h)));
            },
            token, impl_);
    }

    // void(result<void>): completes on the broker's confirmation (see above).
    template <class Token>
    auto acknowledge(const message_id& id, Token&& token) const {
        return asio::async_initiate<Token, void(result<void>)>(
            [](auto h, std::shared_ptr<detail::consumer_impl> impl, message_id mid) {
                initiate_ack(impl, mid, false, detail::handler<void>(std::move(h)));
            },
            token, impl_, id);
    }

    template <class Token>
    auto acknowledge_cumulative(const message_id& id, Token&& token) const {
        return asio::async_initiate<Token, void(result<void>)>(
            [](auto h, std::shared_ptr<detail::consumer_impl> impl, message_id mid) {
                initiate_ack(impl, mid, true, detail::handler<void>(std::move(h)));
            },
            token, impl_, id);
    }

    // Redelivery after nack_redelivery_delay. Applied, not confirmed (nothing to await).
    void negative_acknowledge(const message_id& id) const;

    // Negative acknowledgement without delay, *confirmed* as far as the protocol allows:
    // REDELIVER_UNACKNOWLEDGED for the message's entry is sent at once, followed on the same
    // connection by a GET_LAST_MESSAGE_ID for this consumer; the call completes when that is
    // answered (a broker handles one connection's commands in order, so the redelivery was
    // handled by then). void(result<void>); errc::disconnected when the partition's connection
    // is down (the broker then redelivers the message anyway, after the reconnect).
    template <class Token>
    auto redeliver(const message_id& id, Token&& token) const {
        return asio::async_initiate<Token, void(result<void>)>(
            [](auto h, std::shared_ptr<detail::consumer_impl> impl, message_id mid) {
                initiate_redeliver(impl, mid, detail::handler<void>(std::move(h)));
            },
            token, impl_, id);
    }

    // Publishes `m` to the retry-letter topic with deliver_at = now + delay and the properties
    // RECONSUMETIMES, DELAY_TIME, REAL_TOPIC, ORIGIN_MESSAGE_ID, then acknowledges it here.
    // Needs consumer_options::retry_enable. void(result<void>).
    template <class Token>
    auto reconsume_later(const message& m, std::chrono::milliseconds delay, Token&& token) const {
        return asio::async_initiate<Token, void(result<void>)>(
            [](auto h, std::shared_ptr<detail::consumer_impl> impl, message msg,
               std::chrono::milliseconds d) {
                initiate_reconsume_later(impl, std::move(msg), d,
                                         detail::handler<void>(std::move(h)));
            },
            token, impl_, m, delay);
    }

    // Moves the subscription to `id` (as Pulsar: the entry `id` names is the next delivered,
    // with every message after it; earlier ones count as acknowledged) or to the first message
    // published at or after `t`. Messages already received but not yet handed out are
    // discarded. message_id::earliest() / latest() are accepted. void(result<void>), confirmed
    // by the broker's SUCCESS. Not for multi-topic consumers by id (errc::invalid_argument).
    template <class Token>
    auto seek(const message_id& id, Token&& token) const {
        return asio::async_initiate<Token, void(result<void>)>(
            [](auto h, std::shared_ptr<detail::consumer_impl> impl, message_id mid) {
                initiate_seek_id(impl, mid, detail::handler<void>(std::move(h)));
            },
            token, impl_, id);
    }
    template <class Token>
    auto seek(system_time t, Token&& token) const {
        return asio::async_initiate<Token, void(result<void>)>(
            [](auto h, std::shared_ptr<detail::consumer_impl> impl, system_time tp) {
                initiate_seek_time(impl, tp, detail::handler<void>(std::move(h)));
            },
            token, impl_, t);
    }

    // Asks the broker to redeliver every message delivered to this consumer and not acked.
    void redeliver_unacknowledged() const;

    // Deletes the subscription (broker-confirmed) and closes the consumer. void(result<void>).
    template <class Token>
    auto unsubscribe(Token&& token) const {
        return asio::async_initiate<Token, void(result<void>)>(
            [](auto h, std::shared_ptr<detail::consumer_impl> impl) {
                initiate_unsubscribe(impl, detail::handler<void>(std::move(h)));
            },
            token, impl_);
    }

    // Closes the consumer (broker-confirmed); outstanding receives fail with errc::closed.
    template <class Token>
    auto close(Token&& token) const {
        return asio::async_initiate<Token, void(result<void>)>(
            [](auto h, std::shared_ptr<detail::consumer_impl> impl) {
                initiate_close(impl, detail::handler<void>(std::move(h)));
            },
            token, impl_);
    }

    [[nodiscard]] const std::shared_ptr<detail::consumer_impl>& impl() const noexcept {
        return impl_;
    }

private:
    static void initiate_receive(const std::shared_ptr<detail::consumer_impl>& impl,
                                 detail::handler<message> h);
    static void initiate_ack(const std::shared_ptr<detail::consumer_impl>& impl,
                             message_id id,
                             bool cumulative,
                             detail::handler<void> h);
    static void initiate_redeliver(const std::shared_ptr<detail::consumer_impl>& impl,
                                   message_id id,
                                   detail::handler<void> h);
    static void initiate_reconsume_later(const std::shared_ptr<detail::consumer_impl>& impl,
                                         message m,
                                         std::chrono::milliseconds delay,
                                         detail::handler<void> h);
    static void initiate_seek_id(const std::shared_ptr<detail::consumer_impl>& impl,
                                 message_id id,
                                 detail::handler<void> h);
    static void initiate_seek_time(const std::shared_ptr<detail::consumer_impl>& impl,
                                   system_time t,
                                   detail::handler<void> h);
    static void initiate_unsubscribe(const std::shared_ptr<detail::consumer_impl>& impl,
                                     detail::handler<void> h);
    static void initiate_close(const std::shared_ptr<detail::consumer_impl>& impl,
                               detail::handler<void> h);

    std::shared_ptr<detail::consumer_impl> impl_;
};

}  // namespace nereus::client
