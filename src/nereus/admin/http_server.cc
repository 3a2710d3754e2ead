#include "nereus/admin/http_server.h"

#include "nereus/admin/logger.h"
#include "nereus/base/thread_name.h"
#include "nereus/broker/listen.h"

#include <fmt/format.h>

#include <atomic>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/string.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>
#include <list>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

namespace nereus::admin {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

namespace {

// One connection's state shared between its coroutine and stop().
struct conn {
    explicit conn(tcp::socket s) : stream(std::move(s)) {}
    beast::tcp_stream stream;
    bool idle = false;  // waiting for a request (strand-confined): stop() may close it
};

http::response<http::string_body> to_beast(const http_response& r, unsigned version, bool keep) {
    http::response<http::string_body> res{static_cast<http::status>(r.status), version};
    res.set(http::field::server, "Nereus");
    if (!r.content_type.empty()) {
        res.set(http::field::content_type, r.content_type);
    }
    res.body() = r.body;
    res.keep_alive(keep);
    res.prepare_payload();
    return res;
}

}  // namespace

// Coroutines never own the impl: stop() joins every thread before the impl goes, and the
// io_context (a member) destroys the suspended coroutine frames with it.
struct http_server::impl {
    impl(http_server_options o, http_handler h)
        : options(std::move(o)), handler(std::move(h)), acceptor(io) {}

    asio::awaitable<void> accept_loop();
    asio::awaitable<void> session(std::shared_ptr<conn> c);
    http_response handle(const http::request<http::string_body>& req);

    http_server_options options;
    http_handler handler;
    asio::io_context io;
    tcp::acceptor acceptor;
    std::atomic<std::uint16_t> bound_port{0};
    std::vector<std::thread> threads;
    std::optional<asio::executor_work_guard<asio::io_context::executor_type>> work;
    std::atomic<bool> stopping{false};
    std::atomic<int> active{0};

