#pragma once

// A minimal, blocking HTTP/1.1 client for admin tests, on Boost.Beast: one keep-alive
// connection to 127.0.0.1:port, every read bounded by a socket receive timeout. Not a general
// client: no redirects, no TLS, no chunked request bodies.
// Thread-safety: thread-compatible (one test thread).

#include <boost/json/value.hpp>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace nereus::admin::test {

struct http_reply {
    unsigned status = 0;
    std::string body;
    std::string content_type;
    bool keep_alive = false;

    // The body parsed as JSON (null when it is not JSON).
    boost::json::value json() const;
    // The "reason" of a JSON error body ("" if none).
    std::string reason() const;
};

class http_client {
public:
    // Connects to 127.0.0.1:port; nullptr on failure.
    static std::unique_ptr<http_client> open(
        std::uint16_t port, std::chrono::milliseconds timeout = std::chrono::seconds(10));
    ~http_client();
    http_client(const http_client&) = delete;
    http_client& operator=(const http_client&) = delete;

    // One request on the kept-alive connection (reconnecting first if the server closed it).
    // nullopt on a transport error or timeout.
    std::optional<http_reply> request(std::string_view method,
                                      std::string_view target,
                                      std::string_view body = {},
                                      std::string_view content_type = "application/json");
    std::optional<http_reply> get(std::string_view target) { return request("GET", target); }
    std::optional<http_reply> put(std::string_view target, std::string_view body = {}) {
        return request("PUT", target, body);
    }
    std::optional<http_reply> post(std::string_view target, std::string_view body = {}) {
        return request("POST", target, body);
    }
    std::optional<http_reply> del(std::string_view target) { return request("DELETE", target); }

    // Raw bytes, then the server's reply (nullopt when it closed without one).
    std::optional<http_reply> raw(std::string_view bytes);
    // True when the server closed the connection within the timeout.
    bool wait_closed();

private:
    struct impl;
    explicit http_client(std::unique_ptr<impl> i);
    std::unique_ptr<impl> impl_;
};

}  // namespace nereus::admin::test
