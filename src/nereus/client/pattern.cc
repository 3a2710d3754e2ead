#include "nereus/client/pattern.h"

#include "nereus/client/errc.h"

#include <algorithm>
#include <cctype>

namespace nereus::client {

namespace {

constexpr std::string_view persistent = "persistent://";

bool literal(std::string_view s) {
    return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '-' || c == '_';
    });
}

std::string with_domain(std::string name) {
    if (!name.starts_with(persistent))
        name = std::string(persistent) + name;
    return name;
}

}  // namespace

result<std::string> pattern_namespace(std::string_view pattern) {
    if (!pattern.starts_with(persistent))
        return error(errc::invalid_argument);
    const auto rest = pattern.substr(persistent.size());
    const auto a = rest.find('/');
    if (a == std::string_view::npos)
        return error(errc::invalid_argument);
    const auto b = rest.find('/', a + 1);
    if (b == std::string_view::npos)
        return error(errc::invalid_argument);
    const auto tenant = rest.substr(0, a);
    const auto ns = rest.substr(a + 1, b - a - 1);
    if (!literal(tenant) || !literal(ns))
        return error(errc::invalid_argument);
    return std::string(rest.substr(0, b));
}

std::string partitioned_topic_of(std::string_view t) {
    const auto at = t.rfind("-partition-");
    if (at == std::string_view::npos)
        return std::string(t);
    const auto digits = t.substr(at + 11);
    if (digits.empty() ||
        !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; })) {
        return std::string(t);
    }
    return std::string(t.substr(0, at));
}

result<topic_pattern> topic_pattern::compile(std::string_view pattern) {
    auto ns = pattern_namespace(pattern);
    if (!ns)
        return error(ns.error());
    topic_pattern p;
    p.pattern_ = std::string(pattern);
    p.ns_ = std::move(*ns);
    try {
        p.re_ = std::regex(p.pattern_);
    } catch (const std::regex_error&) {
        return error(errc::invalid_argument);
    }
    return p;
}

bool topic_pattern::matches(std::string_view topic) const {
    return std::regex_match(with_domain(partitioned_topic_of(topic)), re_);
}

result<std::vector<std::string>> matching_topics(std::string_view pattern,
                                                 const std::vector<std::string>& listed) {
    std::regex re;
    try {
        re = std::regex(pattern.begin(), pattern.end());
    } catch (const std::regex_error&) {
        return error(errc::invalid_argument);
    }
    std::vector<std::string> out;
    for (const auto& t : listed) {
        std::string name = with_domain(partitioned_topic_of(t));
        if (std::find(out.begin(), out.end(), name) != out.end())
            continue;
        if (std::regex_match(name, re))
            out.push_back(std::move(name));
    }
    return out;
}

}  // namespace nereus::client
