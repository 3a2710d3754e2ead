#include "support/http_client.h"

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>
#include <boost/json/parse.hpp>
#include <sys/socket.h>
#include <sys/time.h>

namespace nereus::admin::test {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

boost::json::value http_reply::json() const {
    boost::system::error_code ec;
    auto v = boost::json::parse(body, ec);
    return ec ? boost::json::value() : v;
}

std::string http_reply::reason() const {
    auto v = json();
    if (!v.is_object()) {
        return {};
    }
    const auto* r = v.as_object().if_contains("reason");
    return r != nullptr && r->is_string() ? std::string(r->as_string()) : std::string();
}

struct http_client::impl {
    std::uint16_t port = 0;
    std::chrono::milliseconds timeout{};
    asio::io_context io;
    tcp::socket socket{io};
    beast::flat_buffer buffer;
    bool open = false;

    bool connect() {
        boost::system::error_code ec;
        socket = tcp::socket(io);
        socket.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), port), ec);
        if (ec) {
            return false;
        }
        timeval tv{};
        tv.tv_sec = static_cast<time_t>(timeout.count() / 1000);
        tv.tv_usec = static_cast<suseconds_t>((timeout.count() % 1000) * 1000);
        ::setsockopt(socket.native_handle(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        ::setsockopt(socket.native_handle(), SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
        buffer.clear();
        open = true;
        return true;
    }

    std::optional<http_reply> read_reply() {
        http::response_parser<http::string_body> parser;
        parser.body_limit(64 << 20);
        boost::system::error_code ec;
        http::read(socket, buffer, parser, ec);
        if (ec) {
            open = false;
            return std::nullopt;
        }
        auto res = parser.release();
        http_reply r;
        r.status = res.result_int();
        r.body = res.body();
        if (auto it = res.find(http::field::content_type); it != res.end()) {
            r.content_type = std::string(it->value());
        }
        r.keep_alive = res.keep_alive();
        if (!r.keep_alive) {
            open = false;
        }
        return r;
    }
};

http_client::http_client(std::unique_ptr<impl> i) : impl_(std::move(i)) {}
http_client::~http_client() = default;

std::unique_ptr<http_client> http_client::open(std::uint16_t port,
                                               std::chrono::milliseconds timeout) {
    auto i = std::make_unique<impl>();
    i->port = port;
    i->timeout = timeout;
    if (!i->connect()) {
        return nullptr;
    }
    return std::unique_ptr<http_client>(new http_client(std::move(i)));
}

std::optional<http_reply> http_client::request(std::string_view method,
                                               std::string_view target,
                                               std::string_view body,
                                               std::string_view content_type) {
    auto& m = *impl_;
    if (!m.open && !m.connect()) {
        return std::nullopt;
    }
    http::request<http::string_body> req{http::string_to_verb(method), target, 11};
    if (req.method() == http::verb::unknown) {
        req.method_string(method);
    }
    req.set(http::field::host, "127.0.0.1");
    req.keep_alive(true);
    if (!body.empty()) {
        req.set(http::field::content_type, content_type);
        req.body() = std::string(body);
    }
    req.prepare_payload();
    boost::system::error_code ec;
    http::write(m.socket, req, ec);
    if (ec) {
        m.open = false;
        return std::nullopt;
    }
    return m.read_reply();
}

std::optional<http_reply> http_client::raw(std::string_view bytes) {
    auto& m = *impl_;
    if (!m.open && !m.connect()) {
        return std::nullopt;
    }
    boost::system::error_code ec;
    asio::write(m.socket, asio::buffer(bytes.data(), bytes.size()), ec);
    if (ec) {
        m.open = false;
        return std::nullopt;
    }
    return m.read_reply();
}

bool http_client::wait_closed() {
    auto& m = *impl_;
    char c = 0;
    boost::system::error_code ec;
    m.socket.read_some(asio::buffer(&c, 1), ec);
    m.open = false;
    return ec == asio::error::eof || ec == asio::error::connection_reset;
}

}  // namespace nereus::admin::test
