#pragma once

// nereus::client — a Pulsar client over the binary protocol (see README.md in this folder).
//
//   nereus::client::client c({.service_url = "pulsar://127.0.0.1:6650"});
//   auto p = co_await c.create_producer({.topic = "orders"}, asio::use_awaitable);
//   auto id = co_await p->send(outgoing_message::text("hello"), asio::use_awaitable);
//   consumer_options co;  // (g++ 12 miscompiles a braced list of literals inside co_await)
//   co.topics = {"orders"};
//   co.subscription = "billing";
//   auto s = co_await c.subscribe(co, asio::use_awaitable);
//   auto m = co_await s->receive(asio::use_awaitable);
//   co_await s->acknowledge(m->id(), asio::use_awaitable);   // the broker confirmed it
//   c.close();
//
// A client holds one TCP connection per broker (a pool keyed by broker address), shared by
// every producer, consumer and reader it creates; topics are looked up with the binary LOOKUP
// (Redirects followed) and partitioned topics are resolved with PARTITIONED_METADATA.
// Connections send PING after keep_alive_interval of silence and are dropped when the broker
// stays silent for twice that.
//
// Threads: the client either owns an io_context run by client_options::io_threads threads
// (client(options)), or runs on an executor the application gives it (client(executor,
// options)); all its state is confined to one strand of that executor. Completion rules:
// completion.h.
// Ownership: a cheap copyable handle (one shared_ptr); copies share the client. Producers,
//   consumers and readers keep the client's state alive. close() closes them all; the owned
//   threads stop when close() returns (or when the last handle of everything is dropped).
// Thread-safety: thread-safe; every member may be called from any thread, except that the
//   blocking close() must not be called from the client's own threads.

#include "nereus/client/completion.h"
#include "nereus/client/consumer.h"
#include "nereus/client/errc.h"
#include "nereus/client/message.h"
#include "nereus/client/message_id.h"
#include "nereus/client/options.h"
#include "nereus/client/producer.h"
#include "nereus/client/reader.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace nereus::client {

namespace detail {
class client_impl;
}  // namespace detail

class client {
public:
    using executor_type = asio::any_io_executor;

    // Owns an io_context and starts options.io_threads threads to run it.
    explicit client(client_options options = {});
    // Runs on `ex` (the application runs its io_context); the client uses a strand of it.
    client(executor_type ex, client_options options = {});
    explicit client(std::shared_ptr<detail::client_impl> impl) noexcept : impl_(std::move(impl)) {}

    // The executor the client's state lives on (a strand).
    [[nodiscard]] executor_type get_executor() const noexcept;
    [[nodiscard]] const client_options& options() const noexcept;
    // The largest payload the broker accepts, as it announced it in CONNECTED (max_message_size)
    // on the most recently opened connection (each connection records its own and its producers
    // refuse a bigger payload, after compression, with errc::message_too_big before sending);
    // nullopt before the first connection, or when the broker announced none (Pulsar's 5 MiB
    // applies then). Thread-safe.
    [[nodiscard]] std::optional<std::uint32_t> max_message_size() const noexcept;

    // void(result<producer>): the producer is registered with the broker (PRODUCER_SUCCESS on
    // every partition).
    template <class Token>
    auto create_producer(producer_options o, Token&& token) const {
        return asio::async_initiate<Token, void(result<producer>)>(
            [](auto h, std::shared_ptr<detail::client_impl> impl, producer_options opts) {
                initiate_create_producer(impl, std::move(opts),
                                         detail::handler<producer>(std::move(h)));
            },
            token, impl_, std::move(o));
    }

    // void(result<consumer>): subscribed on every topic partition and FLOW permits granted.
    template <class Token>
    auto subscribe(consumer_options o, Token&& token) const {
        return asio::async_initiate<Token, void(result<consumer>)>(
            [](auto h, std::shared_ptr<detail::client_impl> impl, consumer_options opts) {
                initiate_subscribe(impl, std::move(opts), detail::handler<consumer>(std::move(h)));
            },
            token, impl_, std::move(o));
    }

    // void(result<reader>).
    template <class Token>
    auto create_reader(reader_options o, Token&& token) const {
        return asio::async_initiate<Token, void(result<reader>)>(
            [](auto h, std::shared_ptr<detail::client_impl> impl, reader_options opts) {
                initiate_create_reader(impl, std::move(opts),
                                       detail::handler<reader>(std::move(h)));
            },
            token, impl_, std::move(o));
    }

    // void(result<std::vector<std::string>>): the full names of the topic's partitions
    // ("...-partition-0", ...), or just the full topic name when it is not partitioned.
    template <class Token>
    auto get_partitions(std::string topic, Token&& token) const {
        return asio::async_initiate<Token, void(result<std::vector<std::string>>)>(
            [](auto h, std::shared_ptr<detail::client_impl> impl, std::string t) {
                initiate_get_partitions(impl, std::move(t),
                                        detail::handler<std::vector<std::string>>(std::move(h)));
            },
            token, impl_, std::move(topic));
    }

    // void(result<std::vector<std::string>>): GET_TOPICS_OF_NAMESPACE — the full names of the
    // persistent topics the broker knows in `ns` ("tenant/namespace"); a partitioned topic
    // appears as its partitions ("...-partition-N"). What a pattern subscription matches.
    template <class Token>
    auto get_topics_of_namespace(std::string ns, Token&& token) const {
        return asio::async_initiate<Token, void(result<std::vector<std::string>>)>(
            [](auto h, std::shared_ptr<detail::client_impl> impl, std::string n) {
                initiate_get_topics_of_namespace(
                    impl, std::move(n), detail::handler<std::vector<std::string>>(std::move(h)));
            },
            token, impl_, std::move(ns));
    }

    // Closes every producer, consumer and reader (each as its close() does), then the
    // connections; void(result<void>).
    template <class Token>
    auto async_close(Token&& token) const {
        return asio::async_initiate<Token, void(result<void>)>(
            [](auto h, std::shared_ptr<detail::client_impl> impl) {
                initiate_close(impl, detail::handler<void>(std::move(h)));
            },
            token, impl_);
    }

    // Blocking async_close(); then stops and joins the owned threads. Idempotent.
    // Requires: not called from one of the client's threads.
    void close();

    [[nodiscard]] const std::shared_ptr<detail::client_impl>& impl() const noexcept {
        return impl_;
    }

private:
    static void initiate_create_producer(const std::shared_ptr<detail::client_impl>& impl,
                                         producer_options o,
                                         detail::handler<producer> h);
    static void initiate_subscribe(const std::shared_ptr<detail::client_impl>& impl,
                                   consumer_options o,
                                   detail::handler<consumer> h);
    static void initiate_create_reader(const std::shared_ptr<detail::client_impl>& impl,
                                       reader_options o,
                                       detail::handler<reader> h);
    static void initiate_get_partitions(const std::shared_ptr<detail::client_impl>& impl,
                                        std::string topic,
                                        detail::handler<std::vector<std::string>> h);
    static void initiate_get_topics_of_namespace(const std::shared_ptr<detail::client_impl>& impl,
                                                 std::string ns,
                                                 detail::handler<std::vector<std::string>> h);
    static void initiate_close(const std::shared_ptr<detail::client_impl>& impl,
                               detail::handler<void> h);

    std::shared_ptr<detail::client_impl> impl_;
};

}  // namespace nereus::client
