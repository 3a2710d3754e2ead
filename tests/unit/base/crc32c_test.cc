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

}  // namespace
}  // namespace nereus
