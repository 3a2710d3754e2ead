#pragma once

// A minimal blocking HTTP/1.1 client for the broker's admin REST API (internal to events/):
// one keep-alive connection per instance to the host:port of an "http://host:port" URL, each
// request bounded by a deadline (socket send/receive timeouts). No TLS, no redirects.
//
// A transport failure or a timeout is errc::timeout: the request may or may not have been
// applied (callers never read it as a refusal or as expiry). HTTP statuses are returned as
// values for the caller to interpret.
//
// Ownership: owns its socket. Thread-safety: thread-compatible (callers serialise).

#include "nereus/base/result.h"

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace nereus::events::detail {

struct http_reply {
    unsigned status = 0;
    std::string body;
};

class admin_http {
public:
    // Errors: invalid_argument (not an http://host:port URL).
    [[nodiscard]] static result<std::unique_ptr<admin_http>> open(const std::string& url);
    ~admin_http();
    admin_http(const admin_http&) = delete;
    admin_http& operator=(const admin_http&) = delete;

    [[nodiscard]] result<http_reply> request(std::string_view method,
                                             std::string_view target,
                                             std::string_view body,
                                             std::chrono::milliseconds timeout);

    struct impl;

private:
    explicit admin_http(std::unique_ptr<impl> i);
    std::unique_ptr<impl> impl_;
};

// Percent-encodes one path segment or query value.
std::string url_encode(std::string_view s);

}  // namespace nereus::events::detail
