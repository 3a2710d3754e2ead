// Files missing at recovery (deleted by hand or lost) and faults during recovery itself, on the
// in-memory fault_file_system: the store either recovers everything acknowledged or refuses to
// open with an error; it never opens with acknowledged data silently gone.

#include "nereus/base/fault_file_system.h"
#include "nereus/storage/errc.h"
#include "nereus/storage/stream_store.h"

#include <gtest/gtest.h>

#include "support/payloads.h"
#include "support/store_helpers.h"

namespace nereus::storage {
namespace {

using namespace testing;

class MissingFiles : public ::testing::Test {
protected:
    // A store with 20 acknowledged appends on stream 1; closed cleanly or left as by a crash.
    void fill(bool clean_close) {
        auto s = open_store(fs_, "/db");
        ASSERT_NE(s, nullptr);
        ASSERT_TRUE(s->create_stream(stream_id(1)));
        for (std::uint64_t i = 0; i < 20; ++i) {
            ASSERT_TRUE(s->append_sync(stream_id(1), payload(1, i, 80)));
        }
        if (clean_close) {
            ASSERT_TRUE(s->close());
        } else {
            fs_->crash_now();
        }
        s.reset();
        if (clean_close) {
            fs_->power_loss();
        } else {
            fs_->power_loss();
        }
    }
    // Opens and says what came back: an error, or the full stream.
    ::testing::AssertionResult opens_with_everything_or_fails(std::string* error) {
        auto r = stream_store::open(fs_, "/db");
        if (!r) {
            *error = r.error().message();
            return ::testing::AssertionSuccess();
        }
        auto all = read_all(**r, stream_id(1));
        if (all.size() != 20) {
            return ::testing::AssertionFailure()
                   << "opened with " << all.size() << " of 20 acknowledged appends";
        }
        for (std::size_t i = 0; i < all.size(); ++i) {
            if (all[i] != payload(1, i, 80)) {
                return ::testing::AssertionFailure() << "append " << i << " differs";
            }
        }
        error->clear();
        return ::testing::AssertionSuccess();
    }
    std::vector<std::string> files(const std::string& dir) {
        auto names = fs_->list_dir(dir);
        return names ? *names : std::vector<std::string>{};
    }
    std::shared_ptr<fault_file_system> fs_ = std::make_shared<fault_file_system>();
};

TEST_F(MissingFiles, MissingCheckpoint) {
    fill(true);
    ASSERT_TRUE(fs_->remove("/db/checkpoint"));
    std::string error;
    EXPECT_TRUE(opens_with_everything_or_fails(&error));
    EXPECT_EQ(error, "") << "the checkpoint is an optimisation: recovery needs only the rest";
}

TEST_F(MissingFiles, MissingJournalFileAfterACrash) {
    fill(false);
    for (const auto& n : files("/db/journal")) {
        ASSERT_TRUE(fs_->remove("/db/journal/" + n));
    }
    auto r = stream_store::open(fs_, "/db");
    ASSERT_FALSE(r) << "opened without the journal that holds unsynced segment data";
    EXPECT_EQ(r.error(), errc::corrupt_journal) << r.error().message();
}

// The stream log keeps no manifest of streams: a stream whose directory or every segment is
// gone is unknown after recovery, and reads say so (unknown_stream, never an empty stream).
// The ledger registry names the stream, so the topic's open fails with stream_missing.
TEST_F(MissingFiles, StreamWithEverySegmentMissingIsUnknownNeverEmpty) {
    for (bool remove_dir : {false, true}) {
        fs_ = std::make_shared<fault_file_system>();
        fill(true);
        const auto dirs = files("/db/streams");
        ASSERT_FALSE(dirs.empty());
        const std::string d = "/db/streams/" + dirs[0];
        for (const auto& n : files(d)) {
            ASSERT_TRUE(fs_->remove(d + "/" + n));
        }
        if (remove_dir) {
            ASSERT_TRUE(fs_->remove_dir(d));
        }
        auto s = open_store(fs_, "/db");
        ASSERT_NE(s, nullptr);
        auto r = s->read(stream_id(1), offset(0), 10, 1 << 20);
        ASSERT_FALSE(r) << "a stream without its files read as data";
        EXPECT_EQ(r.error(), errc::unknown_stream) << r.error().message();
    }
}

// One sealed segment gone, later ones present. The stream log keeps no record of its trims
// (a trim deletes whole segments), so on its own it sees a stream starting later: a read at 0
// is a typed error (offset trimmed), never another entry's bytes. The ledger compares the
// stream's first offset with its own logical start and fails the topic's open
// (LedgerMissingSegment.LostFirstSegmentFailsTheOpenNeverReadsAsATrim).
TEST_F(MissingFiles, MissingFirstSegmentReadsAsTrimmedNeverAsOtherData) {
    auto o = tiny_options();
    {
        auto s = open_store(fs_, "/db", o);
        ASSERT_NE(s, nullptr);
        ASSERT_TRUE(s->create_stream(stream_id(1)));
        for (std::uint64_t i = 0; i < 60; ++i) {
            ASSERT_TRUE(s->append_sync(stream_id(1), payload(1, i, 80)));
        }
        ASSERT_TRUE(s->close());
    }
    const auto dirs = files("/db/streams");
    ASSERT_FALSE(dirs.empty());
    const std::string d = "/db/streams/" + dirs[0];
    const auto segs = files(d);
    ASSERT_GE(segs.size(), 3U);
    ASSERT_TRUE(fs_->remove(d + "/" + segs[0]));
    auto s = open_store(fs_, "/db", o);
    ASSERT_NE(s, nullptr);
    auto info = s->info(stream_id(1));
    ASSERT_TRUE(info);
    EXPECT_GT(info->first.value(), 0U);
    EXPECT_EQ(info->end.value(), 60U);
    auto first = s->read(stream_id(1), offset(0), 10, 1 << 20);
    ASSERT_FALSE(first) << "read at 0 returned entries of a missing segment";
    EXPECT_EQ(first.error(), errc::trimmed) << first.error().message();
    auto rest = read_all(*s, stream_id(1), info->first.value());
    ASSERT_EQ(rest.size(), 60 - info->first.value());
    for (std::size_t i = 0; i < rest.size(); ++i) {
        EXPECT_EQ(rest[i], payload(1, info->first.value() + i, 80));
    }
}

// ENOSPC and EIO while recovery writes (journal truncation, replay into segments, the fresh
// checkpoint): the open fails with the error; once the fault is gone it recovers everything.
TEST_F(MissingFiles, EnospcDuringRecoveryFailsTheOpenThenRecovers) {
    fill(false);
    fs_->set_space_limit(fs_->used_bytes());
    auto r = stream_store::open(fs_, "/db");
    std::printf("enospc during recovery: %s\n", r ? "opened" : r.error().message().c_str());
    if (r) {
        (void)(*r)->close();
    }
    fs_->set_space_limit(std::nullopt);
    std::string error;
    ASSERT_TRUE(opens_with_everything_or_fails(&error));
    EXPECT_EQ(error, "") << "did not recover once space was back";
}

TEST_F(MissingFiles, EioOnSyncDuringRecoveryFailsTheOpenThenRecovers) {
    fill(false);
    fs_->fail_syncs("", 1000);
    auto r = stream_store::open(fs_, "/db");
    EXPECT_FALSE(r) << "recovery ignored a failed sync";
    fs_->process_crash();  // clears the faults, keeps the page cache
    std::string error;
    ASSERT_TRUE(opens_with_everything_or_fails(&error));
    EXPECT_EQ(error, "");
    fs_->power_loss();
    ASSERT_TRUE(opens_with_everything_or_fails(&error));
    EXPECT_EQ(error, "") << "what the failed recovery did not sync was lost";
}

TEST_F(MissingFiles, EioOnCheckpointRenameDirSyncFailsTheOpenThenRecovers) {
    fill(false);
    fs_->fail_syncs("/db", 1);  // the first directory / file sync under /db during recovery
    auto r = stream_store::open(fs_, "/db");
    std::printf("eio on first recovery sync: %s\n", r ? "opened" : r.error().message().c_str());
    if (r) {
        (void)(*r)->close();
    }
    fs_->power_loss();
    std::string error;
    ASSERT_TRUE(opens_with_everything_or_fails(&error));
    EXPECT_EQ(error, "");
}

}  // namespace
}  // namespace nereus::storage
