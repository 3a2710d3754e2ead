#include "nereus/objects/object_name.h"

#include "nereus/objects/errc.h"

#include <gtest/gtest.h>

#include <string>

namespace nereus::objects {
namespace {

TEST(ObjectName, AcceptsTheSafeAlphabet) {
    for (const char* n : {"a", "Z", "0", ".", "-", "_"}) {
        // "." alone is a dot component and is rejected below; the others are fine.
        if (std::string(n) == ".") {
            continue;
        }
        EXPECT_TRUE(validate_object_name(n)) << n;
    }
    EXPECT_TRUE(validate_object_name("cursor/persistent.t1/sub-1/gen_3/000000042"));
    EXPECT_TRUE(validate_object_name(std::string(max_object_name_length, 'x')));
}

TEST(ObjectName, RejectsEveryOtherByte) {
    for (int c = 0; c < 256; ++c) {
        const char ch = static_cast<char>(c);
        const bool allowed = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
                             (ch >= '0' && ch <= '9') || ch == '.' || ch == '_' || ch == '-' ||
                             ch == '/';
        const std::string name = std::string("x") + ch + "x";
        EXPECT_EQ(static_cast<bool>(validate_object_name(name)), allowed) << c;
    }
}

TEST(ObjectName, RejectsBadShapes) {
    for (const char* n : {"", "/", "/a", "a/", "a//b", ".", "..", "./a", "../a", "a/./b", "a/../b",
                          "a/..", "a/."}) {
        auto r = validate_object_name(n);
        ASSERT_FALSE(r) << n;
        EXPECT_EQ(r.error(), errc::invalid_name) << n;
    }
    EXPECT_FALSE(validate_object_name(std::string(max_object_name_length + 1, 'x')));
    // Dots inside a component are ordinary characters.
    EXPECT_TRUE(validate_object_name("a..b/...c/.d"));
}

TEST(ObjectName, FileNamesRoundTrip) {
    for (const char* n : {"a", "a/b", "a/b/c", "x.y-z_1", "..a/b.."}) {
        const auto file = object_file_name(n);
        EXPECT_EQ(file.find('/'), std::string::npos) << n;
        EXPECT_EQ(object_name_from_file_name(file), std::optional<std::string>(n)) << n;
    }
    EXPECT_EQ(object_file_name("cursor/t/c"), "cursor+t+c");
}

TEST(ObjectName, StrayFileNamesMapToNothing) {
    for (const char* f : {"", "+a", "a+", "a++b", "a/b", "a b", "..", "+..+a", "x.tmp~"}) {
        EXPECT_EQ(object_name_from_file_name(f), std::nullopt) << f;
    }
}

}  // namespace
}  // namespace nereus::objects
