#include "nereus/runtime/spec.h"

#include "nereus/runtime/errc.h"

#include <gtest/gtest.h>

namespace nereus::runtime {
namespace {

subscriber_spec good() {
    subscriber_spec s;
    s.topics = topic_selector::one("t");
    s.subscription = "s";
    return s;
}

TEST(Spec, ValidatesWhatARegistrationDeclares) {
    EXPECT_TRUE(validate(good()));
    auto s = good();
    s.subscription.clear();
    EXPECT_EQ(validate(s).error(), make_error_code(errc::invalid_spec));
    s = good();
    s.dispatch = lanes::workers(0);
    EXPECT_FALSE(validate(s));
    s = good();
    s.dispatch = lanes::by_key(4);
    s.batch_size = 8;
    EXPECT_FALSE(validate(s)) << "a batch cannot sit in a lane by key";
    s = good();
    s.topics = topic_selector::list({});
    EXPECT_FALSE(validate(s));
    s.topics = topic_selector::matching("persistent://public/default/[");
    EXPECT_FALSE(validate(s));
    s.topics = topic_selector::matching("persistent://public/default/a-.*");
    EXPECT_TRUE(validate(s));
    s = good();
    s.dead_letter = dead_letter_policy{0, "dlq"};
    EXPECT_FALSE(validate(s)) << "Pulsar requires maxRedeliverCount > 0";
}

TEST(Spec, CompletesTopicNamesAsTheServerDoes) {
    EXPECT_EQ(full_topic_name("t"), "persistent://public/default/t");
    EXPECT_EQ(full_topic_name("tn/ns/t"), "persistent://tn/ns/t");
    EXPECT_EQ(full_topic_name("non-persistent://a/b/c"), "non-persistent://a/b/c");
}

TEST(Spec, DeadLetterTopicIsThePolicysOrPulsarsDefault) {
    auto s = good();
    EXPECT_EQ(dead_letter_topic(s, "persistent://public/default/t"),
              "persistent://public/default/t-s-DLQ");
    s.dead_letter = dead_letter_policy{3, "dead"};
    EXPECT_EQ(dead_letter_topic(s, "persistent://public/default/t"),
              "persistent://public/default/dead");
}

TEST(Spec, ErrorCodesHaveMessages) {
    for (int i = 0; i <= static_cast<int>(errc::unsupported); ++i) {
        EXPECT_NE(make_error_code(static_cast<errc>(i)).message(), "unknown nereus.runtime error");
    }
}

}  // namespace
}  // namespace nereus::runtime
