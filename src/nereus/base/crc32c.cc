#include "nereus/base/crc32c.h"

#include <array>
#include <cstring>

#if defined(__x86_64__)
#include <nmmintrin.h>
#endif

namespace nereus::crc32c {
namespace {

constexpr std::uint32_t kPoly = 0x82f63b78;  // reversed Castagnoli polynomial

struct tables {
    std::array<std::array<std::uint32_t, 256>, 8> t{};
    constexpr tables() {
        for (std::uint32_t i = 0; i < 256; ++i) {
            std::uint32_t c = i;
            for (int k = 0; k < 8; ++k) {
                c = (c & 1) != 0 ? (c >> 1) ^ kPoly : c >> 1;
            }
            t[0][i] = c;
        }
        for (std::uint32_t i = 0; i < 256; ++i) {
            for (std::size_t s = 1; s < 8; ++s) {
                t[s][i] = (t[s - 1][i] >> 8) ^ t[0][t[s - 1][i] & 0xff];
            }
        }
    }
};
constexpr tables kTables;

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) std::uint32_t extend_sse42(std::uint32_t crc,
                                                             const void* data,
                                                             std::size_t n) {
    const auto* p = static_cast<const unsigned char*>(data);
    std::uint64_t c = ~crc;
    while (n >= 8) {
        std::uint64_t w = 0;
        std::memcpy(&w, p, 8);
        c = _mm_crc32_u64(c, w);
        p += 8;
        n -= 8;
    }
    auto c32 = static_cast<std::uint32_t>(c);
    while (n > 0) {
        c32 = _mm_crc32_u8(c32, *p);
        ++p;
        --n;
    }
    return ~c32;
}
#endif

using extend_fn = std::uint32_t (*)(std::uint32_t, const void*, std::size_t);

extend_fn choose() {
#if defined(__x86_64__)
    if (__builtin_cpu_supports("sse4.2")) {
        return &extend_sse42;
    }
#endif
    return &extend_portable;
}

const extend_fn kExtend = choose();

}  // namespace

std::uint32_t extend_portable(std::uint32_t crc, const void* data, std::size_t n) {
    const auto* p = static_cast<const unsigned char*>(data);
    std::uint32_t c = ~crc;
    const auto& t = kTables.t;
    while (n >= 8) {
        std::uint32_t lo = 0;
        std::uint32_t hi = 0;
        std::memcpy(&lo, p, 4);  // little-endian host assumed (x86_64, aarch64)
        std::memcpy(&hi, p + 4, 4);
        lo ^= c;
        c = t[7][lo & 0xff] ^ t[6][(lo >> 8) & 0xff] ^ t[5][(lo >> 16) & 0xff] ^ t[4][lo >> 24] ^
            t[3][hi & 0xff] ^ t[2][(hi >> 8) & 0xff] ^ t[1][(hi >> 16) & 0xff] ^ t[0][hi >> 24];
        p += 8;
        n -= 8;
    }
    while (n > 0) {
        c = t[0][(c ^ *p) & 0xff] ^ (c >> 8);
        ++p;
        --n;
    }
    return ~c;
}

std::uint32_t extend(std::uint32_t crc, const void* data, std::size_t n) {
    return kExtend(crc, data, n);
}

bool hardware_accelerated() {
    return kExtend != &extend_portable;
}

}  // namespace nereus::crc32c
