// make_store() url parsing and the meta error category.

#include "nereus/meta/errc.h"
#include "nereus/meta/make_store.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <set>
#include <string>

namespace nereus::meta::test {
namespace {

// Good urls are exercised by every conformance test (the suite opens stores via make_store).
class StoreFactory : public ::testing::TestWithParam<std::string> {};

TEST_P(StoreFactory, RejectsMalformedUrls) {
    auto s = make_store(GetParam());
    ASSERT_FALSE(s.has_value());
    EXPECT_EQ(s.error(), errc::invalid_argument);
}

INSTANTIATE_TEST_SUITE_P(meta,
                         StoreFactory,
                         ::testing::Values("",
                                           "memory",
                                           "memory:x",
                                           "rocksdb:",
                                           "rocks:/tmp/x",
                                           "zookeeper://127.0.0.1:2181",
                                           "ROCKSDB:/tmp/x"),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                             return fmt::format("url{}", info.index);
                         });

class MetaErrc : public ::testing::TestWithParam<int> {};

TEST_P(MetaErrc, HasItsOwnCategoryAndAMessage) {
    const std::error_code ec = static_cast<errc>(GetParam());
    EXPECT_STREQ(ec.category().name(), "nereus.meta");
    EXPECT_TRUE(static_cast<bool>(ec));
    EXPECT_FALSE(ec.message().empty());
    EXPECT_EQ(ec.message().find("unknown nereus.meta error"), std::string::npos);
    EXPECT_NE(ec, std::error_code(GetParam(), std::generic_category()));
    std::set<std::string> messages;
    for (int i = 1; i <= static_cast<int>(errc::incompatible_format); ++i) {
        messages.insert(std::error_code(static_cast<errc>(i)).message());
    }
    EXPECT_EQ(messages.size(), static_cast<std::size_t>(errc::incompatible_format));
}

INSTANTIATE_TEST_SUITE_P(meta,
                         MetaErrc,
                         ::testing::Range(1, static_cast<int>(errc::incompatible_format) + 1));

}  // namespace
}  // namespace nereus::meta::test
