#include "nereus/objects/object_format.h"

#include "nereus/base/crc32c.h"

#include <gtest/gtest.h>

#include <string_view>
#include <vector>

namespace nereus::objects {
namespace {

std::vector<std::uint8_t> as_u8(std::span<const std::byte> b) {
    std::vector<std::uint8_t> out;
    for (auto x : b) {
        out.push_back(std::to_integer<std::uint8_t>(x));
    }
    return out;
}

// Pins the version-1 byte layout: a change here is a format change and needs a new version
// (doc/format/objects.md).
TEST(ObjectFormat, GoldenHeader) {
    const std::string_view payload = "123456789";
    const auto payload_crc = crc32c::value(payload.data(), payload.size());
    ASSERT_EQ(payload_crc, 0xe3069283U);  // the CRC32C check value
    const auto raw = encode_object_header("a/b", payload.size(), payload_crc);
    const std::vector<std::uint8_t> expected = {
        'N',  'R',  'O',  'B',                           // magic
        0x01, 0x00,                                      // format_version 1
        0x03, 0x00,                                      // name_length 3
        0x09, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,  // payload_length 9
        0x83, 0x92, 0x06, 0xe3,                          // payload crc32c
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,  // reserved
        0xf7, 0xd0, 0x81, 0x75,                          // header crc32c (checked with an
                                                         // independent implementation)
    };
    EXPECT_EQ(as_u8(raw), expected);
}

TEST(ObjectFormat, HeaderRoundTrip) {
    const auto raw = encode_object_header("name", 123456789012ULL, 0xdeadbeef);
    EXPECT_TRUE(has_object_magic(raw));
    const auto h = decode_object_header(raw);
    EXPECT_EQ(h.format_version, object_format_version);
    EXPECT_EQ(h.name_length, 4);
    EXPECT_EQ(h.payload_length, 123456789012ULL);
    EXPECT_EQ(h.payload_crc, 0xdeadbeefU);
    EXPECT_EQ(h.reserved, 0U);
    const std::string_view name = "name";
    EXPECT_EQ(h.header_crc, object_header_crc(raw, std::as_bytes(std::span(name))));
}

TEST(ObjectFormat, HeaderChecksumCoversTheName) {
    const auto a = encode_object_header("aaaa", 1, 2);
    const auto b = encode_object_header("aaab", 1, 2);
    EXPECT_NE(decode_object_header(a).header_crc, decode_object_header(b).header_crc);
}

}  // namespace
}  // namespace nereus::objects
