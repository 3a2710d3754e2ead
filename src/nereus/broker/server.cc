#include "nereus/broker/server.h"

#include "nereus/base/thread_name.h"
#include "nereus/broker/blocking_pool.h"
#include "nereus/broker/connection.h"
#include "nereus/broker/listen.h"
#include "nereus/broker/logger.h"
#include "nereus/broker/topic.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <list>
#include <mutex>
#include <thread>
#include <unistd.h>
#include <vector>

namespace nereus::broker {

namespace asio = boost::asio;
using asio::ip::tcp;

namespace {

// One io_context per io thread (concurrency hint 1: a post from its own thread goes to the
// thread-private queue, no lock and no wake-up).
std::vector<std::unique_ptr<asio::io_context>> make_io_contexts(unsigned n) {
    std::vector<std::unique_ptr<asio::io_context>> v;
    for (unsigned i = 0; i < std::max(1U, n); ++i) {
        v.push_back(std::make_unique<asio::io_context>(1));
    }
    return v;
}

std::vector<asio::any_io_executor> executors_of(
    const std::vector<std::unique_ptr<asio::io_context>>& ios) {
    std::vector<asio::any_io_executor> v;
    for (const auto& io : ios) {
        v.emplace_back(io->get_executor());
    }
    return v;
}

}  // namespace

struct server::impl {
    impl(broker_options o, topic_backend& b)
        : options(std::move(o)),
          backend(b),
          ios(make_io_contexts(options.io_threads)),
          io(*ios.front()),
          acceptor(io),
          pool(options.blocking_threads),
          topics(backend, executors_of(ios), options, &pool) {
        for (std::size_t i = 0; i < ios.size(); ++i) {
            publish_hist.push_back(std::make_unique<latency_histogram>());
        }
    }

    asio::awaitable<void> accept_loop();
    void prune_locked();

    broker_options options;
    topic_backend& backend;
    // Connection i is pinned to ios[i % n] (its strand, socket and every completion posted to
    // it run on that one thread): a connection's work never bounces between threads, and a
    // post to it wakes at most its own thread. ios[0] also runs the acceptor.
    std::vector<std::unique_ptr<asio::io_context>> ios;
    // One per io thread (its connections record into it; summed by publish_latency()).
    std::vector<std::unique_ptr<latency_histogram>> publish_hist;
    asio::io_context& io;
    std::size_t next_io = 0;  // accept loop only
    tcp::acceptor acceptor;
    blocking_pool pool;
    topic_registry topics;
    std::unique_ptr<broker_context> ctx;
    std::atomic<std::uint16_t> bound_port{0};
    std::vector<std::thread> threads;
    std::vector<asio::executor_work_guard<asio::io_context::executor_type>> work;

