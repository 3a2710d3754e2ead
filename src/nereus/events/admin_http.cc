#include "nereus/events/admin_http.h"

#include "nereus/events/errc.h"

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>
#include <sys/socket.h>
#include <sys/time.h>

namespace nereus::events::detail {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

struct admin_http::impl {
    std::string host;
    std::string port;
    asio::io_context io;
    tcp::socket socket{io};
    beast::flat_buffer buffer;
    bool open = false;

    void set_timeout(std::chrono::milliseconds timeout) {
        const auto ms = std::max<std::int64_t>(1, timeout.count());
        timeval tv{};
        tv.tv_sec = static_cast<time_t>(ms / 1000);
        tv.tv_usec = static_cast<suseconds_t>((ms % 1000) * 1000);
        ::setsockopt(socket.native_handle(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        ::setsockopt(socket.native_handle(), SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    }

    bool connect() {
        boost::system::error_code ec;
        tcp::resolver resolver(io);
        auto eps = resolver.resolve(host, port, ec);
        if (ec) {
            return false;
        }
        socket = tcp::socket(io);
        asio::connect(socket, eps, ec);
        if (ec) {
            return false;
        }
        buffer.clear();
        open = true;
        return true;
    }
};

admin_http::admin_http(std::unique_ptr<impl> i) : impl_(std::move(i)) {}
admin_http::~admin_http() = default;

result<std::unique_ptr<admin_http>> admin_http::open(const std::string& url) {
    std::string_view u = url;
    if (!u.starts_with("http://")) {
        return error(errc::invalid_argument);
    }
    u.remove_prefix(7);
    if (auto slash = u.find('/'); slash != std::string_view::npos) {
        u = u.substr(0, slash);
    }
    const auto colon = u.rfind(':');
    auto i = std::make_unique<impl>();
    if (colon == std::string_view::npos) {
        i->host = std::string(u);
        i->port = "80";
    } else {
        i->host = std::string(u.substr(0, colon));
        i->port = std::string(u.substr(colon + 1));
    }
    if (i->host.empty() || i->port.empty()) {
        return error(errc::invalid_argument);
    }
    return std::unique_ptr<admin_http>(new admin_http(std::move(i)));
}

result<http_reply> admin_http::request(std::string_view method,
                                       std::string_view target,
                                       std::string_view body,
                                       std::chrono::milliseconds timeout) {
    auto& m = *impl_;
    // One retry on a kept-alive connection the server may have closed meanwhile (only when
    // nothing of the request was written: a write error on a stale socket).
    for (int attempt = 0; attempt < 2; ++attempt) {
        if (!m.open && !m.connect()) {
            return error(errc::timeout);
        }
        m.set_timeout(timeout);
        http::request<http::string_body> req{http::string_to_verb(method), target, 11};
        req.set(http::field::host, m.host);
        req.keep_alive(true);
        if (!body.empty()) {
            req.set(http::field::content_type, "application/json");
            req.body() = std::string(body);
        }
        req.prepare_payload();
        boost::system::error_code ec;
        http::write(m.socket, req, ec);
        if (ec) {
            m.open = false;
            continue;
        }
        http::response_parser<http::string_body> parser;
        parser.body_limit(64 << 20);
        http::read(m.socket, m.buffer, parser, ec);
        if (ec) {
            m.open = false;
            if (ec == http::error::end_of_stream && attempt == 0 && m.buffer.size() == 0) {
                // Closed by the server before answering: the idle keep-alive connection was
                // dropped. The request may still have been applied, so only idempotent GETs
                // are retried.
                if (method == "GET") {
                    continue;
                }
            }
            return error(errc::timeout);
        }
        auto res = parser.release();
        if (!res.keep_alive()) {
            m.open = false;
        }
        return http_reply{res.result_int(), std::move(res.body())};
    }
    return error(errc::timeout);
}

std::string url_encode(std::string_view s) {
    static constexpr char hex[] = "0123456789ABCDEF";
    std::string out;
    for (unsigned char c : s) {
        if (std::isalnum(c) != 0 || c == '-' || c == '_' || c == '.' || c == '~') {
            out.push_back(static_cast<char>(c));
        } else {
            out.push_back('%');
            out.push_back(hex[c >> 4]);
            out.push_back(hex[c & 15]);
        }
    }
    return out;
}

}  // namespace nereus::events::detail
