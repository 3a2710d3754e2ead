#include "nereus/base/direct_io_buffer.h"
#include "nereus/base/fault_file_system.h"
#include "nereus/base/file_system.h"
#include "nereus/base/forwarding_file_system.h"

#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <cstdlib>
#include <fcntl.h>
#include <filesystem>
#include <memory>
#include <string>
#include <unistd.h>
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

void expect_contents(file& f, const std::string& data) {
    std::string out(data.size(), '\0');
    auto n = f.read_at(0, {reinterpret_cast<std::byte*>(out.data()), out.size()});
    ASSERT_TRUE(n);
    ASSERT_EQ(*n, data.size());
    EXPECT_EQ(out, data);
}

// A test double's file (fault_file_system) behind a forwarding_file: the hints' defaults.
std::unique_ptr<file> forwarded_test_double() {
    static fault_file_system mem;
    auto m = mem.open("/hint", open_mode::create);
    EXPECT_TRUE(m);
    return m ? std::make_unique<forwarding_file>(std::move(*m)) : nullptr;
}

// start_writeback is a hint: it succeeds on written ranges, on ranges past the end and on an
// empty file, and leaves the bytes as they were.
TEST_F(PosixFileSystem, StartWritebackIsAHintThatKeepsTheBytes) {
    auto fs = posix_file_system();
    auto f = fs->open(path_join(dir_, "w"), open_mode::create_exclusive);
    ASSERT_TRUE(f);
    EXPECT_TRUE((*f)->start_writeback(0, 4096));  // nothing written yet
    const std::string data(256 << 10, 'x');
    ASSERT_TRUE((*f)->write_at(0, as_bytes(data)));
    EXPECT_TRUE((*f)->start_writeback(0, 128 << 10));
    EXPECT_TRUE((*f)->start_writeback(128 << 10, 128 << 10));
    EXPECT_TRUE((*f)->start_writeback(1 << 20, 4096));  // past the end
    ASSERT_TRUE((*f)->sync());
    expect_contents(**f, data);
    // The default (test doubles) and forwarding_file: a no-op that succeeds.
    EXPECT_TRUE(forwarded_test_double()->start_writeback(0, 10));
}

// drop_cached is a hint too: on synced ranges, on dirty ones (which stay dirty and reach the
// disk with the next sync), past the end and on an empty file; the bytes read back unchanged.
TEST_F(PosixFileSystem, DropCachedIsAHintThatKeepsTheBytes) {
    auto fs = posix_file_system();
    auto f = fs->open(path_join(dir_, "d"), open_mode::create_exclusive);
    ASSERT_TRUE(f);
    EXPECT_TRUE((*f)->drop_cached(0, 4096));  // nothing written yet
    std::string data(256 << 10, 'z');
    ASSERT_TRUE((*f)->write_at(0, as_bytes(data)));
    ASSERT_TRUE((*f)->sync());
    EXPECT_TRUE((*f)->drop_cached(0, 128 << 10));
    data.replace(200 << 10, 4, "dirt");
    ASSERT_TRUE((*f)->write_at(200 << 10, as_bytes(std::string("dirt"))));
    EXPECT_TRUE((*f)->drop_cached(128 << 10, 128 << 10));  // holds a dirty page
    EXPECT_TRUE((*f)->drop_cached(1 << 20, 4096));         // past the end
    ASSERT_TRUE((*f)->sync());
    expect_contents(**f, data);
    EXPECT_TRUE(forwarded_test_double()->drop_cached(0, 10));
}

