#include "nereus/admin/http_message.h"

#include <boost/json/serialize.hpp>
#include <cctype>

namespace nereus::admin {

namespace {

int hex(char c) {
    if (c >= '0' && c <= '9') {
        return c - '0';
    }
    if (c >= 'a' && c <= 'f') {
        return c - 'a' + 10;
    }
    if (c >= 'A' && c <= 'F') {
        return c - 'A' + 10;
    }
    return -1;
}

}  // namespace

bool http_request::flag(std::string_view key) const {
    const auto it = query.find(std::string(key));
    if (it == query.end()) {
        return false;
    }
    std::string v;
    for (char c : it->second) {
        v += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
    return v == "true";
}

std::optional<std::string> percent_decode(std::string_view s, bool plus_is_space) {
    std::string out;
    out.reserve(s.size());
    for (std::size_t i = 0; i < s.size(); ++i) {
        const char c = s[i];
        if (c == '%') {
            if (i + 2 >= s.size()) {
                return std::nullopt;
            }
            const int hi = hex(s[i + 1]);
            const int lo = hex(s[i + 2]);
            if (hi < 0 || lo < 0) {
                return std::nullopt;
            }
            out += static_cast<char>(hi * 16 + lo);
            i += 2;
        } else if (c == '+' && plus_is_space) {
            out += ' ';
        } else {
            out += c;
        }
    }
    return out;
}

bool parse_target(std::string_view target, http_request& out) {
    if (target.empty() || target.front() != '/') {
        return false;
    }
    out.target = std::string(target);
    std::string_view path = target;
    std::string_view query;
    if (const auto q = target.find('?'); q != std::string_view::npos) {
        path = target.substr(0, q);
        query = target.substr(q + 1);
    }
    out.path.clear();
    std::size_t pos = 1;
    while (pos <= path.size()) {
        const auto slash = path.find('/', pos);
        const auto end = slash == std::string_view::npos ? path.size() : slash;
        const auto seg = path.substr(pos, end - pos);
        if (!seg.empty()) {
            auto d = percent_decode(seg, false);
            if (!d) {
                return false;
            }
            out.path.push_back(std::move(*d));
        }
        pos = end + 1;
    }
    out.query.clear();
    while (!query.empty()) {
        const auto amp = query.find('&');
        const auto part = query.substr(0, amp);
        query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
        if (part.empty()) {
            continue;
        }
        const auto eq = part.find('=');
        auto k = percent_decode(part.substr(0, eq), true);
        auto v = percent_decode(
            eq == std::string_view::npos ? std::string_view() : part.substr(eq + 1), true);
        if (!k || !v) {
            return false;
        }
        out.query[std::move(*k)] = std::move(*v);
    }
    return true;
}

http_response json_response(unsigned status, const boost::json::value& v) {
    return http_response{status, "application/json", boost::json::serialize(v)};
}

http_response no_content() {
    return http_response{204, "", ""};
}

http_response text_response(unsigned status, std::string body, std::string content_type) {
    return http_response{status, std::move(content_type), std::move(body)};
}

http_response error_response(unsigned status, std::string_view reason) {
    boost::json::object o;
    o["reason"] = reason;
    return json_response(status, o);
}

}  // namespace nereus::admin
