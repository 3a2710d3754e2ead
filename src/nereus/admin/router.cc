#include "nereus/admin/router.h"

namespace nereus::admin {

void router::add(std::string_view method, std::string_view pattern, route_handler h) {
    route_entry r;
    r.method = std::string(method);
    std::size_t pos = 0;
    while (pos < pattern.size()) {
        const auto slash = pattern.find('/', pos);
        const auto end = slash == std::string_view::npos ? pattern.size() : slash;
        if (end > pos) {
            r.segments.emplace_back(pattern.substr(pos, end - pos));
        }
        pos = end + 1;
    }
    r.handler = std::move(h);
    routes_.push_back(std::move(r));
}

bool router::match(const route_entry& r, const http_request& req, path_params& out) {
    if (r.segments.size() != req.path.size()) {
        return false;
    }
    out.clear();
    for (std::size_t i = 0; i < r.segments.size(); ++i) {
        const auto& s = r.segments[i];
        if (s.size() >= 2 && s.front() == '{' && s.back() == '}') {
            if (req.path[i].empty()) {
                return false;
            }
            out[s.substr(1, s.size() - 2)] = req.path[i];
        } else if (s != req.path[i]) {
            return false;
        }
    }
    return true;
}

http_response router::route(const http_request& req) const {
    bool path_known = false;
    path_params params;
    for (const auto& r : routes_) {
        if (!match(r, req, params)) {
            continue;
        }
        if (r.method == req.method) {
            return r.handler(req, params);
        }
        path_known = true;
    }
    if (path_known) {
        return error_response(405, "Method Not Allowed");
    }
    return error_response(404, "Not Found");
}

}  // namespace nereus::admin
