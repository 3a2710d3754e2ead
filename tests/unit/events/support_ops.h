#pragma once

// The deterministic EVENT stream of the projection crash tests: event n (n >= 1) upserts
// k<n % 7> = v<n>, and every 5th event instead removes k<(n + 3) % 7>. fold() is what a
// projection holds after the bootstrap image and events 1..n.

#include "nereus/events/projection_repository.h"

#include <map>
#include <string>
#include <vector>

namespace nereus::events::test {

inline std::string numbered(const char* prefix, std::uint64_t n) {
    std::string s(prefix);
    s.append(std::to_string(n));
    return s;
}

struct event {
    operation op;
    std::string payload;
};

inline event event_at(std::uint64_t n) {
    if (n % 5 == 0) {
        return event{operation{operation::kind::remove, numbered("k", (n + 3) % 7)}, {}};
    }
    return event{operation{operation::kind::upsert, numbered("k", n % 7)}, numbered("v", n)};
}

inline std::vector<row> bootstrap_image() {
    return {row{"k0", "boot"}, row{"k3", "boot"}, row{"z", "boot"}};
}

inline std::vector<row> fold(std::uint64_t through) {
    std::map<std::string, std::string> m;
    for (const auto& r : bootstrap_image()) {
        m[r.key] = r.value;
    }
    for (std::uint64_t n = 1; n <= through; ++n) {
        const auto e = event_at(n);
        if (e.op.what == operation::kind::upsert) {
            m[e.op.key] = e.payload;
        } else {
            m.erase(e.op.key);
        }
    }
    std::vector<row> out;
    for (auto& [k, v] : m) {
        out.push_back(row{k, v});
    }
    return out;
}

inline std::span<const std::byte> bytes_of(const std::string& s) {
    return std::as_bytes(std::span(s.data(), s.size()));
}

}  // namespace nereus::events::test
