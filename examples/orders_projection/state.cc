#include "state.h"

#include <fmt/format.h>

namespace orders {

std::vector<std::string> lines(const state& s) {
    std::vector<std::string> out;
    out.reserve(s.size());
    for (const auto& [id, json] : s) {
        out.push_back(json);
    }
    return out;
}

std::string digest(const state& s) {
    std::uint64_t h = 14695981039346656037ULL;  // FNV-1a 64
    auto mix = [&h](unsigned char c) {
        h ^= c;
        h *= 1099511628211ULL;
    };
    for (const auto& [id, json] : s) {
        for (const char c : json) {
            mix(static_cast<unsigned char>(c));
        }
        mix('\n');
    }
    return fmt::format("{:016x}", h);
}

std::vector<std::string> differences(const state& projection,
                                     const state& source,
                                     std::size_t limit) {
    std::vector<std::string> out;
    auto p = projection.begin();
    auto s = source.begin();
    while ((p != projection.end() || s != source.end()) && out.size() < limit) {
        if (s == source.end() || (p != projection.end() && p->first < s->first)) {
            out.push_back(fmt::format("extra in projection: {}", p->second));
            ++p;
        } else if (p == projection.end() || s->first < p->first) {
            out.push_back(fmt::format("missing in projection: {}", s->second));
            ++s;
        } else {
            if (p->second != s->second) {
                out.push_back(
                    fmt::format("differs: projection {} source {}", p->second, s->second));
            }
            ++p;
            ++s;
        }
    }
    return out;
}

}  // namespace orders
