#include "nereus/base/crc32c.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace nereus {
namespace {

TEST(Crc32c, KnownVectors) {
    // RFC 3720 (iSCSI) test vectors.
    const std::string digits = "123456789";
    EXPECT_EQ(crc32c::value(digits.data(), digits.size()), 0xE3069283U);
    std::vector<unsigned char> zeros(32, 0);
    EXPECT_EQ(crc32c::value(zeros.data(), zeros.size()), 0x8A9136AAU);
    std::vector<unsigned char> ones(32, 0xff);
    EXPECT_EQ(crc32c::value(ones.data(), ones.size()), 0x62A8AB43U);
    std::vector<unsigned char> inc(32);
    for (int i = 0; i < 32; ++i) {
        inc[i] = static_cast<unsigned char>(i);
    }
    EXPECT_EQ(crc32c::value(inc.data(), inc.size()), 0x46DD794EU);
    EXPECT_EQ(crc32c::value(nullptr, 0), 0U);
}

TEST(Crc32c, ExtendEqualsWholeAndPortableAgrees) {
    std::mt19937 rng(42);
    for (int round = 0; round < 200; ++round) {
        std::vector<unsigned char> buf(rng() % 1000);
        for (auto& b : buf) {
            b = static_cast<unsigned char>(rng());
        }
        const std::size_t cut = buf.empty() ? 0 : rng() % buf.size();
        const auto whole = crc32c::value(buf.data(), buf.size());
        const auto split =
            crc32c::extend(crc32c::value(buf.data(), cut), buf.data() + cut, buf.size() - cut);
        EXPECT_EQ(whole, split);
        EXPECT_EQ(whole, crc32c::extend_portable(0, buf.data(), buf.size()));
    }
}

TEST(Crc32c, DetectsSingleBitFlip) {
    std::vector<unsigned char> buf(100, 7);
    const auto before = crc32c::value(buf.data(), buf.size());
    buf[50] ^= 0x10;
    EXPECT_NE(before, crc32c::value(buf.data(), buf.size()));
}

TEST(Crc32c, InterleavedBlocksAgreeWithPortable) {
    // The hardware path cuts buffers of >= 768 B (3 x 256) and >= 12 KiB (3 x 4 KiB) into three
    // interleaved chains: lengths around every boundary, odd start addresses and split points.
    std::mt19937 rng(7);
    std::vector<unsigned char> buf(40000);
    for (auto& b : buf) {
        b = static_cast<unsigned char>(rng());
    }
    std::vector<std::size_t> lengths;
    for (const std::size_t edge : {768U, 1536U, 12288U, 24576U, 12288U + 768U}) {
        for (std::size_t d = 0; d < 10; ++d) {
            lengths.push_back(edge - 5 + d);
        }
    }
    for (int i = 0; i < 60; ++i) {
        lengths.push_back(rng() % 39000);
    }
    for (const std::size_t len : lengths) {
        const std::size_t start = rng() % 8;
        const unsigned char* p = buf.data() + start;
        const auto expected = crc32c::extend_portable(0, p, len);
        EXPECT_EQ(crc32c::value(p, len), expected) << "len " << len << " start " << start;
        const std::size_t cut = len == 0 ? 0 : rng() % len;
        const std::uint32_t seed = crc32c::value(p, cut);
        EXPECT_EQ(crc32c::extend(seed, p + cut, len - cut), expected) << "len " << len;
        EXPECT_EQ(crc32c::extend_portable(seed, p + cut, len - cut), expected);
    }
}

TEST(Crc32c, DetectsSingleBitFlipInEveryChain) {
    std::vector<unsigned char> buf(3 * 4096 + 3 * 256 + 5, 0x5a);
    const auto before = crc32c::value(buf.data(), buf.size());
    for (const std::size_t at :
         {std::size_t{0}, std::size_t{4096}, std::size_t{8193}, std::size_t{12288},
          std::size_t{12288 + 300}, std::size_t{12288 + 700}, buf.size() - 1}) {
        buf[at] ^= 0x01;
        EXPECT_NE(before, crc32c::value(buf.data(), buf.size())) << at;
        buf[at] ^= 0x01;
    }
    EXPECT_EQ(before, crc32c::value(buf.data(), buf.size()));
}

TEST(Crc32c, CombineEqualsTheCrcOfTheConcatenation) {
    std::mt19937 rng(7);
    std::vector<unsigned char> buf(70000);
    for (auto& b : buf) {
        b = static_cast<unsigned char>(rng());
    }
    // Lengths around powers of two, the interleaving blocks, a journal record, and random ones.
    std::vector<std::size_t> lens = {0,   1,   2,    7,    8,    9,    31,    100,   255,  256,
                                     767, 768, 1024, 1048, 4095, 4096, 12288, 65536, 69999};
    for (int i = 0; i < 40; ++i) {
        lens.push_back(rng() % buf.size());
    }
    for (const std::size_t len_b : lens) {
        const std::size_t len_a = rng() % (buf.size() - len_b + 1);
        const std::uint32_t a = crc32c::value(buf.data(), len_a);
        const std::uint32_t b = crc32c::value(buf.data() + len_a, len_b);
        const std::uint32_t whole = crc32c::value(buf.data(), len_a + len_b);
        EXPECT_EQ(crc32c::combine(a, b, len_b), whole) << len_a << "+" << len_b;
        EXPECT_EQ(crc32c::extend(a, buf.data() + len_a, len_b), whole);
        const crc32c::shifter s(len_b);
        EXPECT_EQ(s.length(), len_b);
        EXPECT_EQ(s.combine(a, b), whole) << len_a << "+" << len_b;
        // Any starting CRC, including 0 (the empty string) and all ones.
        for (const std::uint32_t start : {0U, 0xffffffffU, static_cast<std::uint32_t>(rng())}) {
            EXPECT_EQ(s.combine(start, b), crc32c::extend(start, buf.data() + len_a, len_b));
        }
    }
    // A flipped bit in either part changes the combined value.
    const crc32c::shifter s(1000);
    const std::uint32_t a = crc32c::value(buf.data(), 24);
    const std::uint32_t b = crc32c::value(buf.data() + 24, 1000);
    buf[500] ^= 0x10;
    EXPECT_NE(s.combine(a, crc32c::value(buf.data() + 24, 1000)), s.combine(a, b));
    EXPECT_NE(s.combine(a ^ 1, b), s.combine(a, b));
}

}  // namespace
}  // namespace nereus