// allocate_direct_io_buffer: page-aligned, and whole pages usable (ASan reports a write past
// an unrounded size).
TEST(DirectIoBuffer, IsPageAlignedAndWholePages) {
    for (const std::size_t n :
         {std::size_t{0}, std::size_t{1}, kDirectIoAlign, kDirectIoAlign + 1}) {
        SCOPED_TRACE(n);
        const direct_io_buffer b = allocate_direct_io_buffer(n);
        ASSERT_NE(b, nullptr);
        EXPECT_EQ(reinterpret_cast<std::uintptr_t>(b.get()) % kDirectIoAlign, 0U);
        const std::size_t pages = n == 0 ? 1 : (n + kDirectIoAlign - 1) / kDirectIoAlign;
        b[pages * kDirectIoAlign - 1] = std::byte{1};
    }
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
    const direct_io_buffer buf = allocate_direct_io_buffer(2 * kDirectIoAlign);
    ASSERT_NE(buf, nullptr);
    std::byte* raw = buf.get();
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

// read_at_nowait of bytes just written (in the page cache): read_at's count and bytes, also a
// short count at end of file and 0 past it. After fdatasync + POSIX_FADV_DONTNEED the pages
// may be gone: then it must say would-block (never wait, never return wrong bytes).
TEST_F(PosixFileSystem, NowaitReadServesCachedBytes) {
    auto fs = posix_file_system();
    const auto path = path_join(dir_, "n");
    auto f = fs->open(path, open_mode::create_exclusive);
    ASSERT_TRUE(f);
    std::string data(3 * 4096 + 100, '\0');
    for (std::size_t i = 0; i < data.size(); ++i) {
        data[i] = static_cast<char>('a' + i % 26);
    }
    ASSERT_TRUE((*f)->write_at(0, as_bytes(data)));
    std::string out(data.size() + 50, '\0');
    auto n = (*f)->read_at_nowait(0, {reinterpret_cast<std::byte*>(out.data()), out.size()});
    if (!n && n.error() == std::errc::operation_would_block) {
        GTEST_SKIP() << "this kernel/file system does not serve RWF_NOWAIT reads";
    }
    ASSERT_TRUE(n) << n.error().message();
    EXPECT_EQ(*n, data.size());  // short only at end of file
    EXPECT_EQ(out.substr(0, data.size()), data);
    std::string mid(200, '\0');
    n = (*f)->read_at_nowait(4000, {reinterpret_cast<std::byte*>(mid.data()), mid.size()});
    ASSERT_TRUE(n);
    EXPECT_EQ(*n, 200U);
    EXPECT_EQ(mid, data.substr(4000, 200));
    n = (*f)->read_at_nowait(data.size() + 10,
                             {reinterpret_cast<std::byte*>(mid.data()), mid.size()});
    ASSERT_TRUE(n);
    EXPECT_EQ(*n, 0U);

    // Evicted (where the file system lets us): would-block or the right bytes, nothing else.
    ASSERT_TRUE((*f)->sync());
    auto r = fs->open(path, open_mode::read_only);
    ASSERT_TRUE(r);
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    ASSERT_GE(fd, 0);
    (void)::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    ::close(fd);
    std::string again(data.size(), '\0');
    n = (*r)->read_at_nowait(0, {reinterpret_cast<std::byte*>(again.data()), again.size()});
    if (n) {
        EXPECT_EQ(*n, data.size());
        EXPECT_EQ(again, data);
    } else {
        EXPECT_EQ(n.error(), std::errc::operation_would_block) << n.error().message();
    }
    // read_at always serves (and brings the pages back).
    ASSERT_EQ(*(*r)->read_at(0, {reinterpret_cast<std::byte*>(again.data()), again.size()}),
              data.size());
    EXPECT_EQ(again, data);
}

// A file implementation that does not override read_at_nowait answers would-block (the safe
// default), and forwarding_file passes the call to the file it wraps.
TEST(FileDefaults, NowaitReadDefaultsToWouldBlockAndForwards) {
    class plain final : public file {
    public:
        result<void> write_at(std::uint64_t, bytes_view) override { return {}; }
        result<void> writev_at(std::uint64_t, std::span<const bytes_view>) override { return {}; }
        result<std::size_t> read_at(std::uint64_t, std::span<std::byte> out) override {
            return out.size();
        }
        result<void> sync() override { return {}; }
        result<std::uint64_t> size() override { return std::uint64_t{0}; }
        result<void> truncate(std::uint64_t) override { return {}; }
        result<void> preallocate(std::uint64_t) override { return {}; }
    };
    std::array<std::byte, 8> buf{};
    plain p;
    EXPECT_EQ(p.read_at_nowait(0, buf).error(), std::errc::operation_would_block);
    forwarding_file fwd(std::make_unique<plain>());
    EXPECT_EQ(fwd.read_at_nowait(0, buf).error(), std::errc::operation_would_block);
    fault_file_system mem;
    auto m = mem.open("/x", open_mode::create);
    ASSERT_TRUE(m);
    ASSERT_TRUE((*m)->write_at(0, as_bytes("abc")));
    forwarding_file fm(std::move(*m));
    ASSERT_EQ(*fm.read_at_nowait(0, buf), 3U);
    EXPECT_EQ(buf[2], std::byte{'c'});
    mem.set_nowait_reads(false);  // a cold cache: every nowait read would block
    EXPECT_EQ(fm.read_at_nowait(0, buf).error(), std::errc::operation_would_block);
    EXPECT_EQ(*fm.read_at(0, buf), 3U);  // read_at still serves
    mem.set_nowait_reads(true);
    EXPECT_EQ(*fm.read_at_nowait(1, buf), 2U);
}

}  // namespace
}  // namespace nereus
