#include "nereus/base/fault_file_system.h"

#include "nereus/base/direct_io_buffer.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace nereus {
namespace {

bytes_view as_bytes(const std::string& s) {
    return {reinterpret_cast<const std::byte*>(s.data()), s.size()};
}

std::string read_all(file_system& fs, const std::string& path) {
    auto f = fs.open(path, open_mode::read_only);
    EXPECT_TRUE(f.has_value());
    if (!f) {
        return "<missing>";
    }
    std::string out(static_cast<std::size_t>(*(*f)->size()), '\0');
    auto n = (*f)->read_at(0, {reinterpret_cast<std::byte*>(out.data()), out.size()});
    EXPECT_TRUE(n.has_value());
    return out;
}

TEST(FaultFileSystem, PowerLossDropsUnsyncedBytesKeepsSynced) {
    fault_file_system fs;
    ASSERT_TRUE(fs.create_dirs("/d"));
    auto f = fs.open("/d/a", open_mode::create);
    ASSERT_TRUE(f);
    ASSERT_TRUE((*f)->write_at(0, as_bytes("hello")));
    ASSERT_TRUE((*f)->sync());
    ASSERT_TRUE(fs.sync_dir("/d"));
    ASSERT_TRUE((*f)->write_at(5, as_bytes(" world")));
    EXPECT_EQ(read_all(fs, "/d/a"), "hello world");
    fs.power_loss();
    EXPECT_EQ(read_all(fs, "/d/a"), "hello");
    // The old handle belongs to the crashed "process".
    EXPECT_EQ((*f)->size().error(), std::errc::bad_file_descriptor);
}

TEST(FaultFileSystem, NewFileNeedsDirectorySync) {
    fault_file_system fs;
    ASSERT_TRUE(fs.create_dirs("/d"));
    {
        auto f = fs.open("/d/a", open_mode::create);
        ASSERT_TRUE((*f)->write_at(0, as_bytes("x")));
        ASSERT_TRUE((*f)->sync());  // file data durable, its name is not
    }
    fs.power_loss();
    EXPECT_FALSE(*fs.exists("/d/a"));

    {
        auto f = fs.open("/d/b", open_mode::create);
        ASSERT_TRUE((*f)->write_at(0, as_bytes("y")));
        ASSERT_TRUE((*f)->sync());
    }
    ASSERT_TRUE(fs.sync_dir("/d"));
    fs.power_loss();
    EXPECT_EQ(read_all(fs, "/d/b"), "y");
}

TEST(FaultFileSystem, RenameAndRemoveAreDurableOnlyAfterDirSync) {
    fault_file_system fs;
    ASSERT_TRUE(fs.create_dirs("/d"));
    {
        auto f = fs.open("/d/tmp", open_mode::create);
        ASSERT_TRUE((*f)->write_at(0, as_bytes("v1")));
        ASSERT_TRUE((*f)->sync());
    }
    ASSERT_TRUE(fs.sync_dir("/d"));
    ASSERT_TRUE(fs.rename("/d/tmp", "/d/final"));
    fs.power_loss();
    EXPECT_TRUE(*fs.exists("/d/tmp"));
    EXPECT_FALSE(*fs.exists("/d/final"));

    ASSERT_TRUE(fs.rename("/d/tmp", "/d/final"));
    ASSERT_TRUE(fs.sync_dir("/d"));
    ASSERT_TRUE(fs.remove("/d/final"));
    fs.power_loss();
    EXPECT_EQ(read_all(fs, "/d/final"), "v1");
}

TEST(FaultFileSystem, RenameNoReplaceRefusesExisting) {
    fault_file_system fs;
    ASSERT_TRUE(fs.open("/a", open_mode::create));
    ASSERT_TRUE(fs.open("/b", open_mode::create));
    EXPECT_EQ(fs.rename_noreplace("/a", "/b").error(), std::errc::file_exists);
    EXPECT_TRUE(fs.rename_noreplace("/a", "/c"));
    EXPECT_FALSE(*fs.exists("/a"));
}

TEST(FaultFileSystem, ShortWriteWritesPrefixThenFails) {
    fault_file_system fs;
    fs.fail_writes("seg", std::errc::no_space_on_device, 3);
    auto f = fs.open("/seg1", open_mode::create);
    auto r = (*f)->write_at(0, as_bytes("abcdef"));
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error(), std::errc::no_space_on_device);
    EXPECT_EQ(read_all(fs, "/seg1"), "abc");
    // Only one write was to fail.
    EXPECT_TRUE((*f)->write_at(3, as_bytes("def")));
    // A path that does not match is untouched.
    fs.fail_writes("seg", std::errc::io_error);
    auto g = fs.open("/other", open_mode::create);
    EXPECT_TRUE((*g)->write_at(0, as_bytes("x")));
}

