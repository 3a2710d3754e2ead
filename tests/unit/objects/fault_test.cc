// Durability of fs_object_store under injected faults and restarts (fault_file_system):
// a put or remove that fails leaves the name absent; one that succeeds survives power loss;
// and a crash at any byte or any step of a put leaves the name absent or intact, never
// corrupt-visible.

#include "nereus/base/crc32c.h"
#include "nereus/base/fault_file_system.h"
#include "nereus/objects/errc.h"
#include "nereus/objects/fs_object_store.h"
#include "nereus/objects/object_file.h"
#include "nereus/objects/object_format.h"
#include "nereus/objects/verify.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "unit/objects/support/crash_point_file_system.h"
#include "unit/objects/support/store_fixture.h"
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace nereus::objects::testing {
namespace {

constexpr const char* store_dir = "/data/objects-store";

std::unique_ptr<fs_object_store> open_on(std::shared_ptr<file_system> fs) {
    auto opened = fs_object_store::open(std::move(fs), store_dir);
    EXPECT_TRUE(opened) << opened.error().message();
    return opened ? std::move(*opened) : nullptr;
}

// The name is either absent or holds exactly `expected`; corrupt is never acceptable.
// Returns true when present.
bool expect_absent_or_intact(object_store& store,
                             const std::string& name,
                             const std::vector<std::byte>& expected) {
    auto got = store.get(name);
    if (!got) {
        EXPECT_EQ(got.error(), errc::not_found) << name << ": " << got.error().message();
        return false;
    }
    EXPECT_EQ(got->bytes, expected) << name;
    EXPECT_EQ(got->checksum, crc32c::value(expected)) << name;
    return true;
}

// After recovery the store holds no corrupt object and no temp debris.
void expect_clean(file_system& fs) {
    auto report = verify(fs, store_dir);
    ASSERT_TRUE(report) << report.error().message();
    EXPECT_TRUE(report->ok());
    for (const auto& c : report->corrupt) {
        ADD_FAILURE() << "corrupt " << c.file_name << ": " << to_string(c.reason) << " "
                      << c.detail;
    }
    EXPECT_TRUE(report->leftover_temp_files.empty());
}

class ObjectStoreFaults : public ::testing::Test {
protected:
    void SetUp() override {
        store_ = open_on(fs_);
        ASSERT_NE(store_, nullptr);
        // An object that was durable before each fault: it must survive everything.
        ASSERT_EQ(store_->put_if_absent("base", base_).value(), put_outcome::created);
    }

    // Simulates a restart of the kind `how` and reopens the store.
    enum class restart { power_loss, process_crash };
    void restart_and_reopen(restart how) {
        store_.reset();
        if (how == restart::power_loss) {
            fs_->power_loss();
        } else {
            fs_->process_crash();
        }
        store_ = open_on(fs_);
        ASSERT_NE(store_, nullptr);
        EXPECT_EQ(store_->get("base").value().bytes, base_);
    }

    // A failed put must leave the name absent now, and absent after either kind of restart.
    void expect_failed_put_leaves_nothing(const std::string& name) {
        EXPECT_EQ(error_of(store_->get(name)), errc::not_found);
        EXPECT_EQ(store_->list(name).value(), std::vector<std::string>{});
        for (const auto how : {restart::process_crash, restart::power_loss}) {
            restart_and_reopen(how);
            EXPECT_EQ(error_of(store_->get(name)), errc::not_found);
            expect_clean(*fs_);
        }
        // The store works again once the fault is gone.
        EXPECT_EQ(store_->put_if_absent(name, payload_).value(), put_outcome::created);
        EXPECT_EQ(store_->get(name).value().bytes, payload_);
    }

    std::shared_ptr<fault_file_system> fs_ = std::make_shared<fault_file_system>();
    std::unique_ptr<fs_object_store> store_;
    const std::vector<std::byte> base_ = pattern(300, 7);
    const std::vector<std::byte> payload_ = pattern(700, 8);
};

TEST_F(ObjectStoreFaults, PutSyncsTheFileAndTheDirectoryOnce) {
    const auto syncs = fs_->sync_count();
    const auto dir_syncs = fs_->dir_sync_count();
    ASSERT_EQ(store_->put_if_absent("x", payload_).value(), put_outcome::created);
    EXPECT_EQ(fs_->sync_count() - syncs, 1U);
    EXPECT_EQ(fs_->dir_sync_count() - dir_syncs, 1U);
    EXPECT_EQ(fs_->open_files(), 0U);
}

TEST_F(ObjectStoreFaults, PowerLossAfterPutKeepsTheObjectIntact) {
    ASSERT_EQ(store_->put_if_absent("cursor/c1/5", payload_).value(), put_outcome::created);
    restart_and_reopen(restart::power_loss);
    auto got = store_->get("cursor/c1/5");
    ASSERT_TRUE(got) << got.error().message();
    EXPECT_EQ(got->bytes, payload_);
    EXPECT_EQ(store_->list("").value(), (std::vector<std::string>{"base", "cursor/c1/5"}));
    expect_clean(*fs_);
}

TEST_F(ObjectStoreFaults, TornPowerLossAfterPutKeepsTheObjectIntact) {
    for (std::uint64_t seed = 0; seed < 32; ++seed) {
        const auto name = fmt::format("n{}", seed);
        ASSERT_EQ(store_->put_if_absent(name, payload_).value(), put_outcome::created);
        store_.reset();
        fs_->power_loss_torn(seed);
        store_ = open_on(fs_);
        ASSERT_NE(store_, nullptr);
        EXPECT_EQ(store_->get(name).value().bytes, payload_) << seed;
        EXPECT_EQ(store_->get("base").value().bytes, base_) << seed;
    }
    expect_clean(*fs_);
}

TEST_F(ObjectStoreFaults, EioOnFileSyncFailsThePutAndLeavesNothing) {
    fs_->fail_syncs(std::string(temp_suffix));
    auto put = store_->put_if_absent("x", payload_);
    ASSERT_FALSE(put);
    EXPECT_EQ(put.error(), std::errc::io_error);
    // The temp file is gone at once, not only after the next open.
    EXPECT_TRUE(fs_->list_dir(std::string(store_dir) + "/tmp").value().empty());
    expect_failed_put_leaves_nothing("x");
}

TEST_F(ObjectStoreFaults, EioOnDirectorySyncFailsThePutAndLeavesNothing) {
    fs_->fail_syncs(std::string(store_dir) + "/objects");
    auto put = store_->put_if_absent("x", payload_);
    ASSERT_FALSE(put);
    EXPECT_EQ(put.error(), std::errc::io_error);
    expect_failed_put_leaves_nothing("x");
}

TEST_F(ObjectStoreFaults, EnospcFailsThePutAndLeavesNothing) {
    fs_->set_space_limit(fs_->used_bytes() + payload_.size() / 2);
    auto put = store_->put_if_absent("x", payload_);
    ASSERT_FALSE(put);
    EXPECT_EQ(put.error(), std::errc::no_space_on_device);
    EXPECT_TRUE(fs_->list_dir(std::string(store_dir) + "/tmp").value().empty());
    // Space is still short: a small object fits.
    EXPECT_EQ(store_->put_if_absent("small", pattern(10)).value(), put_outcome::created);
    fs_->set_space_limit(std::nullopt);
    expect_failed_put_leaves_nothing("x");
    EXPECT_EQ(store_->get("small").value().bytes, pattern(10));
}

TEST_F(ObjectStoreFaults, ShortWriteFailsThePutAndLeavesNothing) {
    for (const std::uint64_t keep :
         {std::uint64_t{0}, std::uint64_t{5}, std::uint64_t{40}, std::uint64_t{500}}) {
        const auto name = fmt::format("short/{}", keep);
        fs_->fail_writes(std::string(temp_suffix), std::errc::io_error, keep);
        auto put = store_->put_if_absent(name, payload_);
        ASSERT_FALSE(put) << keep;
        EXPECT_EQ(put.error(), std::errc::io_error);
        expect_failed_put_leaves_nothing(name);
    }
}

TEST_F(ObjectStoreFaults, PowerLossAfterRemoveKeepsTheObjectAbsent) {
    ASSERT_EQ(store_->put_if_absent("gone", payload_).value(), put_outcome::created);
    ASSERT_TRUE(store_->remove("gone"));
    restart_and_reopen(restart::power_loss);
    EXPECT_EQ(error_of(store_->get("gone")), errc::not_found);
    EXPECT_EQ(store_->list("").value(), std::vector<std::string>{"base"});
    expect_clean(*fs_);
}

TEST_F(ObjectStoreFaults, EioOnDirectorySyncFailsTheRemove) {
    ASSERT_EQ(store_->put_if_absent("gone", payload_).value(), put_outcome::created);
    fs_->fail_syncs(std::string(store_dir) + "/objects");
    EXPECT_FALSE(store_->remove("gone"));
    // Not confirmed, so either outcome is allowed after a power loss, but never corruption.
    restart_and_reopen(restart::power_loss);
    expect_absent_or_intact(*store_, "gone", payload_);
    expect_clean(*fs_);
}

// A process died between its rename and its directory sync, so the page cache shows an
// object the disk may not have. The next open() syncs the directory: everything a reopened
// store shows is durable, and "already exists" answers are durable too.
TEST_F(ObjectStoreFaults, ObjectsVisibleAfterRecoveryAreDurable) {
    auto crash_fs = std::make_shared<crash_point_file_system>(fs_);
    store_ = open_on(crash_fs);
    ASSERT_NE(store_, nullptr);
    crash_fs->crash_after_ops(4);  // create temp, write, sync, rename | directory sync
    ASSERT_FALSE(store_->put_if_absent("x", payload_));
    store_.reset();
    fs_->process_crash();  // kill -9: the page cache keeps the rename

    store_ = open_on(fs_);  // recovery in a new process
    ASSERT_NE(store_, nullptr);
    EXPECT_EQ(store_->get("x").value().bytes, payload_);
    restart_and_reopen(restart::power_loss);
    EXPECT_EQ(store_->get("x").value().bytes, payload_);
    EXPECT_EQ(store_->put_if_absent("x", payload_).value(), put_outcome::already_exists_same);
}

// The same within one process: a concurrent put has renamed its object into place but not
// yet synced the directory; a put that finds it must not report it durable before it is.
TEST_F(ObjectStoreFaults, AlreadyExistsSameFromAConcurrentPutIsDurable) {
    const std::string temp = std::string(store_dir) + "/tmp/concurrent.tmp";
    {
        auto f = fs_->open(temp, open_mode::create_exclusive);
        ASSERT_TRUE(f);
        ASSERT_TRUE(write_object_file(**f, "x", payload_));
    }
    ASSERT_TRUE(fs_->rename_noreplace(temp, std::string(store_dir) + "/objects/x"));
    EXPECT_EQ(store_->put_if_absent("x", payload_).value(), put_outcome::already_exists_same);
    restart_and_reopen(restart::power_loss);
    EXPECT_EQ(store_->get("x").value().bytes, payload_);
}

// Crash after N bytes of the put's writes, for every N from 0 to the object file's size,
// then lose power (plain and torn) or crash the process, and reopen.
TEST_F(ObjectStoreFaults, CrashAtEveryByteOfAPutLeavesAbsentOrIntact) {
    const std::string name = "cursor/orders/c1/42";
    const auto file_size = object_header_size + name.size() + payload_.size();
    int present = 0;
    for (std::uint64_t n = 0; n <= file_size; ++n) {
        for (int mode = 0; mode < 3; ++mode) {
            SCOPED_TRACE(fmt::format("crash after {} bytes, mode {}", n, mode));
            fs_ = std::make_shared<fault_file_system>();
            SetUp();
            fs_->crash_after_bytes(n);
            auto put = store_->put_if_absent(name, payload_);
            EXPECT_EQ(put.has_value(), n >= file_size);
            store_.reset();
            if (mode == 0) {
                fs_->power_loss();
            } else if (mode == 1) {
                fs_->power_loss_torn(n);
            } else {
                fs_->process_crash();
            }
            store_ = open_on(fs_);
            ASSERT_NE(store_, nullptr);
            const bool is_present = expect_absent_or_intact(*store_, name, payload_);
            if (put) {
                EXPECT_TRUE(is_present) << "a created object was lost";
            }
            present += is_present ? 1 : 0;
            EXPECT_EQ(store_->get("base").value().bytes, base_);
            expect_clean(*fs_);
        }
    }
    EXPECT_EQ(present, 3);  // only when the whole file was written
}

// Crash right after each file-system step of a put (create temp, write, sync, rename,
// directory sync), then restart three ways. A put that returned `created` must survive.
TEST_F(ObjectStoreFaults, CrashAfterEveryStepOfAPutLeavesAbsentOrIntact) {
    const std::string name = "snap/1";
    std::uint64_t steps = 0;
    {
        auto probe =
            std::make_shared<crash_point_file_system>(std::make_shared<fault_file_system>());
        auto s = open_on(probe);
        probe->crash_after_ops(std::nullopt);
        ASSERT_EQ(s->put_if_absent(name, payload_).value(), put_outcome::created);
        steps = probe->ops();
    }
    ASSERT_GE(steps, 5U);
    for (std::uint64_t k = 0; k <= steps; ++k) {
        for (int mode = 0; mode < 3; ++mode) {
            SCOPED_TRACE(fmt::format("crash after step {}, mode {}", k, mode));
            fs_ = std::make_shared<fault_file_system>();
            SetUp();
            store_.reset();
            auto crash_fs = std::make_shared<crash_point_file_system>(fs_);
            store_ = open_on(crash_fs);
            ASSERT_NE(store_, nullptr);
            crash_fs->crash_after_ops(k);
            auto put = store_->put_if_absent(name, payload_);
            store_.reset();
            if (mode == 0) {
                fs_->power_loss();
            } else if (mode == 1) {
                fs_->power_loss_torn(k * 3 + 1);
            } else {
                fs_->process_crash();
            }
            store_ = open_on(fs_);
            ASSERT_NE(store_, nullptr);
            const bool is_present = expect_absent_or_intact(*store_, name, payload_);
            if (put) {
                EXPECT_EQ(*put, put_outcome::created);
                EXPECT_TRUE(is_present) << "a created object was lost";
            }
            EXPECT_EQ(store_->get("base").value().bytes, base_);
            expect_clean(*fs_);
        }
    }
}

// The same for remove: a confirmed remove stays removed; an interrupted one leaves the
// object absent or intact.
TEST_F(ObjectStoreFaults, CrashAfterEveryStepOfARemoveLeavesAbsentOrIntact) {
    for (std::uint64_t k = 0; k <= 2; ++k) {
        for (int mode = 0; mode < 3; ++mode) {
            SCOPED_TRACE(fmt::format("crash after step {}, mode {}", k, mode));
            fs_ = std::make_shared<fault_file_system>();
            SetUp();
            ASSERT_EQ(store_->put_if_absent("victim", payload_).value(), put_outcome::created);
            store_.reset();
            auto crash_fs = std::make_shared<crash_point_file_system>(fs_);
            store_ = open_on(crash_fs);
            ASSERT_NE(store_, nullptr);
            crash_fs->crash_after_ops(k);
            auto removed = store_->remove("victim");
            store_.reset();
            if (mode == 0) {
                fs_->power_loss();
            } else if (mode == 1) {
                fs_->power_loss_torn(k + 100);
            } else {
                fs_->process_crash();
            }
            store_ = open_on(fs_);
            ASSERT_NE(store_, nullptr);
            const bool is_present = expect_absent_or_intact(*store_, "victim", payload_);
            if (removed) {
                EXPECT_FALSE(is_present) << "a confirmed remove was undone";
            }
            expect_clean(*fs_);
        }
    }
}

TEST_F(ObjectStoreFaults, LeftoverTempFileOfACrashedPutIsDeletedOnOpen) {
    fs_->crash_after_bytes(50);
    ASSERT_FALSE(store_->put_if_absent("x", payload_));
    store_.reset();
    fs_->process_crash();  // the half-written temp file stays in the page cache
    ASSERT_EQ(fs_->list_dir(std::string(store_dir) + "/tmp").value().size(), 1U);
    store_ = open_on(fs_);
    ASSERT_NE(store_, nullptr);
    EXPECT_EQ(store_->temp_files_removed_on_open(), 1U);
    EXPECT_TRUE(fs_->list_dir(std::string(store_dir) + "/tmp").value().empty());
    EXPECT_EQ(error_of(store_->get("x")), errc::not_found);
    // The deletion itself is durable.
    restart_and_reopen(restart::power_loss);
    EXPECT_TRUE(fs_->list_dir(std::string(store_dir) + "/tmp").value().empty());
}

TEST_F(ObjectStoreFaults, OpenOfANewStoreIsDurable) {
    // The layout created by open() survives a power loss with nothing else synced.
    auto fs = std::make_shared<fault_file_system>();
    ASSERT_NE(open_on(fs), nullptr);
    fs->power_loss();
    EXPECT_TRUE(fs->is_dir(std::string(store_dir) + "/objects").value());
    EXPECT_TRUE(fs->is_dir(std::string(store_dir) + "/tmp").value());
}

TEST_F(ObjectStoreFaults, ErrorsDuringReadAreIoErrorsNotCorruption) {
    ASSERT_EQ(store_->put_if_absent("x", payload_).value(), put_outcome::created);
    fs_->crash_now();
    auto got = store_->get("x");
    ASSERT_FALSE(got);
    EXPECT_EQ(got.error(), std::errc::io_error);
    EXPECT_FALSE(verify(*fs_, store_dir));
}

}  // namespace
}  // namespace nereus::objects::testing
