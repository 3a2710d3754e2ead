#include "nereus/base/file_system.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

namespace nereus {
namespace {

class PosixFileSystem : public ::testing::Test {
protected:
    void SetUp() override {
        std::string tmpl =
            (std::filesystem::temp_directory_path() / "nereus-posix-XXXXXX").string();
        ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
        dir_ = tmpl;
    }
    void TearDown() override { std::filesystem::remove_all(dir_); }
    std::string dir_;
};

bytes_view as_bytes(const std::string& s) {
    return {reinterpret_cast<const std::byte*>(s.data()), s.size()};
}

TEST_F(PosixFileSystem, WritevReadSyncTruncate) {
    auto fs = posix_file_system();
    const auto path = path_join(dir_, "f");
    auto f = fs->open(path, open_mode::create_exclusive);
    ASSERT_TRUE(f);
    const std::string a = "hello ";
    const std::string b = "world";
    const bytes_view parts[] = {as_bytes(a), as_bytes(""), as_bytes(b)};
    ASSERT_TRUE((*f)->writev_at(0, parts));
    ASSERT_TRUE((*f)->sync());
    ASSERT_TRUE(fs->sync_dir(dir_));
    EXPECT_EQ(*(*f)->size(), 11U);
    std::string out(20, '\0');
    auto n = (*f)->read_at(0, {reinterpret_cast<std::byte*>(out.data()), out.size()});
    ASSERT_TRUE(n);
    EXPECT_EQ(*n, 11U);
    EXPECT_EQ(out.substr(0, 11), "hello world");
    ASSERT_TRUE((*f)->truncate(5));
    EXPECT_EQ(*fs->file_size(path), 5U);
    EXPECT_EQ(fs->open(path, open_mode::create_exclusive).error(), std::errc::file_exists);
}

TEST_F(PosixFileSystem, DirectoriesAndRenames) {
    auto fs = posix_file_system();
    const auto sub = path_join(dir_, "a/b/c");
    ASSERT_TRUE(fs->create_dirs(sub));
    EXPECT_TRUE(*fs->is_dir(sub));
    ASSERT_TRUE(fs->open(path_join(sub, "x"), open_mode::create));
    ASSERT_TRUE(fs->open(path_join(sub, "y"), open_mode::create));
    EXPECT_EQ(fs->rename_noreplace(path_join(sub, "x"), path_join(sub, "y")).error(),
              std::errc::file_exists);
    ASSERT_TRUE(fs->rename(path_join(sub, "x"), path_join(sub, "z")));
    auto names = fs->list_dir(sub);
    ASSERT_TRUE(names);
    EXPECT_EQ(*names, (std::vector<std::string>{"y", "z"}));
    ASSERT_TRUE(fs->remove(path_join(sub, "y")));
    ASSERT_TRUE(fs->remove(path_join(sub, "z")));
    ASSERT_TRUE(fs->remove_dir(sub));
    EXPECT_FALSE(*fs->exists(sub));
    EXPECT_TRUE(fs->sync_all(dir_));  // syncfs of the file system holding the directory
    EXPECT_EQ(fs->sync_all(path_join(dir_, "missing")).error(),
              std::errc::no_such_file_or_directory);
    EXPECT_EQ(fs->open(path_join(dir_, "missing"), open_mode::read_only).error(),
              std::errc::no_such_file_or_directory);
}

TEST(PathUtil, JoinAndParent) {
    EXPECT_EQ(path_join("a", "b"), "a/b");
    EXPECT_EQ(path_join("a/", "b"), "a/b");
    EXPECT_EQ(path_parent("a/b/c"), "a/b");
    EXPECT_EQ(path_parent("c"), ".");
    EXPECT_EQ(path_parent("/c"), "/");
}

// open_direct(): O_DIRECT | O_DSYNC. Aligned writes land (and read back through the page
// cache, which direct writes invalidate); misaligned offsets, sizes or addresses are EINVAL.
TEST_F(PosixFileSystem, DirectWritesMustBeAlignedAndReadBack) {
    auto fs = posix_file_system();
    const auto path = path_join(dir_, "d");
    {
        auto f = fs->open(path, open_mode::create_exclusive);
        ASSERT_TRUE(f);
        ASSERT_TRUE((*f)->write_at(0, std::vector<std::byte>(3 * kDirectIoAlign)));  // zeros
        ASSERT_TRUE((*f)->sync());
    }
    auto d = fs->open_direct(path);
    if (!d && d.error() == std::errc::invalid_argument) {
        GTEST_SKIP() << "no direct I/O on " << dir_;
    }
    ASSERT_TRUE(d) << d.error().message();
    auto* raw = static_cast<std::byte*>(std::aligned_alloc(kDirectIoAlign, 2 * kDirectIoAlign));
    ASSERT_NE(raw, nullptr);
    const std::unique_ptr<std::byte, decltype(&std::free)> buf(raw, &std::free);
    for (std::size_t i = 0; i < 2 * kDirectIoAlign; ++i) {
        raw[i] = static_cast<std::byte>(i % 251);
    }
    ASSERT_TRUE((*d)->write_at(kDirectIoAlign, {raw, kDirectIoAlign}));
    // Past the end: the file grows (durably, with O_DSYNC).
    ASSERT_TRUE((*d)->write_at(3 * kDirectIoAlign, {raw, 2 * kDirectIoAlign}));
    EXPECT_EQ(*fs->file_size(path), 5 * kDirectIoAlign);
    EXPECT_EQ((*d)->write_at(100, {raw, kDirectIoAlign}).error(), std::errc::invalid_argument);
    EXPECT_EQ((*d)->write_at(0, {raw, 100}).error(), std::errc::invalid_argument);
    EXPECT_EQ((*d)->write_at(0, {raw + 8, kDirectIoAlign}).error(), std::errc::invalid_argument);
    ASSERT_TRUE((*d)->sync());
    auto r = fs->open(path, open_mode::read_only);
    ASSERT_TRUE(r);
    std::vector<std::byte> out(5 * kDirectIoAlign);
    ASSERT_EQ(*(*r)->read_at(0, out), out.size());
    for (std::size_t i = 0; i < kDirectIoAlign; ++i) {
        ASSERT_EQ(out[i], std::byte{0}) << i;
        ASSERT_EQ(out[kDirectIoAlign + i], raw[i]) << i;
        ASSERT_EQ(out[2 * kDirectIoAlign + i], std::byte{0}) << i;
    }
    for (std::size_t i = 0; i < 2 * kDirectIoAlign; ++i) {
        ASSERT_EQ(out[3 * kDirectIoAlign + i], raw[i]) << i;
    }
    EXPECT_FALSE(fs->open_direct(path_join(dir_, "missing")));
}

}  // namespace
}  // namespace nereus