TEST(FaultFileSystem, FailedSyncLosesTheDataAtPowerLossEvenAfterALaterSync) {
    fault_file_system fs;
    auto f = fs.open("/j", open_mode::create);
    ASSERT_TRUE(fs.sync_dir("/"));
    ASSERT_TRUE((*f)->write_at(0, as_bytes("aaaa")));
    fs.fail_syncs("/j");
    EXPECT_EQ((*f)->sync().error(), std::errc::io_error);
    ASSERT_TRUE((*f)->sync());  // "succeeds", as on Linux, but the pages were already dropped
    fs.power_loss();
    EXPECT_NE(read_all(fs, "/j"), "aaaa");
}

// syncfs: every pending byte, size and directory entry under the root becomes durable at once,
// except bytes whose sync already failed (their pages were dropped, as on Linux).
TEST(FaultFileSystem, SyncAllMakesEverythingPendingDurableButNotFailedSyncs) {
    fault_file_system fs;
    ASSERT_TRUE(fs.create_dirs("/d/e"));
    {
        auto f = fs.open("/d/e/new", open_mode::create);
        ASSERT_TRUE((*f)->write_at(0, as_bytes("fresh")));
        auto g = fs.open("/d/failed", open_mode::create);
        ASSERT_TRUE((*g)->write_at(0, as_bytes("lost")));
        fs.fail_syncs("/d/failed");
        EXPECT_EQ((*g)->sync().error(), std::errc::io_error);
    }
    ASSERT_TRUE(fs.sync_dir("/d"));
    {
        auto old = fs.open("/d/old", open_mode::create);
        ASSERT_TRUE((*old)->write_at(0, as_bytes("x")));
        ASSERT_TRUE((*old)->sync());
    }
    ASSERT_TRUE(fs.sync_dir("/d"));
    ASSERT_TRUE(fs.remove("/d/old"));
    ASSERT_TRUE(fs.sync_all("/d"));
    fs.power_loss();
    EXPECT_EQ(read_all(fs, "/d/e/new"), "fresh");
    EXPECT_FALSE(*fs.exists("/d/old")) << "a removal is durable after sync_all";
    EXPECT_NE(read_all(fs, "/d/failed"), "lost");
    fs.crash_now();
    EXPECT_EQ(fs.sync_all("/d").error(), std::errc::io_error);
}

