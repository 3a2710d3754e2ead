#include "nereus/broker/topic_name.h"

#include "nereus/proto/server_error.h"

#include <charconv>
#include <vector>

namespace nereus::broker {

namespace {

bool valid_part(std::string_view p) {
    if (p.empty() || p.size() > 255) {
        return false;
    }
    for (char c : p) {
        const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                        (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.' || c == '=' ||
                        c == ':' || c == '%';
        if (!ok) {
            return false;
        }
    }
    return true;
}

std::vector<std::string_view> split(std::string_view s, char sep) {
    std::vector<std::string_view> out;
    std::size_t start = 0;
    for (;;) {
        const auto i = s.find(sep, start);
        if (i == std::string_view::npos) {
            out.push_back(s.substr(start));
            return out;
        }
        out.push_back(s.substr(start, i - start));
        start = i + 1;
    }
}

}  // namespace

std::string topic_name::full() const {
    return domain + "://" + tenant + "/" + ns + "/" + local;
}

std::string topic_name::namespace_name() const {
    return tenant + "/" + ns;
}

result<topic_name> parse_topic_name(std::string_view s) {
    topic_name t;
    std::string_view rest = s;
    if (const auto i = s.find("://"); i != std::string_view::npos) {
        t.domain = std::string(s.substr(0, i));
        rest = s.substr(i + 3);
        if (t.domain != "persistent") {
            return nereus::error(proto::error_kind::invalid_topic_name);
        }
    } else {
        t.domain = "persistent";
    }
    const auto parts = split(rest, '/');
    if (parts.size() == 1 && s.find("://") == std::string_view::npos) {
        t.tenant = "public";
        t.ns = "default";
        t.local = std::string(parts[0]);
    } else if (parts.size() == 3) {
        t.tenant = std::string(parts[0]);
        t.ns = std::string(parts[1]);
        t.local = std::string(parts[2]);
    } else {
        return nereus::error(proto::error_kind::invalid_topic_name);
    }
    if (!valid_part(t.tenant) || !valid_part(t.ns) || !valid_part(t.local)) {
        return nereus::error(proto::error_kind::invalid_topic_name);
    }
    constexpr std::string_view suffix = "-partition-";
    if (const auto i = t.local.rfind(suffix); i != std::string::npos && i > 0) {
        const std::string_view num = std::string_view(t.local).substr(i + suffix.size());
        std::uint32_t n = 0;
        const auto [p, ec] = std::from_chars(num.data(), num.data() + num.size(), n);
        if (ec == std::errc() && p == num.data() + num.size() && !num.empty()) {
            t.partition = n;
        }
    }
    return t;
}

}  // namespace nereus::broker
