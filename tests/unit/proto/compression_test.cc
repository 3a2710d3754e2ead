// Pulsar's payload codecs: round trips, golden vectors in the formats Pulsar's Java and C++
// clients write (raw LZ4 block, zlib stream, Zstandard frame, raw Snappy), and corrupt or
// forged input failing closed.
#include "nereus/proto/compression.h"

#include "nereus/proto/errc.h"
#include "nereus/proto/pulsar_api.h"

#include <gtest/gtest.h>

#include "support/bytes.h"
#include <random>

namespace nereus::proto {
namespace {

constexpr compression kCodecs[] = {compression::lz4, compression::zlib, compression::zstd,
                                   compression::snappy};

std::vector<std::byte> hex(std::initializer_list<int> bytes) {
    std::vector<std::byte> out;
    for (int b : bytes) {
        out.push_back(static_cast<std::byte>(b));
    }
    return out;
}

TEST(Compression, NoneIsPassThroughAndUnknownValuesAreTypedErrors) {
    std::vector<std::byte> scratch;
    const auto in = test::bytes_of("abc");
    auto out = decompress(compression::none, in, 3, scratch);
    ASSERT_TRUE(out);
    EXPECT_EQ(out->data(), in.data());
    for (auto c : kCodecs) {
        EXPECT_TRUE(compression_supported(c));
    }
    EXPECT_TRUE(compression_supported(compression::none));
    const auto unknown = static_cast<compression>(9);
    EXPECT_FALSE(compression_supported(unknown));
    EXPECT_EQ(decompress(unknown, in, 3, scratch).error(), errc::unsupported_compression);
    EXPECT_EQ(compress(unknown, in, scratch).error(), errc::unsupported_compression);
    static_assert(static_cast<int>(compression::lz4) == pb::LZ4);
    static_assert(static_cast<int>(compression::zlib) == pb::ZLIB);
    static_assert(static_cast<int>(compression::zstd) == pb::ZSTD);
    static_assert(static_cast<int>(compression::snappy) == pb::SNAPPY);
}

TEST(Compression, EveryCodecRoundTripsEmptySmallLargeAndIncompressibleInput) {
    std::mt19937 rng(7);
    std::vector<std::vector<std::byte>> inputs;
    inputs.push_back({});
    inputs.push_back(test::bytes_of("x"));
    std::vector<std::byte> text;
    for (int i = 0; i < 20'000; ++i) {
        const auto s = "message-" + std::to_string(i % 97) + ";";
        const auto b = test::bytes_of(s);
        text.insert(text.end(), b.begin(), b.end());
    }
    inputs.push_back(text);
    std::vector<std::byte> noise(70'000);
    for (auto& b : noise) {
        b = static_cast<std::byte>(rng());
    }
    inputs.push_back(noise);

    for (auto c : kCodecs) {
        for (const auto& in : inputs) {
            std::vector<std::byte> cbuf;
            std::vector<std::byte> dbuf;
            auto packed = compress(c, in, cbuf);
            ASSERT_TRUE(packed) << static_cast<int>(c);
            if (in.size() == text.size()) {
                EXPECT_LT(packed->size(), in.size() / 4);
            }
            const std::vector<std::byte> wire(packed->begin(), packed->end());
            auto back = decompress(c, wire, static_cast<std::uint32_t>(in.size()), dbuf);
            ASSERT_TRUE(back) << static_cast<int>(c) << " " << back.error().message();
            EXPECT_TRUE(std::equal(back->begin(), back->end(), in.begin(), in.end()))
                << static_cast<int>(c) << " size " << in.size();
        }
    }
}

// "hello" as written by the reference encoders of each format (what a Pulsar client sends).
TEST(Compression, DecodesGoldenVectorsOfEachFormat) {
    struct golden {
        compression c;
        std::vector<std::byte> bytes;
    };
    const golden cases[] = {
        // raw LZ4 block: token 0x50 = 5 literals, no match
        {compression::lz4, hex({0x50, 'h', 'e', 'l', 'l', 'o'})},
        // zlib stream: header 78 9c, deflate, Adler-32
        {compression::zlib,
         hex({0x78, 0x9c, 0xcb, 0x48, 0xcd, 0xc9, 0xc9, 0x07, 0x00, 0x06, 0x2c, 0x02, 0x15})},
        // Zstandard frame: magic, single-segment header with size 5, one raw last block
        {compression::zstd,
         hex({0x28, 0xb5, 0x2f, 0xfd, 0x20, 0x05, 0x29, 0x00, 0x00, 'h', 'e', 'l', 'l', 'o'})},
        // raw Snappy: varint length 5, literal tag (5-1)<<2
        {compression::snappy, hex({0x05, 0x10, 'h', 'e', 'l', 'l', 'o'})},
    };
    for (const auto& g : cases) {
        std::vector<std::byte> scratch;
        auto out = decompress(g.c, g.bytes, 5, scratch);
        ASSERT_TRUE(out) << static_cast<int>(g.c) << " " << out.error().message();
        EXPECT_EQ(test::string_of(*out), "hello") << static_cast<int>(g.c);
    }
}

TEST(Compression, CorruptOrMislabelledPayloadsFailClosed) {
    const auto in = test::bytes_of("the quick brown fox jumps over the lazy dog, again and again");
    for (auto c : kCodecs) {
        std::vector<std::byte> cbuf;
        std::vector<std::byte> dbuf;
        auto packed = compress(c, in, cbuf);
        ASSERT_TRUE(packed);
        const std::vector<std::byte> wire(packed->begin(), packed->end());
        const auto n = static_cast<std::uint32_t>(in.size());
        // Declared size one off in either direction.
        EXPECT_EQ(decompress(c, wire, n + 1, dbuf).error(), errc::bad_compressed_payload)
            << static_cast<int>(c);
        EXPECT_EQ(decompress(c, wire, n - 1, dbuf).error(), errc::bad_compressed_payload)
            << static_cast<int>(c);
        // Truncated.
        const std::vector<std::byte> cut(wire.begin(), wire.end() - 1);
        EXPECT_EQ(decompress(c, cut, n, dbuf).error(), errc::bad_compressed_payload)
            << static_cast<int>(c);
        // Garbage.
        const auto junk = test::bytes_of("\xff\xfe\xfd\xfc\xfb\xfa\xf9\xf8 not compressed");
        EXPECT_EQ(decompress(c, junk, n, dbuf).error(), errc::bad_compressed_payload)
            << static_cast<int>(c);
        // A forged size above the limit is refused before anything is allocated.
        EXPECT_EQ(decompress(c, wire, max_uncompressed_size + 1, dbuf).error(),
                  errc::uncompressed_too_large);
        // Another codec's bytes.
        const auto other = c == compression::zlib ? compression::zstd : compression::zlib;
        EXPECT_FALSE(decompress(other, wire, n, dbuf)) << static_cast<int>(c);
    }
}

// Every single-byte corruption of a compressed payload either fails with a typed error or
// (for codecs without a checksum) decodes to exactly uncompressed_size bytes: never a crash,
// never a different length.
TEST(Compression, SingleByteCorruptionsNeverCrashOrChangeTheLength) {
    std::vector<std::byte> in;
    for (int i = 0; i < 2'000; ++i) {
        in.push_back(static_cast<std::byte>((i * 7) % 13));
    }
    for (auto c : kCodecs) {
        std::vector<std::byte> cbuf;
        std::vector<std::byte> dbuf;
        auto packed = compress(c, in, cbuf);
        ASSERT_TRUE(packed);
        std::vector<std::byte> wire(packed->begin(), packed->end());
        for (std::size_t i = 0; i < wire.size(); ++i) {
            const auto saved = wire[i];
            wire[i] ^= std::byte{0x5a};
            auto out = decompress(c, wire, static_cast<std::uint32_t>(in.size()), dbuf);
            if (out) {
                EXPECT_EQ(out->size(), in.size());
            } else {
                EXPECT_TRUE(out.error() == errc::bad_compressed_payload) << out.error().message();
            }
            wire[i] = saved;
        }
    }
}

}  // namespace
}  // namespace nereus::proto
