// The Pulsar binding's pattern resolution (runtime/pulsar/pattern.h): the namespace a pattern
// names, and which listed topics (GET_TOPICS_OF_NAMESPACE's answer) it matches.

#include "nereus/runtime/pulsar/pattern.h"

#include "nereus/runtime/errc.h"

#include <gtest/gtest.h>

namespace nereus::runtime::pulsar {
namespace {

TEST(Pattern, NamespaceIsTheLiteralTenantAndNamespace) {
    EXPECT_EQ(pattern_namespace("persistent://public/default/orders-.*").value(), "public/default");
    EXPECT_EQ(pattern_namespace("persistent://acme/billing/x").value(), "acme/billing");
}

TEST(Pattern, NonLiteralOrForeignNamespacesAreRefused) {
    for (const char* p :
         {"persistent://pub.*/default/x", "persistent://public/def[a]ult/x",
          "non-persistent://public/default/x", "public/default/x", "persistent://public/default"}) {
        auto r = pattern_namespace(p);
        ASSERT_FALSE(r) << p;
        EXPECT_EQ(r.error(), make_error_code(errc::invalid_spec)) << p;
    }
}

TEST(Pattern, MatchesWholeNamesAndFoldsPartitions) {
    const std::vector<std::string> listed{
        "persistent://public/default/orders-a",
        "persistent://public/default/orders-b-partition-0",
        "persistent://public/default/orders-b-partition-1",
        "persistent://public/default/other",
        "persistent://public/default/xorders-c",
    };
    auto r = matching_topics("persistent://public/default/orders-.*", listed);
    ASSERT_TRUE(r);
    EXPECT_EQ(*r, (std::vector<std::string>{"persistent://public/default/orders-a",
                                            "persistent://public/default/orders-b"}));
}

TEST(Pattern, ABadRegexIsRefused) {
    auto r = matching_topics("persistent://public/default/(", {});
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error(), make_error_code(errc::invalid_spec));
}

}  // namespace
}  // namespace nereus::runtime::pulsar