// A slow disk: the matching sync sleeps, without the lock (other files carry on), then syncs.
TEST(FaultFileSystem, DelayedSyncIsSlowButDurableAndBlocksNothingElse) {
    fault_file_system fs;
    auto f = fs.open("/slow", open_mode::create);
    auto g = fs.open("/fast", open_mode::create);
    ASSERT_TRUE(fs.sync_dir("/"));
    ASSERT_TRUE((*f)->write_at(0, as_bytes("aaaa")));
    fs.delay_syncs("/slow", std::chrono::milliseconds(1500));
    std::atomic<bool> done{false};
    const auto t0 = std::chrono::steady_clock::now();
    std::thread t([&] {
        EXPECT_TRUE((*f)->sync());
        done = true;
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    ASSERT_TRUE((*g)->write_at(0, as_bytes("bb")));
    ASSERT_TRUE((*g)->sync());
    EXPECT_FALSE(done.load()) << "the delayed sync returned before its delay";
    t.join();
    EXPECT_GE(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(1500));
    ASSERT_TRUE((*f)->sync()) << "count 1: the next sync is not delayed";
    fs.power_loss();
    EXPECT_EQ(read_all(fs, "/slow"), "aaaa");
    EXPECT_EQ(read_all(fs, "/fast"), "bb");
}

TEST(FaultFileSystem, SpaceLimitGivesEnospcAfterWhatFits) {
    fault_file_system fs;
    fs.set_space_limit(10);
    auto f = fs.open("/x", open_mode::create);
    ASSERT_TRUE((*f)->write_at(0, as_bytes("12345678")));
    auto r = (*f)->write_at(8, as_bytes("abcd"));
    EXPECT_EQ(r.error(), std::errc::no_space_on_device);
    EXPECT_EQ(read_all(fs, "/x"), "12345678ab");
    // Overwrites inside the file need no space.
    EXPECT_TRUE((*f)->write_at(0, as_bytes("zz")));
}

TEST(FaultFileSystem, CrashAfterBytesStopsMidWriteAndFailsEverything) {
    fault_file_system fs;
    auto f = fs.open("/x", open_mode::create);
    ASSERT_TRUE(fs.sync_dir("/"));
    ASSERT_TRUE((*f)->write_at(0, as_bytes("abc")));
    ASSERT_TRUE((*f)->sync());
    fs.crash_after_bytes(2);
    EXPECT_EQ((*f)->write_at(3, as_bytes("defg")).error(), std::errc::io_error);
    EXPECT_TRUE(fs.crashed());
    EXPECT_FALSE(fs.exists("/x"));
    EXPECT_FALSE((*f)->sync());
    fs.process_crash();  // kill -9: the page cache survives, with the partial write
    EXPECT_EQ(read_all(fs, "/x"), "abcde");
}

TEST(FaultFileSystem, TornPowerLossNeverInventsBytes) {
    // Whatever a torn power loss keeps, every byte is either the old durable byte, the new
    // written byte, or a zero beyond the old size.
    for (std::uint64_t seed = 0; seed < 50; ++seed) {
        fault_file_system fs;
        {
            auto f = fs.open("/x", open_mode::create);
            ASSERT_TRUE((*f)->write_at(0, as_bytes("AAAAAAAA")));
            ASSERT_TRUE((*f)->sync());
            ASSERT_TRUE(fs.sync_dir("/"));
            ASSERT_TRUE((*f)->write_at(4, as_bytes("BBBBBBBB")));
        }
        fs.power_loss_torn(seed);
        const std::string s = read_all(fs, "/x");
        ASSERT_TRUE(s.size() == 8 || s.size() == 12) << s.size();
        for (std::size_t i = 0; i < s.size(); ++i) {
            const char c = s[i];
            if (i < 4) {
                EXPECT_EQ(c, 'A');
            } else if (i < 8) {
                EXPECT_TRUE(c == 'A' || c == 'B');
            } else {
                EXPECT_TRUE(c == 'B' || c == '\0');
            }
        }
    }
}

TEST(FaultFileSystem, CountsSyncsAndHandles) {
    fault_file_system fs;
    EXPECT_EQ(fs.open_files(), 0U);
    {
        auto f = fs.open("/x", open_mode::create);
        auto g = fs.open("/x", open_mode::read_only);
        EXPECT_EQ(fs.open_files(), 2U);
        ASSERT_TRUE((*f)->sync());
        EXPECT_EQ(fs.sync_count(), 1U);
        EXPECT_FALSE((*g)->write_at(0, as_bytes("no")));
    }
    EXPECT_EQ(fs.open_files(), 0U);
    EXPECT_TRUE(fs.list_dir("/").has_value());
    EXPECT_EQ(fs.list_dir("/x").error(), std::errc::not_a_directory);
}

// file_system's default open_direct() (every test double): alignment checked as O_DIRECT
// does, and each write synced, so it survives a power loss at once.
TEST(FaultFileSystemDirect, EmulatedDirectWritesAreAlignedAndDurable) {
    fault_file_system fs;
    ASSERT_TRUE(fs.create_dirs("/d"));
    {
        auto f = fs.open("/d/f", open_mode::create_exclusive);
        ASSERT_TRUE(f);
        ASSERT_TRUE(fs.sync_dir("/d"));
    }
    EXPECT_FALSE(fs.open_direct("/d/missing"));
    auto d = fs.open_direct("/d/f");
    ASSERT_TRUE(d);
    const direct_io_buffer buf = allocate_direct_io_buffer(kDirectIoAlign);
    ASSERT_NE(buf, nullptr);
    std::byte* raw = buf.get();
    std::memset(raw, 0x5a, kDirectIoAlign);
    const auto syncs = fs.sync_count();
    ASSERT_TRUE((*d)->write_at(kDirectIoAlign, {raw, kDirectIoAlign}));
    EXPECT_EQ(fs.sync_count(), syncs + 1);
    EXPECT_EQ((*d)->write_at(1, {raw, kDirectIoAlign}).error(), std::errc::invalid_argument);
    EXPECT_EQ((*d)->write_at(0, {raw, 1}).error(), std::errc::invalid_argument);
    EXPECT_EQ((*d)->write_at(0, {raw + 1, kDirectIoAlign}).error(), std::errc::invalid_argument);
    const bytes_view parts[] = {{raw, kDirectIoAlign}, {raw + 1, kDirectIoAlign - 1}};
    EXPECT_EQ((*d)->writev_at(0, parts).error(), std::errc::invalid_argument);
    fs.power_loss();
    auto r = fs.open("/d/f", open_mode::read_only);
    ASSERT_TRUE(r);
    std::vector<std::byte> out(2 * kDirectIoAlign);
    ASSERT_EQ(*(*r)->read_at(0, out), out.size()) << "the direct write's size survived";
    EXPECT_EQ(out[0], std::byte{0});
    EXPECT_EQ(out[kDirectIoAlign], std::byte{0x5a});
    EXPECT_EQ(out.back(), std::byte{0x5a});
}

}  // namespace
}  // namespace nereus
