#include "nereus/broker/topic_name.h"

#include <gtest/gtest.h>

namespace nereus::broker {
namespace {

TEST(TopicName, ExpandsShortNames) {
    auto a = parse_topic_name("orders");
    ASSERT_TRUE(a);
    EXPECT_EQ(a->full(), "persistent://public/default/orders");
    auto b = parse_topic_name("acme/sales/orders");
    ASSERT_TRUE(b);
    EXPECT_EQ(b->full(), "persistent://acme/sales/orders");
    EXPECT_EQ(b->namespace_name(), "acme/sales");
}

TEST(TopicName, RecognisesPartitionSuffix) {
    auto a = parse_topic_name("persistent://public/default/t-partition-3");
    ASSERT_TRUE(a);
    ASSERT_TRUE(a->partition);
    EXPECT_EQ(*a->partition, 3U);
    EXPECT_FALSE(parse_topic_name("t-partition-x")->partition);
}

TEST(TopicName, RejectsMalformedNames) {
    EXPECT_FALSE(parse_topic_name(""));
    EXPECT_FALSE(parse_topic_name("persistent://public/default"));
    EXPECT_FALSE(parse_topic_name("non-persistent://public/default/t"));
    EXPECT_FALSE(parse_topic_name("a/b"));
    EXPECT_FALSE(parse_topic_name("persistent://a/b/c d"));
}

}  // namespace
}  // namespace nereus::broker
