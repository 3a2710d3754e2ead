#include "nereus/client/detail/client_impl.h"

#include "nereus/base/thread_name.h"
#include "nereus/client/detail/logger.h"
#include "nereus/client/detail/spawn.h"
#include "nereus/client/errc.h"
#include "nereus/proto/pulsar_api.h"

#include <fmt/format.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>
#include <future>

namespace nereus::client::detail {

namespace {
constexpr auto tok = asio::as_tuple(asio::use_awaitable);
constexpr std::chrono::milliseconds tick_interval{100};
}  // namespace

client_impl::client_impl(client_options options)
    : options_(std::move(options)),
      own_ioc_(std::make_unique<asio::io_context>()),
      work_(asio::make_work_guard(*own_ioc_)),
      ex_(asio::make_strand(asio::any_io_executor(own_ioc_->get_executor()))) {
    const auto n = std::max<std::uint32_t>(1, options_.io_threads);
    for (std::uint32_t i = 0; i < n; ++i) {
        threads_.emplace_back([ioc = own_ioc_.get(), i] {
            set_thread_name(fmt::format("nereus-client-{}", i));
            ioc->run();
        });
    }
    if (auto ep = parse_service_url(options_.service_url)) {
        service_ = *ep;
    }
}

client_impl::client_impl(asio::any_io_executor ex, client_options options)
    : options_(std::move(options)), ex_(asio::make_strand(std::move(ex))) {
    if (auto ep = parse_service_url(options_.service_url)) {
        service_ = *ep;
    }
}

client_impl::~client_impl() {
    // The last reference may be dropped on one of our own threads (a completion handler):
    // joining there would deadlock, so those threads are left to finish on their own.
    if (own_ioc_) {
        work_.reset();
        own_ioc_->stop();
        bool on_own_thread = false;
        for (auto& t : threads_) {
            if (t.get_id() == std::this_thread::get_id()) {
                on_own_thread = true;
            }
        }
        if (on_own_thread) {
            for (auto& t : threads_) {
                t.detach();
            }
            (void)own_ioc_.release();  // still running on this thread's stack: leaked on purpose
        } else {
            for (auto& t : threads_) {
                if (t.joinable()) {
                    t.join();
                }
            }
        }
    }
}

void client_impl::start() {
    tick_timer_ = std::make_shared<asio::steady_timer>(ex_);
    asio::co_spawn(ex_, tick_loop(weak_from_this()), asio::detached);
}

asio::awaitable<void> client_impl::tick_loop(std::weak_ptr<client_impl> weak) {
    // Holds only a weak reference between ticks, so dropping the client ends the loop.
    for (;;) {
        std::shared_ptr<asio::steady_timer> timer;
        {
            auto self = weak.lock();
            if (!self || self->closed_) {
                co_return;
            }
            timer = self->tick_timer_;
            const auto now = steady::now();
            auto pool = self->pool_;
            for (auto& [k, c] : pool) {
                c->tick(now);
            }
            auto entities = self->entities_;
            for (auto& w : entities) {
                if (auto e = w.lock()) {
                    e->tick(now);
                }
            }
            std::erase_if(self->entities_, [](const auto& w) { return w.expired(); });
        }
        timer->expires_after(tick_interval);
        (void)co_await timer->async_wait(tok);
    }
}

asio::awaitable<result<std::shared_ptr<connection>>> client_impl::get_connection(
    const endpoint& ep) {
    if (closed_) {
        co_return error(errc::closed);
    }
    const auto key = ep.key();
    if (auto it = pool_.find(key); it != pool_.end() && it->second->usable()) {
        co_return it->second;
    }
    if (auto it = connecting_.find(key); it != connecting_.end()) {
        // g++ 12 destroys a lambda temporary inside a co_await expression twice (its captured
        // shared_ptr loses a reference): the initiation is a named local, never a temporary.
        auto init = [this, &key](auto h) {
            connecting_[key].emplace_back(handler<std::shared_ptr<connection>>(std::move(h)), ex_);
        };
        auto co_result_ = co_await asio::async_initiate<const asio::use_awaitable_t<>&,
                                                        void(result<std::shared_ptr<connection>>)>(
            init, asio::use_awaitable);
        co_return co_result_;
    }
    auto self = shared_from_this();
    connecting_[key];
    auto conn = std::make_shared<connection>(ex_, options_, ep);
    auto opened = co_await conn->open();
    auto waiters = std::move(connecting_[key]);
    connecting_.erase(key);
    result<std::shared_ptr<connection>> r = conn;
    if (!opened) {
        r = error(opened.error());
    } else if (closed_) {
        conn->close();
        r = error(errc::closed);
    } else {
        std::weak_ptr<client_impl> weak = self;
        conn->on_gone = [weak, key](connection* c) {
            if (auto s = weak.lock()) {
                if (auto it = s->pool_.find(key); it != s->pool_.end() && it->second.get() == c) {
                    s->pool_.erase(it);
                }
            }
        };
        pool_[key] = conn;
        if (conn->max_message_size_announced()) {
            max_message_size_.store(conn->max_message_size(), std::memory_order_relaxed);
        }
    }
    for (auto& w : waiters) {
        w(r);
    }
    co_return r;
}

asio::awaitable<result<std::shared_ptr<connection>>> client_impl::connection_for(
    const std::string& topic) {
    if (!service_) {
        co_return error(errc::invalid_argument);
    }
    auto co_result_ = co_await lookup_once(topic);
    co_return co_result_;
}

asio::awaitable<result<std::shared_ptr<connection>>> client_impl::lookup_once(
    const std::string& topic) {
    endpoint ep = *service_;
    bool authoritative = false;
    for (std::uint32_t hop = 0; hop <= options_.max_lookup_redirects; ++hop) {
        auto conn = co_await get_connection(ep);
        if (!conn) {
            co_return error(conn.error());
        }
        const auto req = next_request_id();
        auto resp =
            co_await (*conn)->request(req, [&](proto::frame_buffer& out, proto::command_writer& w) {
                return w.lookup(out, topic, req, authoritative);
            });
        if (!resp) {
            co_return error(resp.error());
        }
        const auto& r = (*resp)->lookuptopicresponse();
        if (!r.has_response() || r.response() == proto::pb::CommandLookupTopicResponse::Failed) {
            NEREUS_LOG(client_log(), warn, "lookup {} failed: {} {}", topic, r.error(),
                       r.message());
            co_return error(r.has_error() ? make_broker_error(r.error())
                                          : make_error_code(errc::lookup_failed));
        }
        auto target = parse_service_url(r.brokerserviceurl());
        if (!target) {
            co_return error(errc::lookup_failed);
        }
        if (r.response() == proto::pb::CommandLookupTopicResponse::Connect) {
            if (*target == ep) {
                co_return *conn;
            }
            auto co_result_ = co_await get_connection(*target);
            co_return co_result_;
        }
        authoritative = r.authoritative();
        ep = *target;
    }
    co_return error(errc::lookup_failed);
}

asio::awaitable<result<std::uint32_t>> client_impl::partitions(const std::string& topic) {
    if (!service_) {
        co_return error(errc::invalid_argument);
    }
    auto conn = co_await get_connection(*service_);
    if (!conn) {
        co_return error(conn.error());
    }
    const auto req = next_request_id();
    auto resp =
        co_await (*conn)->request(req, [&](proto::frame_buffer& out, proto::command_writer& w) {
            return w.partitioned_metadata(out, topic, req);
        });
    if (!resp) {
        co_return error(resp.error());
    }
    const auto& r = (*resp)->partitionmetadataresponse();
    if (r.has_response() &&
        r.response() == proto::pb::CommandPartitionedTopicMetadataResponse::Failed) {
        co_return error(r.has_error() ? make_broker_error(r.error())
                                      : make_error_code(errc::lookup_failed));
    }
    co_return r.partitions();
}

asio::awaitable<result<std::vector<std::string>>> client_impl::topics_of_namespace(
    const std::string& ns) {
    if (!service_) {
        co_return error(errc::invalid_argument);
    }
    auto conn = co_await get_connection(*service_);
    if (!conn) {
        co_return error(conn.error());
    }
    const auto req = next_request_id();
    auto resp =
        co_await (*conn)->request(req, [&](proto::frame_buffer& out, proto::command_writer& w) {
            return w.get_topics_of_namespace(out, req, ns, 0);  // 0: persistent topics
        });
    if (!resp) {
        co_return error(resp.error());
    }
    const auto& r = (*resp)->gettopicsofnamespaceresponse();
    std::vector<std::string> out(r.topics().begin(), r.topics().end());
    co_return out;
}

void client_impl::add_entity(const std::shared_ptr<entity>& e) {
    entities_.push_back(e);
}

void client_impl::remove_entity(const entity* e) {
    std::erase_if(entities_, [e](const auto& w) {
        auto s = w.lock();
        return !s || s.get() == e;
    });
}

asio::awaitable<result<void>> client_impl::close_all() {
    auto self = shared_from_this();
    if (closed_) {
        co_return result<void>{};
    }
    auto entities = entities_;
    for (auto& w : entities) {
        if (auto e = w.lock()) {
            (void)co_await e->close_from_client();
        }
    }
    closed_ = true;
    entities_.clear();
    auto pool = std::move(pool_);
    pool_.clear();
    for (auto& [k, c] : pool) {
        c->close();
    }
    if (tick_timer_) {
        tick_timer_->cancel();
    }
    co_return result<void>{};
}

void client_impl::shutdown() {
    if (shut_down_) {
        return;
    }
    shut_down_ = true;
    auto self = shared_from_this();
    std::promise<void> done;
    auto fut = done.get_future();
    asio::co_spawn(
        ex_, [self]() { return self->close_all(); },
        [&done](std::exception_ptr, result<void>) { done.set_value(); });
    fut.wait();
    if (own_ioc_) {
        work_.reset();
        own_ioc_->stop();
        for (auto& t : threads_) {
            if (t.joinable() && t.get_id() != std::this_thread::get_id()) {
                t.join();
            }
        }
        threads_.clear();
    }
}

}  // namespace nereus::client::detail
