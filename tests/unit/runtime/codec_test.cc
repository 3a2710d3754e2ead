#include "nereus/runtime/codec.h"

#include "nereus/proto/pulsar_api.h"

#include <gtest/gtest.h>

namespace nereus::runtime {
namespace {

TEST(Codec, RawIsTheBytes) {
    EXPECT_EQ(*raw_codec::decode(std::string_view("a\0b", 3)), std::string("a\0b", 3));
    EXPECT_EQ(raw_codec::encode("xyz"), "xyz");
}

struct point {
    int x = 0;
    int y = 0;
    friend void tag_invoke(boost::json::value_from_tag, boost::json::value& v, const point& p) {
        v = {{"x", p.x}, {"y", p.y}};
    }
    friend point tag_invoke(boost::json::value_to_tag<point>, const boost::json::value& v) {
        return point{static_cast<int>(v.at("x").as_int64()),
                     static_cast<int>(v.at("y").as_int64())};
    }
};

TEST(Codec, JsonRoundTripsAndRefusesWhatDoesNotParseOrConvert) {
    const auto bytes = json_codec<point>::encode(point{1, 2});
    auto back = json_codec<point>::decode(bytes);
    ASSERT_TRUE(back);
    EXPECT_EQ(back->x, 1);
    EXPECT_EQ(back->y, 2);
    EXPECT_FALSE(json_codec<point>::decode("{"));
    EXPECT_FALSE(json_codec<point>::decode(R"({"x": "not a number"})"));
    EXPECT_TRUE(json_codec<>::decode(R"([1,2,3])"));
}

TEST(Codec, ProtobufRoundTripsAndRefusesGarbage) {
    proto::pb::MessageIdData id;
    id.set_ledgerid(7);
    id.set_entryid(9);
    using codec = protobuf_codec<proto::pb::MessageIdData>;
    auto back = codec::decode(codec::encode(id));
    ASSERT_TRUE(back);
    EXPECT_EQ(back->ledgerid(), 7U);
    EXPECT_EQ(back->entryid(), 9U);
    EXPECT_FALSE(codec::decode(std::string("\xff\xff\xff", 3)));
}

}  // namespace
}  // namespace nereus::runtime
