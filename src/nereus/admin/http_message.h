#pragma once

// The admin API's view of one HTTP exchange, independent of Beast: a parsed request (method,
// percent-decoded path segments, query parameters, body) and the response a handler returns
// (status, content type, body). Errors are JSON `{"reason": "..."}` as Pulsar's REST API sends.
//
// Thread-safety: plain values (thread-compatible).

#include <boost/json/value.hpp>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace nereus::admin {

struct http_request {
    std::string method;                        // "GET", "PUT", ...
    std::string target;                        // as received: path?query
    std::vector<std::string> path;             // decoded segments of the path
    std::map<std::string, std::string> query;  // decoded; a repeated key keeps the last value
    std::string body;
    std::string content_type;

    // Query parameter `key` is "true" (case-insensitive).
    bool flag(std::string_view key) const;
};

struct http_response {
    unsigned status = 200;
    std::string content_type = "application/json";
    std::string body;
};

// Splits `target` into decoded path segments and query parameters. False on a malformed
// percent-escape or a target that does not start with '/'.
[[nodiscard]] bool parse_target(std::string_view target, http_request& out);
// Percent-decoding ('+' is kept in paths; in queries it means a space). nullopt on bad escapes.
std::optional<std::string> percent_decode(std::string_view s, bool plus_is_space);

http_response json_response(unsigned status, const boost::json::value& v);
// 204 No Content (Pulsar's answer to most successful writes).
http_response no_content();
http_response text_response(unsigned status, std::string body, std::string content_type);
// {"reason": reason} with `status`.
http_response error_response(unsigned status, std::string_view reason);

}  // namespace nereus::admin
