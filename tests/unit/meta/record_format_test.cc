// The on-disk record codec: round trips, and every single-bit flip is reported, never decoded.

#include "nereus/meta/record_format.h"

#include "nereus/base/crc32c.h"
#include "nereus/meta/errc.h"

#include <gtest/gtest.h>

#include <rapidcheck.h>
#include <rapidcheck/gtest.h>
#include <string>

namespace nereus::meta::test {
namespace {

RC_GTEST_PROP(
    RecordFormat,
    RoundTripsAndRejectsEveryBitFlip,
    (const std::string& key, const std::string& value, std::uint64_t ver, std::uint64_t owner)) {
    const std::string raw_key = format::data_key(key);
    const record r{.value = value, .ver = ver, .owner = session_id{owner}};
    const std::string enc = format::encode_record(raw_key, r);
    RC_ASSERT(enc.size() == format::record_header_size + value.size());
    RC_ASSERT(static_cast<std::uint8_t>(enc[0]) == format::record_format_v1);
    auto dec = format::decode_record(raw_key, enc, nullptr);
    RC_ASSERT(dec.has_value());
    RC_ASSERT(*dec == r);

    const auto bit = *rc::gen::inRange<std::size_t>(0, enc.size() * 8);
    std::string damaged = enc;
    damaged[bit / 8] = static_cast<char>(damaged[bit / 8] ^ (1 << (bit % 8)));
    std::string why;
    auto bad = format::decode_record(raw_key, damaged, &why);
    RC_ASSERT(!bad.has_value());
    RC_ASSERT(bad.error() == make_error_code(errc::corrupt_record));
    RC_ASSERT(!why.empty());

    // A value is bound to its key: the same bytes under another key do not decode.
    RC_ASSERT(!format::decode_record(format::data_key(key + "x"), enc, nullptr).has_value());
    // A truncated record never decodes.
    const auto cut = *rc::gen::inRange<std::size_t>(0, enc.size());
    RC_ASSERT(!format::decode_record(raw_key, enc.substr(0, cut), nullptr).has_value());
}

TEST(RecordFormat, HeaderLayoutIsStable) {
    // Byte-exact golden record: changing the layout must be a new format version.
    const std::string enc = format::encode_record(
        "d/k", record{.value = "v", .ver = 0x0102030405060708, .owner = session_id{9}});
    ASSERT_EQ(enc.size(), 22u);
    EXPECT_EQ(enc[0], '\x01');
    EXPECT_EQ(enc.substr(5, 8), std::string("\x08\x07\x06\x05\x04\x03\x02\x01", 8));
    EXPECT_EQ(enc.substr(13, 8), std::string("\x09\0\0\0\0\0\0\0", 8));
    EXPECT_EQ(enc.substr(21), "v");
}

TEST(RecordFormat, NewerFormatVersionIsIncompatibleNotCorrupt) {
    std::string enc = format::encode_record("d/k", record{.value = "v", .ver = 1});
    enc[0] = '\x02';
    std::string why;
    auto damaged = format::decode_record("d/k", enc, &why);
    ASSERT_FALSE(damaged);
    // Without a matching checksum a different version byte is damage.
    EXPECT_EQ(damaged.error(), errc::corrupt_record);

    // Resealed as a newer build would write it (same first five bytes, valid crc32c).
    std::uint32_t crc = crc32c::value(enc.data(), 1);
    crc = crc32c::extend(crc, enc.data() + 5, enc.size() - 5);
    crc = crc32c::extend(crc, "d/k", 3);
    for (int i = 0; i < 4; ++i) {
        enc[1 + i] = static_cast<char>((crc >> (8 * i)) & 0xff);
    }
    auto newer = format::decode_record("d/k", enc, &why);
    ASSERT_FALSE(newer);
    EXPECT_EQ(newer.error(), errc::incompatible_format);
    EXPECT_NE(why.find("version 2"), std::string::npos) << why;

    auto u = format::decode_u64("m/revision", format::encode_u64("m/revision", 42), nullptr);
    ASSERT_TRUE(u);
    EXPECT_EQ(*u, 42u);
    auto wrong_key = format::decode_u64("m/format", format::encode_u64("m/revision", 42), nullptr);
    EXPECT_FALSE(wrong_key);
}

TEST(RecordFormat, IndexKeysRoundTrip) {
    const std::string k = format::index_key(session_id{0x0102}, std::string("a\0b", 3));
    EXPECT_EQ(k.substr(0, 2), "e/");
    format::index_entry e;
    ASSERT_TRUE(format::parse_index_key(k, e));
    EXPECT_EQ(e.owner, session_id{0x0102});
    EXPECT_EQ(e.user_key, std::string("a\0b", 3));
    EXPECT_FALSE(format::parse_index_key("e/short", e));
    EXPECT_TRUE(k.starts_with(format::index_prefix_of(session_id{0x0102})));
    EXPECT_EQ(format::printable(std::string("a\\\n\xff", 4)), "a\\x5c\\x0a\\xff");
}

}  // namespace
}  // namespace nereus::meta::test
