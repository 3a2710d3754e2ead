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

// ---- multiplication modulo the polynomial (as zlib's crc32_combine) -----------------------------
// Reflected representation: bit 31 is the coefficient of x^0.
constexpr std::uint32_t multmodp(std::uint32_t a, std::uint32_t b) {
    if (a == 0) {
        return 0;
    }
    std::uint32_t m = std::uint32_t{1} << 31;
    std::uint32_t p = 0;
    for (;;) {
        if ((a & m) != 0) {
            p ^= b;
            if ((a & (m - 1)) == 0) {
                break;
            }
        }
        m >>= 1;
        b = (b & 1) != 0 ? (b >> 1) ^ kPoly : b >> 1;
    }
    return p;
}

// x^(2^k) modulo p(x), k = 0..31.
constexpr std::array<std::uint32_t, 32> make_x2n() {
    std::array<std::uint32_t, 32> t{};
    std::uint32_t p = std::uint32_t{1} << 30;  // x^1
    t[0] = p;
    for (std::size_t n = 1; n < 32; ++n) {
        p = multmodp(p, p);
        t[n] = p;
    }
    return t;
}
constexpr std::array<std::uint32_t, 32> kX2n = make_x2n();

// x^(n * 2^k) modulo p(x): the operator that advances a CRC over n zero bytes when k = 3.
constexpr std::uint32_t x2nmodp(std::size_t n, unsigned k) {
    std::uint32_t p = std::uint32_t{1} << 31;  // x^0
    while (n != 0) {
        if ((n & 1) != 0) {
            p = multmodp(kX2n[k & 31], p);
        }
        n >>= 1;
        ++k;
    }
    return p;
}

#if defined(__x86_64__)
// ---- three-way interleaved hardware CRC --------------------------------------------------------
// The crc32 instruction has a latency of 3 cycles and a throughput of 1 per cycle, so one
// dependency chain uses a third of the unit. Buffers of at least 3 x kShort bytes are cut into
// three adjacent blocks whose CRCs are computed in three independent chains and then combined:
// for the raw (not inverted) CRC register, crc(s, A || B) = shift_|B|(crc(s, A)) ^ crc(0, B),
// where shift_n advances a register over n zero bytes (a linear map over GF(2), applied here
// with four 256-entry tables per block length). The result is bit-for-bit the serial CRC
// (tests compare it with extend_portable() over many lengths and split points).
constexpr std::size_t kLong = 4096;  // bytes per chain, long blocks (3 x 4 KiB = 12 KiB)
constexpr std::size_t kShort = 256;  // bytes per chain, short blocks (3 x 256 B = 768 B)

// A 32 x 32 matrix over GF(2), column i = the image of bit i.
using gf2_matrix = std::array<std::uint32_t, 32>;

constexpr std::uint32_t gf2_times(const gf2_matrix& m, std::uint32_t v) {
    std::uint32_t sum = 0;
    for (int i = 0; v != 0; ++i, v >>= 1) {
        if ((v & 1) != 0) {
            sum ^= m[static_cast<std::size_t>(i)];
        }
    }
    return sum;
}

constexpr gf2_matrix gf2_product(const gf2_matrix& a, const gf2_matrix& b) {  // a after b
    gf2_matrix r{};
    for (std::size_t i = 0; i < 32; ++i) {
        r[i] = gf2_times(a, b[i]);
    }
    return r;
}

// The map of the raw CRC register over `n` zero bytes.
constexpr gf2_matrix zeros_operator(std::size_t n) {
    gf2_matrix one_byte{};
    for (std::size_t i = 0; i < 32; ++i) {
        const std::uint32_t s = std::uint32_t{1} << i;
        one_byte[i] = kTables.t[0][s & 0xff] ^ (s >> 8);
    }
    gf2_matrix result{};
    for (std::size_t i = 0; i < 32; ++i) {
        result[i] = std::uint32_t{1} << i;  // identity
    }
    gf2_matrix power = one_byte;
    for (; n != 0; n >>= 1) {
        if ((n & 1) != 0) {
            result = gf2_product(power, result);
        }
        power = gf2_product(power, power);
    }
    return result;
}

struct shift_tables {
    std::array<std::array<std::uint32_t, 256>, 4> t{};
    explicit shift_tables(std::size_t n) {
        const gf2_matrix op = zeros_operator(n);
        for (std::uint32_t i = 0; i < 256; ++i) {
            for (std::size_t k = 0; k < 4; ++k) {
                t[k][i] = gf2_times(op, i << (8 * k));
            }
        }
    }
    std::uint32_t shift(std::uint32_t crc) const {
        return t[0][crc & 0xff] ^ t[1][(crc >> 8) & 0xff] ^ t[2][(crc >> 16) & 0xff] ^
               t[3][crc >> 24];
    }
};

const shift_tables kShiftLong(kLong);
const shift_tables kShiftShort(kShort);

__attribute__((target("sse4.2"))) inline std::uint64_t load64(const unsigned char* p) {
    std::uint64_t w = 0;
    std::memcpy(&w, p, 8);
    return w;
}

// Three chains over [p, p+block), [p+block, p+2 block), [p+2 block, p+3 block); returns the
// raw register after all 3 x block bytes.
__attribute__((target("sse4.2"))) inline std::uint64_t three_way(std::uint64_t c0,
                                                                 const unsigned char* p,
                                                                 std::size_t block,
                                                                 const shift_tables& shift) {
    std::uint64_t c1 = 0;
    std::uint64_t c2 = 0;
    const unsigned char* end = p + block;
    do {
        c0 = _mm_crc32_u64(c0, load64(p));
        c1 = _mm_crc32_u64(c1, load64(p + block));
        c2 = _mm_crc32_u64(c2, load64(p + 2 * block));
        p += 8;
    } while (p < end);
    c0 = shift.shift(static_cast<std::uint32_t>(c0)) ^ c1;
    return shift.shift(static_cast<std::uint32_t>(c0)) ^ c2;
}

__attribute__((target("sse4.2"))) std::uint32_t extend_sse42(std::uint32_t crc,
                                                             const void* data,
                                                             std::size_t n) {
    const auto* p = static_cast<const unsigned char*>(data);
    std::uint64_t c = ~crc;
    while (n >= 3 * kLong) {
        c = three_way(c, p, kLong, kShiftLong);
        p += 3 * kLong;
        n -= 3 * kLong;
    }
    while (n >= 3 * kShort) {
        c = three_way(c, p, kShort, kShiftShort);
        p += 3 * kShort;
        n -= 3 * kShort;
    }
    while (n >= 8) {
        c = _mm_crc32_u64(c, load64(p));
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

std::uint32_t combine(std::uint32_t crc_a, std::uint32_t crc_b, std::size_t len_b) {
    return multmodp(x2nmodp(len_b, 3), crc_a) ^ crc_b;
}

shifter::shifter(std::size_t len_b) : len_(len_b) {
    const std::uint32_t op = x2nmodp(len_b, 3);
    for (std::uint32_t i = 0; i < 256; ++i) {
        for (unsigned k = 0; k < 4; ++k) {
            t_[k][i] = multmodp(op, i << (8 * k));
        }
    }
}

bool hardware_accelerated() {
    return kExtend != &extend_portable;
}

}  // namespace nereus::crc32c
