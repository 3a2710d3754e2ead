#pragma once

// Test helpers: hex <-> bytes, and decoding a whole buffer into frames.

#include "nereus/proto/frame_decoder.h"

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace nereus::proto::test {

// "00 0a ff" (spaces and '|' ignored) -> bytes.
inline std::vector<std::byte> hex(std::string_view s) {
    std::vector<std::byte> out;
    int hi = -1;
    for (char c : s) {
        int v = -1;
        if (c >= '0' && c <= '9') {
            v = c - '0';
        } else if (c >= 'a' && c <= 'f') {
            v = c - 'a' + 10;
        } else if (c >= 'A' && c <= 'F') {
            v = c - 'A' + 10;
        } else {
            continue;
        }
        if (hi < 0) {
            hi = v;
        } else {
            out.push_back(std::byte(hi * 16 + v));
            hi = -1;
        }
    }
    return out;
}

inline std::string to_hex(std::span<const std::byte> b) {
    static constexpr char digits[] = "0123456789abcdef";
    std::string out;
    for (std::size_t i = 0; i < b.size(); ++i) {
        if (i > 0) {
            out += ' ';
        }
        const auto v = static_cast<unsigned>(b[i]);
        out += digits[v >> 4];
        out += digits[v & 15];
    }
    return out;
}

inline std::vector<std::byte> bytes_of(std::string_view s) {
    const auto* p = reinterpret_cast<const std::byte*>(s.data());
    return {p, p + s.size()};
}

inline std::string string_of(std::span<const std::byte> b) {
    return {reinterpret_cast<const char*>(b.data()), b.size()};
}

// Decodes exactly one complete frame from `wire`; fails the test otherwise.
inline frame_view decode_one(frame_decoder& d, std::span<const std::byte> wire) {
    auto r = d.decode(wire);
    EXPECT_TRUE(r.has_value()) << (r ? "" : r.error().message());
    if (!r) {
        return {};
    }
    EXPECT_TRUE(r->complete);
    EXPECT_EQ(r->frame.size, wire.size());
    return r->frame;
}

}  // namespace nereus::proto::test
