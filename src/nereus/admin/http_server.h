#pragma once

// A small HTTP/1.1 server on Boost.Beast and Asio C++20 coroutines, for the admin REST API.
//
// One io_context run by `threads` threads; each accepted connection is a coroutine on its own
// strand: read a request (header at most 16 KiB, body at most max_body_bytes, else 413 and
// close; the whole request within read_timeout, else the connection is closed), call the
// handler synchronously, write the response, and loop while the client keeps the connection
// alive (an idle keep-alive connection is closed after idle_timeout). A malformed request gets
// 400 and the connection is closed.
//
// The handler runs on an io thread of this server (never on the broker's): it may block on
// storage and metadata calls, which is why admin traffic has its own threads.
//
// Ownership: owns the io_context, the acceptor, the threads and every connection; the handler
//   is copied in and must stay valid until stop() returns.
// Thread-safety: start() and stop() from one controlling thread; port() is thread-safe; the
//   handler is called concurrently from several threads.
// Durability: none of its own; a response is written after the handler returned, so whatever
//   the handler made durable before returning is durable when the client reads the answer.

#include "nereus/admin/http_message.h"
#include "nereus/base/result.h"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace nereus::admin {

struct http_server_options {
    std::string bind_address = "127.0.0.1";
    std::uint16_t port = 8080;  // 0: pick a free port (tests); port() tells which
    unsigned threads = 2;
    std::size_t max_body_bytes = std::size_t{1} << 20;  // larger bodies: 413
    std::size_t max_header_bytes = std::size_t{16} << 10;
    std::chrono::milliseconds read_timeout{10'000};  // one request, from its first byte
    std::chrono::milliseconds idle_timeout{60'000};  // keep-alive without a request
    std::chrono::milliseconds write_timeout{10'000};
    // Graceful stop: how long requests in progress may take to be answered.
    std::chrono::milliseconds stop_timeout{5'000};
};

using http_handler = std::function<http_response(const http_request&)>;

class http_server {
public:
    http_server(http_server_options options, http_handler handler);
    http_server(const http_server&) = delete;
    http_server& operator=(const http_server&) = delete;
    http_server(http_server&&) = delete;
    http_server& operator=(http_server&&) = delete;
    // Stops if still running.
    ~http_server();

    // Binds, listens and starts the threads. Errors: the bind/listen error.
    [[nodiscard]] result<void> start();
    // Graceful: stop accepting, close idle connections, let requests in progress be answered
    // (bounded by stop_timeout), join the threads. Idempotent.
    void stop();

    std::uint16_t port() const;

private:
    struct impl;
    std::unique_ptr<impl> impl_;
};

}  // namespace nereus::admin