    mutable std::mutex mu;
    std::list<std::weak_ptr<connection>> connections;  // guarded by mu
    std::size_t prune_at = 64;                         // guarded by mu: see accept_loop
    bool started = false;
    bool stopped = false;
};

asio::awaitable<void> server::impl::accept_loop() {
    constexpr auto tok = asio::as_tuple(asio::use_awaitable);
    for (;;) {
        const std::size_t io_index = next_io++ % ios.size();
        auto strand = asio::make_strand(*ios[io_index]);
        tcp::socket socket(strand);
        auto [ec] = co_await acceptor.async_accept(socket, tok);
        if (ec) {
            if (ec == asio::error::operation_aborted || !acceptor.is_open()) {
                co_return;
            }
            NEREUS_LOG(broker_log(), warn, "accept failed: {}", ec.message());
            continue;
        }
        boost::system::error_code ignored;
        socket.set_option(tcp::no_delay(true), ignored);
        auto c = std::make_shared<connection>(strand, std::move(socket), *ctx,
                                              publish_hist[io_index].get());
        {
            std::lock_guard lock(mu);
            if (stopped) {
                co_return;
            }
            // Closed connections are pruned once the list doubled since the last prune: a
            // scan per accept would cost O(connections) each (quadratic with 10,000 clients).
            if (connections.size() >= prune_at) {
                prune_locked();
                prune_at = std::max<std::size_t>(64, 2 * connections.size());
            }
            connections.push_back(c);
        }
        c->start();
    }
}

void server::impl::prune_locked() {
    connections.remove_if([](const std::weak_ptr<connection>& w) {
        auto c = w.lock();
        return !c || c->finished();
    });
}

server::server(broker_options options, topic_backend& backend)
    : impl_(std::make_unique<impl>(std::move(options), backend)) {}

server::~server() {
    stop();
}

result<void> server::start() {
    auto& m = *impl_;
    if (auto r = listen_on(m.acceptor, m.options.bind_address, m.options.port); !r) {
        NEREUS_LOG(broker_log(), err, "cannot listen on {}:{}: {}", m.options.bind_address,
                   m.options.port, r.error().message());
        return r;
    }
    m.bound_port = m.acceptor.local_endpoint().port();
    std::string host =
        m.options.advertised_host.empty() ? m.options.bind_address : m.options.advertised_host;
    if (m.options.advertised_host.empty() &&
        m.acceptor.local_endpoint().address().is_unspecified()) {
        // Listening on every address: advertise the host name (Java standalone does too).
        char name[256] = {};
        host = ::gethostname(name, sizeof name - 1) == 0 && name[0] != 0 ? name : "127.0.0.1";
    }
    m.ctx = std::make_unique<broker_context>(
        broker_context{m.options, m.topics,
                       "pulsar://" + host + ":" + std::to_string(m.bound_port.load()), &m.pool});
    // A topic the backend lost (shared metadata, doc/ownership.md) is dropped on an io thread.
    m.backend.set_lost_handler([&m](const std::string& name) {
        asio::post(m.io, [&m, name] { m.topics.release_lost(name); });
    });
    for (auto& io : m.ios) {
        m.work.emplace_back(io->get_executor());
    }
    asio::co_spawn(m.io, m.accept_loop(), [](std::exception_ptr e) {
        if (e) {
            try {
                std::rethrow_exception(e);
            } catch (const std::exception& ex) {
                NEREUS_LOG(broker_log(), err, "accept loop failed: {}", ex.what());
            }
        }
    });
    const auto n = static_cast<unsigned>(m.ios.size());
    for (std::size_t i = 0; i < m.ios.size(); ++i) {
        m.threads.emplace_back([&io = *m.ios[i], i] {
            set_thread_name(fmt::format("nereus-io-{}", i));
            io.run();
        });
    }
    m.started = true;
    NEREUS_LOG(
        broker_log(), info, "broker listening on {}:{} ({} io threads, {} blocking-pool threads)",
        m.options.bind_address, m.bound_port.load(), n, std::max(1U, m.options.blocking_threads));
    return {};
}

void server::stop() {
    auto& m = *impl_;
    std::vector<std::shared_ptr<connection>> live;
    {
        std::lock_guard lock(m.mu);
        if (m.stopped) {
            return;
        }
        m.stopped = true;
        for (auto& w : m.connections) {
            if (auto c = w.lock()) {
                live.push_back(std::move(c));
            }
        }
    }
    m.backend.set_lost_handler({});
    if (m.started) {
        asio::post(m.io, [&m] {
            boost::system::error_code ec;
            m.acceptor.close(ec);
        });
        for (auto& c : live) {
            c->stop();
        }
        // Bounded wait for the connections to finish their in-flight work.
        const auto until =
            std::chrono::steady_clock::now() + m.options.stop_timeout + std::chrono::seconds(1);
        for (;;) {
            const bool all =
                std::all_of(live.begin(), live.end(), [](const auto& c) { return c->finished(); });
            if (all || std::chrono::steady_clock::now() >= until) {
                break;
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(2));
        }
        live.clear();
        // In-flight blocking-pool work (dispatch reads, opens of closing connections) finishes
        // while the io threads still run its completions; bounded by stop_timeout.
        if (!m.pool.drain(std::chrono::steady_clock::now() + m.options.stop_timeout)) {
            NEREUS_LOG(broker_log(), warn, "blocking pool still busy at stop ({} jobs)",
                       m.pool.in_flight());
        }
        m.work.clear();
        for (auto& io : m.ios) {
            io->stop();
        }
        for (auto& t : m.threads) {
            t.join();
        }
        m.threads.clear();
    }
    // Queued jobs are dropped; a running one (a bounded storage call) is joined before the
    // topic stores close under it.
    m.pool.stop();
    {
        std::lock_guard lock(m.mu);
        m.connections.clear();
    }
    m.topics.close_all();
    NEREUS_LOG(broker_log(), info, "broker stopped");
}

std::uint16_t server::port() const {
    return impl_->bound_port.load();
}

std::size_t server::connection_count() const {
    std::lock_guard lock(impl_->mu);
    impl_->prune_locked();
    return impl_->connections.size();
}

const broker_options& server::options() const {
    return impl_->options;
}

topic_registry& server::topics() {
    return impl_->topics;
}

std::string server::service_url() const {
    return impl_->ctx ? impl_->ctx->service_url : std::string();
}

latency_histogram::counts server::publish_latency() const {
    latency_histogram::counts sum;
    for (const auto& h : impl_->publish_hist) {
        sum += h->snapshot();
    }
    return sum;
}

}  // namespace nereus::broker
