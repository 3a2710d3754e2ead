#pragma once

// Maps (method, path) to a handler. Patterns are '/'-separated; a `{name}` segment captures
// one decoded path segment. The first route (in registration order) whose pattern and method
// match wins, so literal routes are registered before the captures they shadow. A path that
// matches some pattern but none with this method gets 405; no pattern at all, 404.
//
// Ownership: owns its routes; handlers are copied in.
// Thread-safety: add() before serving; route() is then thread-safe (read-only).

#include "nereus/admin/http_message.h"

#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace nereus::admin {

using path_params = std::map<std::string, std::string, std::less<>>;
using route_handler = std::function<http_response(const http_request&, const path_params&)>;

class router {
public:
    void add(std::string_view method, std::string_view pattern, route_handler h);
    // Runs the matching handler, or answers 404 / 405 as JSON errors.
    http_response route(const http_request& req) const;

private:
    struct route_entry {
        std::string method;
        std::vector<std::string> segments;  // "{x}" captures
        route_handler handler;
    };
    static bool match(const route_entry& r, const http_request& req, path_params& out);
    std::vector<route_entry> routes_;
};

}  // namespace nereus::admin
