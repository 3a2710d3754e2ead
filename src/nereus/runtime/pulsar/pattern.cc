#include "nereus/runtime/pulsar/pattern.h"

#include "nereus/runtime/errc.h"

#include <algorithm>
#include <cctype>
#include <regex>

namespace nereus::runtime::pulsar {

namespace {
constexpr std::string_view persistent = "persistent://";

bool literal(std::string_view s) {
    return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '-' || c == '_';
    });
}

// "...-partition-N" -> "...", anything else unchanged.
std::string base_name(const std::string& t) {
    const auto at = t.rfind("-partition-");
    if (at == std::string::npos) return t;
    const auto digits = std::string_view(t).substr(at + 11);
    if (digits.empty() || !std::all_of(digits.begin(), digits.end(),
                                       [](char c) { return c >= '0' && c <= '9'; })) {
        return t;
    }
    return t.substr(0, at);
}
}  // namespace

result<std::string> pattern_namespace(std::string_view pattern) {
    if (!pattern.starts_with(persistent)) return error(errc::invalid_spec);
    const auto rest = pattern.substr(persistent.size());
    const auto a = rest.find('/');
    if (a == std::string_view::npos) return error(errc::invalid_spec);
    const auto b = rest.find('/', a + 1);
    if (b == std::string_view::npos) return error(errc::invalid_spec);
    const auto tenant = rest.substr(0, a);
    const auto ns = rest.substr(a + 1, b - a - 1);
    if (!literal(tenant) || !literal(ns)) return error(errc::invalid_spec);
    return std::string(rest.substr(0, b));
}

result<std::vector<std::string>> matching_topics(std::string_view pattern,
                                                 const std::vector<std::string>& listed) {
    std::regex re;
    try {
        re = std::regex(pattern.begin(), pattern.end());
    } catch (const std::regex_error&) {
        return error(errc::invalid_spec);
    }
    std::vector<std::string> out;
    for (const auto& t : listed) {
        std::string name = base_name(t);
        if (!name.starts_with(persistent)) name = std::string(persistent) + name;
        if (std::find(out.begin(), out.end(), name) != out.end()) continue;
        if (std::regex_match(name, re)) out.push_back(std::move(name));
    }
    return out;
}

}  // namespace nereus::runtime::pulsar