    std::mutex mu;
    std::list<std::weak_ptr<conn>> conns;  // guarded by mu
    bool started = false;
    bool stopped = false;
};

http_response http_server::impl::handle(const http::request<http::string_body>& req) {
    http_request r;
    r.method = std::string(req.method_string());
    if (!parse_target(req.target(), r)) {
        return error_response(400, "Malformed request target");
    }
    r.body = req.body();
    if (auto it = req.find(http::field::content_type); it != req.end()) {
        r.content_type = std::string(it->value());
    }
    try {
        // Handlers return errors as values; this only guards the connection against a bug or
        // an allocation failure inside one.
        return handler(r);
    } catch (const std::exception& e) {
        NEREUS_LOG(admin_log(), err, "admin handler failed target={} error={}", r.target, e.what());
        return error_response(500, "Internal server error");
    }
}

asio::awaitable<void> http_server::impl::session(std::shared_ptr<conn> c) {
    constexpr auto tok = asio::as_tuple(asio::use_awaitable);
    beast::flat_buffer buffer;
    for (;;) {
        if (stopping.load()) {
            break;
        }
        http::request_parser<http::string_body> parser;
        parser.header_limit(static_cast<std::uint32_t>(options.max_header_bytes));
        parser.body_limit(options.max_body_bytes);
        // Idle (keep-alive, nothing buffered): idle_timeout until the first byte of the next
        // request; from then on read_timeout for the header and again for the body. (Waiting
        // for the whole header under idle_timeout let a client trickling a request one byte at
        // a time hold the connection for idle_timeout instead of read_timeout.)
        if (buffer.size() == 0) {
            c->idle = true;
            c->stream.expires_after(options.idle_timeout);
            auto [fec, fn] = co_await c->stream.async_read_some(buffer.prepare(4096), tok);
            if (fec) {
                break;  // closed by the peer, idle timeout, or stop()
            }
            buffer.commit(fn);
        }
        c->idle = false;
        c->stream.expires_after(options.read_timeout);
        auto [ec, n] = co_await http::async_read_header(c->stream, buffer, parser, tok);
        (void)n;
        if (!ec && !parser.is_done()) {
            c->stream.expires_after(options.read_timeout);
            // curl asks before sending a body over 1 KiB; answer at once instead of letting it
            // wait for its own timeout.
            if (beast::iequals(parser.get()[http::field::expect], "100-continue")) {
                http::response<http::empty_body> cont{http::status::continue_, 11};
                auto [cec, cn] = co_await http::async_write(c->stream, cont, tok);
                (void)cn;
                if (cec) {
                    ec = cec;
                }
            }
        }
        if (!ec && !parser.is_done()) {
            auto [ec2, n2] = co_await http::async_read(c->stream, buffer, parser, tok);
            (void)n2;
            ec = ec2;
        }
        if (ec) {
            const bool http_error =
                ec.category() == http::make_error_code(http::error::bad_target).category();
            std::optional<http_response> answer;
            if (ec == http::error::body_limit) {
                answer = error_response(413, "Request body too large");
            } else if (ec == http::error::header_limit) {
                answer = error_response(431, "Request header too large");
            } else if (http_error && ec != http::error::end_of_stream &&
                       ec != http::error::partial_message) {
                answer = error_response(400, "Malformed HTTP request");
            }
            if (answer) {
                auto res = to_beast(*answer, 11, false);
                c->stream.expires_after(options.write_timeout);
                co_await http::async_write(c->stream, res, tok);
            }
            break;
        }
        auto req = parser.release();
        const bool keep = req.keep_alive() && !stopping.load();
        auto res = to_beast(handle(req), req.version(), keep);
        c->stream.expires_after(options.write_timeout);
        auto [wec, wn] = co_await http::async_write(c->stream, res, tok);
        (void)wn;
        if (wec || !keep) {
            break;
        }
    }
    beast::error_code ignored;
    c->stream.socket().shutdown(tcp::socket::shutdown_send, ignored);
    c->stream.close();
    --active;
}

asio::awaitable<void> http_server::impl::accept_loop() {
    constexpr auto tok = asio::as_tuple(asio::use_awaitable);
    for (;;) {
        auto strand = asio::make_strand(io);
        tcp::socket socket(strand);
        auto [ec] = co_await acceptor.async_accept(socket, tok);
        if (ec) {
            if (ec == asio::error::operation_aborted || !acceptor.is_open() || stopping.load()) {
                co_return;
            }
            NEREUS_LOG(admin_log(), warn, "admin accept failed: {}", ec.message());
            continue;
        }
        auto c = std::make_shared<conn>(std::move(socket));
        {
            std::lock_guard lock(mu);
            if (stopped) {
                co_return;
            }
            conns.remove_if([](const std::weak_ptr<conn>& w) { return w.expired(); });
            conns.push_back(c);
        }
        ++active;
        asio::co_spawn(strand, session(c), [](std::exception_ptr e) {
            if (e) {
                try {
                    std::rethrow_exception(e);
                } catch (const std::exception& ex) {
                    NEREUS_LOG(admin_log(), err, "admin connection failed: {}", ex.what());
                }
            }
        });
    }
}

http_server::http_server(http_server_options options, http_handler handler)
    : impl_(std::make_unique<impl>(std::move(options), std::move(handler))) {}

http_server::~http_server() {
    stop();
}

result<void> http_server::start() {
    auto& m = *impl_;
    if (auto r = broker::listen_on(m.acceptor, m.options.bind_address, m.options.port); !r) {
        NEREUS_LOG(admin_log(), err, "cannot listen on {}:{}: {}", m.options.bind_address,
                   m.options.port, r.error().message());
        return r;
    }
    m.bound_port = m.acceptor.local_endpoint().port();
    m.work.emplace(m.io.get_executor());
    asio::co_spawn(m.io, m.accept_loop(), [](std::exception_ptr e) {
        if (e) {
            try {
                std::rethrow_exception(e);
            } catch (const std::exception& ex) {
                NEREUS_LOG(admin_log(), err, "admin accept loop failed: {}", ex.what());
            }
        }
    });
    const unsigned n = std::max(1U, m.options.threads);
    for (unsigned i = 0; i < n; ++i) {
        m.threads.emplace_back([&io = m.io, i] {
            set_thread_name(fmt::format("nereus-http-{}", i));
            io.run();
        });
    }
    m.started = true;
    NEREUS_LOG(admin_log(), info, "admin HTTP listening on {}:{}", m.options.bind_address,
               m.bound_port.load());
    return {};
}

void http_server::stop() {
    auto& m = *impl_;
    std::vector<std::shared_ptr<conn>> live;
    {
        std::lock_guard lock(m.mu);
        if (m.stopped) {
            return;
        }
        m.stopped = true;
        for (auto& w : m.conns) {
            if (auto c = w.lock()) {
                live.push_back(std::move(c));
            }
        }
        m.conns.clear();
    }
    m.stopping = true;
    if (m.started) {
        asio::post(m.io, [&m] {
            boost::system::error_code ec;
            m.acceptor.close(ec);
        });
        // Idle connections are closed now; the others finish their request and then close.
        for (auto& c : live) {
            asio::post(c->stream.get_executor(), [c] {
                if (c->idle) {
                    c->stream.cancel();
                }
            });
        }
        live.clear();
        const auto until = std::chrono::steady_clock::now() + m.options.stop_timeout;
        while (m.active.load() > 0 && std::chrono::steady_clock::now() < until) {
            std::this_thread::sleep_for(std::chrono::milliseconds(2));
        }
        m.work.reset();
        m.io.stop();
        for (auto& t : m.threads) {
            t.join();
        }
        m.threads.clear();
    }
    NEREUS_LOG(admin_log(), info, "admin HTTP stopped");
}

std::uint16_t http_server::port() const {
    return impl_->bound_port.load();
}

}  // namespace nereus::admin
