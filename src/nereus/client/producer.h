#pragma once

// A producer on one topic (for a partitioned topic: one internal producer per partition, the
// message routed by key hash or round robin; see options.h).
//
// send() assigns the message the producer's next sequence id, adds it to the current batch
// (or sends it alone when batching is off), and completes with the message's id ONLY when the
// broker's SEND_RECEIPT for it arrived — Nereus sends a receipt once the message is durable,
// so a successful send is *confirmed* (and durable on a Nereus broker). A SEND_ERROR, the send
// timeout, or close() before the receipt complete it with an error. Messages are sent and
// receipted in send() order per partition.
// Back-pressure: at most max_pending_messages are pending (queued, batched or awaiting a
// receipt); a send beyond that waits (queue_full_policy::block) or fails at once
// (queue_full_policy::fail, errc::producer_queue_full).
// Reconnect: when the connection is lost the producer reconnects with backoff and re-sends
// every pending message in order with the same sequence ids (the broker drops duplicates of a
// named producer); sends keep queueing meanwhile, bounded as above.
//
// Ownership: a cheap copyable handle (one shared_ptr); copies share the producer. Dropping
//   handles does not close it: call close() (closing the client closes every producer).
// Thread-safety: thread-safe; every member may be called from any thread.

#include "nereus/client/completion.h"
#include "nereus/client/message.h"
#include "nereus/client/message_id.h"

#include <memory>
#include <string>
#include <utility>

namespace nereus::client {

namespace detail {
class producer_impl;
}  // namespace detail

class producer {
public:
    producer() = default;  // an empty handle
    explicit producer(std::shared_ptr<detail::producer_impl> impl) noexcept
        : impl_(std::move(impl)) {}

    [[nodiscard]] bool valid() const noexcept { return impl_ != nullptr; }
    [[nodiscard]] const std::string& topic() const noexcept;
    // The name the broker gave (or confirmed); for a partitioned topic, partition 0's.
    [[nodiscard]] const std::string& name() const noexcept;
    // The sequence id of the last message sent and receipted (-1 when none).
    [[nodiscard]] std::int64_t last_sequence_id() const noexcept;

    // Completes with void(result<message_id>) when the broker receipted the message.
    template <class Token>
    auto send(outgoing_message m, Token&& token) const {
        return asio::async_initiate<Token, void(result<message_id>)>(
            [](auto h, std::shared_ptr<detail::producer_impl> impl, outgoing_message msg) {
                initiate_send(impl, std::move(msg), detail::handler<message_id>(std::move(h)));
            },
            token, impl_, std::move(m));
    }

    // Sends the current batch now (without waiting for its delay). Completes with
    // void(result<void>) once every message sent before the call was receipted.
    template <class Token>
    auto flush(Token&& token) const {
        return asio::async_initiate<Token, void(result<void>)>(
            [](auto h, std::shared_ptr<detail::producer_impl> impl) {
                initiate_flush(impl, detail::handler<void>(std::move(h)));
            },
            token, impl_);
    }

    // Flushes, waits for the receipts of pending messages (bounded by the operation timeout;
    // those still pending then fail with errc::closed) and closes the producer on the broker.
    template <class Token>
    auto close(Token&& token) const {
        return asio::async_initiate<Token, void(result<void>)>(
            [](auto h, std::shared_ptr<detail::producer_impl> impl) {
                initiate_close(impl, detail::handler<void>(std::move(h)));
            },
            token, impl_);
    }

    [[nodiscard]] const std::shared_ptr<detail::producer_impl>& impl() const noexcept {
        return impl_;
    }

private:
    static void initiate_send(const std::shared_ptr<detail::producer_impl>& impl,
                              outgoing_message m,
                              detail::handler<message_id> h);
    static void initiate_flush(const std::shared_ptr<detail::producer_impl>& impl,
                               detail::handler<void> h);
    static void initiate_close(const std::shared_ptr<detail::producer_impl>& impl,
                               detail::handler<void> h);

    std::shared_ptr<detail::producer_impl> impl_;
};

}  // namespace nereus::client
