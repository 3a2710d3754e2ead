#pragma once

// A reader: reads one topic (or one partition) from a chosen position with a non-durable
// subscription of its own, without acknowledgements (Pulsar's Reader).
//
// The start position is reader_options::start_message_id (earliest(), latest() or a message's
// id; start_inclusive also delivers the message at that id). Reconnects with backoff resume
// after the last message read.
// Ownership: a cheap copyable handle (one shared_ptr); call close() to release it.
// Thread-safety: thread-safe; every member may be called from any thread.

#include "nereus/client/completion.h"
#include "nereus/client/message.h"
#include "nereus/client/message_id.h"

#include <memory>
#include <string>
#include <utility>

namespace nereus::client {

namespace detail {
class consumer_impl;
}  // namespace detail

class reader {
public:
    reader() = default;
    explicit reader(std::shared_ptr<detail::consumer_impl> impl) noexcept
        : impl_(std::move(impl)) {}

    [[nodiscard]] bool valid() const noexcept { return impl_ != nullptr; }
    [[nodiscard]] const std::string& topic() const noexcept;

    // void(result<message>): the next message (waits for one).
    template <class Token>
    auto read_next(Token&& token) const {
        return asio::async_initiate<Token, void(result<message>)>(
            [](auto h, std::shared_ptr<detail::consumer_impl> impl) {
                initiate_read_next(impl, detail::handler<message>(std::move(h)));
            },
            token, impl_);
    }

    // void(result<bool>): whether a message after the last one read exists on the topic now
    // (asks the broker with GET_LAST_MESSAGE_ID when nothing is buffered).
    template <class Token>
    auto has_message_available(Token&& token) const {
        return asio::async_initiate<Token, void(result<bool>)>(
            [](auto h, std::shared_ptr<detail::consumer_impl> impl) {
                initiate_has_message_available(impl, detail::handler<bool>(std::move(h)));
            },
            token, impl_);
    }

    // As consumer::seek: void(result<void>).
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

    template <class Token>
    auto close(Token&& token) const {
        return asio::async_initiate<Token, void(result<void>)>(
            [](auto h, std::shared_ptr<detail::consumer_impl> impl) {
                initiate_close(impl, detail::handler<void>(std::move(h)));
            },
            token, impl_);
    }

private:
    static void initiate_read_next(const std::shared_ptr<detail::consumer_impl>& impl,
                                   detail::handler<message> h);
    static void initiate_has_message_available(const std::shared_ptr<detail::consumer_impl>& impl,
                                               detail::handler<bool> h);
    static void initiate_seek_id(const std::shared_ptr<detail::consumer_impl>& impl,
                                 message_id id,
                                 detail::handler<void> h);
    static void initiate_seek_time(const std::shared_ptr<detail::consumer_impl>& impl,
                                   system_time t,
                                   detail::handler<void> h);
    static void initiate_close(const std::shared_ptr<detail::consumer_impl>& impl,
                               detail::handler<void> h);

    std::shared_ptr<detail::consumer_impl> impl_;
};

}  // namespace nereus::client
