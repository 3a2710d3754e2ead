#pragma once

// Test helpers for the scanners' rapidcheck properties: one arbitrary corruption of a byte
// string, drawn inside a property (uses rapidcheck's generators), the varint values they draw,
// and a string's bytes.

#include <cstddef>
#include <cstdint>
#include <rapidcheck.h>
#include <string>
#include <vector>

namespace nereus::proto::test {

inline std::vector<std::byte> to_bytes(const std::string& s) {
    const auto* p = reinterpret_cast<const std::byte*>(s.data());
    return {p, p + s.size()};
}

// Values that exercise every varint length, including the 10-byte ones the scanners leave to
// protobuf.
inline rc::Gen<std::uint64_t> gen_u64() {
    return rc::gen::oneOf(
        rc::gen::arbitrary<std::uint64_t>(), rc::gen::inRange<std::uint64_t>(0, 300),
        rc::gen::element<std::uint64_t>(0, 127, 128, 16383, 16384, (std::uint64_t{1} << 63) - 1,
                                        std::uint64_t{1} << 63, ~std::uint64_t{0}));
}

// Any of: flip one byte, truncate, insert a random byte, append random bytes.
inline std::vector<std::byte> corrupt(std::vector<std::byte> b) {
    const int how = *rc::gen::inRange(0, 4);
    const auto at = b.empty() ? 0 : *rc::gen::inRange<std::size_t>(0, b.size());
    const auto v = static_cast<std::byte>(*rc::gen::arbitrary<std::uint8_t>());
    switch (how) {
        case 0:
            if (!b.empty()) {
                b[at] ^= static_cast<std::byte>(*rc::gen::inRange(1, 256));
            }
            break;
        case 1:
            b.resize(at);
            break;
        case 2:
            b.insert(b.begin() + static_cast<std::ptrdiff_t>(at), v);
            break;
        default:
            for (const auto x : *rc::gen::container<std::vector<std::uint8_t>>(
                     *rc::gen::inRange(1, 12), rc::gen::arbitrary<std::uint8_t>())) {
                b.push_back(static_cast<std::byte>(x));
            }
            break;
    }
    return b;
}

}  // namespace nereus::proto::test
