// The public handles (client, producer, consumer, reader): each initiator posts the operation
// to the client's strand and completes the caller's handler from there (completion.h).

#include "nereus/client/client.h"
#include "nereus/client/detail/client_impl.h"
#include "nereus/client/detail/consumer_impl.h"
#include "nereus/client/detail/producer_impl.h"
#include "nereus/client/detail/spawn.h"
#include "nereus/client/detail/topic.h"

#include <boost/asio/post.hpp>

namespace nereus::client {

using detail::client_impl;
using detail::completion;
using detail::consumer_impl;
using detail::producer_impl;

namespace {

const std::string empty;
const std::vector<std::string> no_topics;

// Runs `fn` on the client's strand with a completion for `h`; a null impl fails at once.
template <class T, class Impl, class Fn>
void on_strand(const std::shared_ptr<Impl>& impl, detail::handler<T> h, Fn fn) {
    if (!impl) {
        std::move(h)(error(errc::closed));  // an empty handle: nothing to run it on
        return;
    }
    const auto& strand = impl->client()->strand();
    completion<T> done(std::move(h), strand);
    asio::post(strand, [impl, fn = std::move(fn), done = std::move(done)]() mutable {
        fn(*impl, std::move(done));
    });
}

template <class T, class Impl, class Co>
void spawn_on(const std::shared_ptr<Impl>& impl, detail::handler<T> h, Co co) {
    if (!impl) {
        std::move(h)(error(errc::closed));  // an empty handle: nothing to run it on
        return;
    }
    detail::spawn_op<T>(impl->client(), co(impl), std::move(h));
}

}  // namespace

// ---- client ----

client::client(client_options options) : impl_(std::make_shared<client_impl>(std::move(options))) {
    impl_->start();
}

client::client(executor_type ex, client_options options)
    : impl_(std::make_shared<client_impl>(std::move(ex), std::move(options))) {
    impl_->start();
}

client::executor_type client::get_executor() const noexcept {
    return impl_->strand();
}
const client_options& client::options() const noexcept {
    return impl_->options();
}
std::optional<std::uint32_t> client::max_message_size() const noexcept {
    const auto m = impl_ ? impl_->announced_max_message_size() : 0;
    if (m == 0) {
        return std::nullopt;
    }
    return m;
}

void client::close() {
    if (impl_) {
        impl_->shutdown();
    }
}

void client::initiate_create_producer(const std::shared_ptr<client_impl>& impl,
                                      producer_options o,
                                      detail::handler<producer> h) {
    auto co = [](std::shared_ptr<client_impl> c,
                 producer_options opts) -> asio::awaitable<result<producer>> {
        if (c->closed()) {
            co_return error(errc::closed);
        }
        auto name = detail::full_topic_name(opts.topic);
        if (!name) {
            co_return error(name.error());
        }
        if (opts.max_pending_messages == 0 || opts.batch_max_messages == 0) {
            co_return error(errc::invalid_argument);
        }
        auto p = std::make_shared<producer_impl>(c, std::move(opts), *name);
        auto r = co_await producer_impl::open(p);
        if (!r) {
            co_return error(r.error());
        }
        co_return producer(p);
    };
    detail::spawn_op<producer>(impl, co(impl, std::move(o)), std::move(h));
}

void client::initiate_subscribe(const std::shared_ptr<client_impl>& impl,
                                consumer_options o,
                                detail::handler<consumer> h) {
    auto co = [](std::shared_ptr<client_impl> c,
                 consumer_options opts) -> asio::awaitable<result<consumer>> {
        if (c->closed()) {
            co_return error(errc::closed);
        }
        auto s = std::make_shared<consumer_impl>(c, std::move(opts), std::nullopt);
        auto r = co_await consumer_impl::open(s);
        if (!r) {
            co_return error(r.error());
        }
        co_return consumer(s);
    };
    detail::spawn_op<consumer>(impl, co(impl, std::move(o)), std::move(h));
}

void client::initiate_create_reader(const std::shared_ptr<client_impl>& impl,
                                    reader_options o,
                                    detail::handler<reader> h) {
    auto co = [](std::shared_ptr<client_impl> c,
                 reader_options opts) -> asio::awaitable<result<reader>> {
        if (c->closed()) {
            co_return error(errc::closed);
        }
        auto s = std::make_shared<consumer_impl>(c, consumer_options{}, std::move(opts));
        auto r = co_await consumer_impl::open(s);
        if (!r) {
            co_return error(r.error());
        }
        co_return reader(s);
    };
    detail::spawn_op<reader>(impl, co(impl, std::move(o)), std::move(h));
}

void client::initiate_get_partitions(const std::shared_ptr<client_impl>& impl,
                                     std::string topic,
                                     detail::handler<std::vector<std::string>> h) {
    auto co = [](std::shared_ptr<client_impl> c,
                 std::string t) -> asio::awaitable<result<std::vector<std::string>>> {
        auto name = detail::full_topic_name(t);
        if (!name) {
            co_return error(name.error());
        }
        auto n = co_await c->partitions(*name);
        if (!n) {
            co_return error(n.error());
        }
        std::vector<std::string> out;
        if (*n == 0) {
            out.push_back(*name);
        }
        for (std::uint32_t i = 0; i < *n; ++i) {
            out.push_back(detail::partition_name(*name, i));
        }
        co_return out;
    };
    detail::spawn_op<std::vector<std::string>>(impl, co(impl, std::move(topic)), std::move(h));
}

void client::initiate_get_topics_of_namespace(const std::shared_ptr<client_impl>& impl,
                                              std::string ns,
                                              detail::handler<std::vector<std::string>> h) {
    auto co = [](std::shared_ptr<client_impl> c,
                 std::string n) -> asio::awaitable<result<std::vector<std::string>>> {
        if (c->closed()) {
            co_return error(errc::closed);
        }
        if (n.empty() || n.find('/') == std::string::npos) {
            co_return error(errc::invalid_argument);
        }
        auto co_result_ = co_await c->topics_of_namespace(n);
        co_return co_result_;
    };
    detail::spawn_op<std::vector<std::string>>(impl, co(impl, std::move(ns)), std::move(h));
}

void client::initiate_close(const std::shared_ptr<client_impl>& impl, detail::handler<void> h) {
    auto co = [](std::shared_ptr<client_impl> c) -> asio::awaitable<result<void>> {
        auto co_result_ = co_await c->close_all();
        co_return co_result_;
    };
    detail::spawn_op<void>(impl, co(impl), std::move(h));
}

// ---- producer ----

const std::string& producer::topic() const noexcept {
    return impl_ ? impl_->topic() : empty;
}
const std::string& producer::name() const noexcept {
    return impl_ ? impl_->name() : empty;
}
std::int64_t producer::last_sequence_id() const noexcept {
    return impl_ ? impl_->last_sequence_id() : -1;
}

void producer::initiate_send(const std::shared_ptr<producer_impl>& impl,
                             outgoing_message m,
                             detail::handler<message_id> h) {
    on_strand<message_id>(
        impl, std::move(h),
        [m = std::move(m)](producer_impl& p, completion<message_id> done) mutable {
            p.send(std::move(m), std::move(done));
        });
}

void producer::initiate_flush(const std::shared_ptr<producer_impl>& impl, detail::handler<void> h) {
    on_strand<void>(impl, std::move(h),
                    [](producer_impl& p, completion<void> done) { p.flush(std::move(done)); });
}

void producer::initiate_close(const std::shared_ptr<producer_impl>& impl, detail::handler<void> h) {
    spawn_on<void>(impl, std::move(h), [](std::shared_ptr<producer_impl> p) {
        return producer_impl::close(std::move(p));
    });
}

// ---- consumer ----

const std::string& consumer::subscription() const noexcept {
    return impl_ ? impl_->subscription() : empty;
}
std::vector<std::string> consumer::topics() const {
    return impl_ ? impl_->topic_names() : no_topics;
}

void consumer::initiate_receive(const std::shared_ptr<consumer_impl>& impl,
                                detail::handler<message> h) {
    on_strand<message>(impl, std::move(h), [](consumer_impl& c, completion<message> done) {
        c.receive(std::move(done));
    });
}

void consumer::initiate_ack(const std::shared_ptr<consumer_impl>& impl,
                            message_id id,
                            bool cumulative,
                            detail::handler<void> h) {
    if (!impl) {
        std::move(h)(error(errc::closed));  // an empty handle: nothing to run it on
        return;
    }
    // Not on_strand: acks go through the consumer's inbox, one post per burst (enqueue_ack).
    impl->enqueue_ack(id, cumulative, completion<void>(std::move(h), impl->client()->strand()));
}

void consumer::negative_acknowledge(const message_id& id) const {
    if (!impl_) {
        return;
    }
    asio::post(impl_->client()->strand(), [impl = impl_, id] { impl->nack(id); });
}

void consumer::initiate_redeliver(const std::shared_ptr<consumer_impl>& impl,
                                  message_id id,
                                  detail::handler<void> h) {
    spawn_on<void>(impl, std::move(h), [id](std::shared_ptr<consumer_impl> c) {
        return consumer_impl::redeliver(std::move(c), id);
    });
}

void consumer::redeliver_unacknowledged() const {
    if (!impl_) {
        return;
    }
    asio::post(impl_->client()->strand(), [impl = impl_] { impl->redeliver_unacknowledged(); });
}

void consumer::initiate_reconsume_later(const std::shared_ptr<consumer_impl>& impl,
                                        message m,
                                        std::chrono::milliseconds delay,
                                        detail::handler<void> h) {
    spawn_on<void>(impl, std::move(h), [m = std::move(m), delay](std::shared_ptr<consumer_impl> c) {
        return consumer_impl::reconsume_later(std::move(c), m, delay);
    });
}

void consumer::initiate_seek_id(const std::shared_ptr<consumer_impl>& impl,
                                message_id id,
                                detail::handler<void> h) {
    spawn_on<void>(impl, std::move(h), [id](std::shared_ptr<consumer_impl> c) {
        return consumer_impl::seek(std::move(c), id);
    });
}

void consumer::initiate_seek_time(const std::shared_ptr<consumer_impl>& impl,
                                  system_time t,
                                  detail::handler<void> h) {
    spawn_on<void>(impl, std::move(h), [t](std::shared_ptr<consumer_impl> c) {
        return consumer_impl::seek(std::move(c), t);
    });
}

void consumer::initiate_unsubscribe(const std::shared_ptr<consumer_impl>& impl,
                                    detail::handler<void> h) {
    spawn_on<void>(impl, std::move(h), [](std::shared_ptr<consumer_impl> c) {
        return consumer_impl::unsubscribe(std::move(c));
    });
}

void consumer::initiate_close(const std::shared_ptr<consumer_impl>& impl, detail::handler<void> h) {
    spawn_on<void>(impl, std::move(h), [](std::shared_ptr<consumer_impl> c) {
        return consumer_impl::close(std::move(c));
    });
}

// ---- reader ----

const std::string& reader::topic() const noexcept {
    return impl_ ? impl_->reader_topic() : empty;
}

void reader::initiate_read_next(const std::shared_ptr<consumer_impl>& impl,
                                detail::handler<message> h) {
    on_strand<message>(impl, std::move(h), [](consumer_impl& c, completion<message> done) {
        c.receive(std::move(done));
    });
}

void reader::initiate_has_message_available(const std::shared_ptr<consumer_impl>& impl,
                                            detail::handler<bool> h) {
    spawn_on<bool>(impl, std::move(h), [](std::shared_ptr<consumer_impl> c) {
        return consumer_impl::has_message_available(std::move(c));
    });
}

void reader::initiate_seek_id(const std::shared_ptr<consumer_impl>& impl,
                              message_id id,
                              detail::handler<void> h) {
    spawn_on<void>(impl, std::move(h), [id](std::shared_ptr<consumer_impl> c) {
        return consumer_impl::seek(std::move(c), id);
    });
}

void reader::initiate_seek_time(const std::shared_ptr<consumer_impl>& impl,
                                system_time t,
                                detail::handler<void> h) {
    spawn_on<void>(impl, std::move(h), [t](std::shared_ptr<consumer_impl> c) {
        return consumer_impl::seek(std::move(c), t);
    });
}

void reader::initiate_close(const std::shared_ptr<consumer_impl>& impl, detail::handler<void> h) {
    spawn_on<void>(impl, std::move(h), [](std::shared_ptr<consumer_impl> c) {
        return consumer_impl::close(std::move(c));
    });
}

}  // namespace nereus::client
