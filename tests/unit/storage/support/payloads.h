#pragma once

// Deterministic test payloads: payload(stream, seq, size) is reproducible, so a test can check
// any entry read back against what was appended.

#include "nereus/base/file_system.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace nereus::storage::testing {

inline std::vector<std::byte> payload(std::uint64_t stream, std::uint64_t seq, std::size_t size) {
    std::vector<std::byte> p(size);
    std::uint64_t x = (stream + 1) * 0x9e3779b97f4a7c15ULL ^ (seq + 1) * 0xbf58476d1ce4e5b9ULL;
    for (std::size_t i = 0; i < size; ++i) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        p[i] = static_cast<std::byte>(x);
    }
    return p;
}

inline std::vector<std::byte> bytes_of(const std::string& s) {
    std::vector<std::byte> b(s.size());
    for (std::size_t i = 0; i < s.size(); ++i) {
        b[i] = static_cast<std::byte>(s[i]);
    }
    return b;
}

inline std::string string_of(bytes_view b) {
    return {reinterpret_cast<const char*>(b.data()), b.size()};
}

}  // namespace nereus::storage::testing
