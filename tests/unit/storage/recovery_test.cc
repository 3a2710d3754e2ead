// Recovery: journal replay, torn tails, corruption reports, checkpoints (in-memory fault fs).

#include "nereus/base/fault_file_system.h"
#include "nereus/storage/errc.h"
#include "nereus/storage/format.h"
#include "nereus/storage/journal_scan.h"
#include "nereus/storage/stream_store.h"
#include "nereus/storage/verify.h"

#include <gtest/gtest.h>

#include "support/payloads.h"
#include "support/store_helpers.h"

namespace nereus::storage {
namespace {

using namespace testing;

class Recovery : public ::testing::Test {
protected:
    std::unique_ptr<stream_store> open(store_options o = {}) { return open_store(fs_, "/db", o); }
    // Simulates the machine dying: nothing more reaches the disk, then unsynced data is lost.
    void power_cut(std::unique_ptr<stream_store>& s) {
        fs_->crash_now();
        s.reset();
        fs_->power_loss();
    }
    // The last journal file (journal/ may also hold a prepared spare, which is not one).
    std::string last_journal() {
        auto names = fs_->list_dir("/db/journal");
        EXPECT_TRUE(names && !names->empty());
        std::string last;
        for (const auto& n : *names) {
            if (format::parse_journal_file_name(n)) {
                last = "/db/journal/" + n;
            }
        }
        return last;
    }
    // Where the blocks of a journal file end (before a prepared file's zero tail).
    std::uint64_t blocks_end(const std::string& path) {
        auto f = fs_->open(path, open_mode::read_only);
        EXPECT_TRUE(f);
        auto s = scan_journal_file(**f, 0, 0, nullptr);
        EXPECT_TRUE(s);
        EXPECT_FALSE(s->defect);
        return s->end_pos;
    }
    std::vector<std::byte> read_file(const std::string& path) {
        auto f = fs_->open(path, open_mode::read_only);
        EXPECT_TRUE(f) << path << ": " << f.error().message();
        if (!f) {
            return {};
        }
        std::vector<std::byte> b(*(*f)->size());
        EXPECT_TRUE((*f)->read_at(0, b));
        return b;
    }
    void write_file_at(const std::string& path, std::uint64_t pos, std::vector<std::byte> bytes) {
        auto f = fs_->open(path, open_mode::read_write);
        ASSERT_TRUE(f);
        ASSERT_TRUE((*f)->write_at(pos, bytes));
        ASSERT_TRUE((*f)->sync());
    }
    void flip_byte(const std::string& path, std::uint64_t pos) {
        auto b = read_file(path);
        ASSERT_LT(pos, b.size());
        write_file_at(path, pos, {b[pos] ^ std::byte{0x5a}});
    }
    std::shared_ptr<fault_file_system> fs_ = std::make_shared<fault_file_system>();
};

TEST_F(Recovery, PowerLossReplaysTheJournalIntoLostSegmentData) {
    auto s = open();
    ASSERT_NE(s, nullptr);
    ASSERT_TRUE(s->create_stream(stream_id(1)));
    ASSERT_TRUE(s->create_stream(stream_id(2)));
    for (int i = 0; i < 50; ++i) {
        ASSERT_TRUE(s->append_sync(stream_id(1 + i % 2), payload(1 + i % 2, i / 2, 40)));
    }
    power_cut(s);  // segment bytes were never synced: only the journal has them
    s = open();
    ASSERT_NE(s, nullptr);
    for (std::uint64_t sid = 1; sid <= 2; ++sid) {
        auto all = read_all(*s, stream_id(sid));
        ASSERT_EQ(all.size(), 25U);
        for (std::size_t i = 0; i < all.size(); ++i) {
            EXPECT_EQ(all[i], payload(sid, i, 40));
        }
    }
    // And again: recovery's own work is durable once open() returns.
    power_cut(s);
    s = open();
    ASSERT_NE(s, nullptr);
    EXPECT_EQ(s->info(stream_id(1))->end.value(), 25U);
}

TEST_F(Recovery, TornJournalTailIsTruncated) {
    for (int variant = 0; variant < 3; ++variant) {
        fs_ = std::make_shared<fault_file_system>();
        auto s = open();
        ASSERT_NE(s, nullptr);
        ASSERT_TRUE(s->create_stream(stream_id(1)));
        for (int i = 0; i < 10; ++i) {
            ASSERT_TRUE(s->append_sync(stream_id(1), payload(1, i, 64)));
        }
        fs_->crash_now();
        s.reset();
        fs_->process_crash();
        const std::string j = last_journal();
        auto good = read_file(j);
        good.resize(blocks_end(j));  // the blocks; a prepared file has zeros after them
        ASSERT_GT(good.size(), 0U);
        // A partial block, a whole block with a bad checksum, or garbage.
        std::vector<std::byte> tail(good.begin(), good.begin() + 200);
        format::put_u64(tail.data() + 12, 11);  // the next sequence number
        if (variant == 0) {
            tail.resize(60);
        } else if (variant == 2) {
            std::fill(tail.begin(), tail.end(), std::byte{0x77});
        }
        write_file_at(j, good.size(), tail);
        auto rep = verify(*fs_, "/db");
        ASSERT_TRUE(rep);
        EXPECT_TRUE(rep->ok());
        ASSERT_EQ(rep->issues.size(), 1U);
        EXPECT_EQ(rep->issues[0].level, verify_issue::severity::repairable);
        EXPECT_EQ(rep->issues[0].file, j);
        EXPECT_EQ(rep->issues[0].byte_position, good.size());
        s = open();
        ASSERT_NE(s, nullptr) << "variant " << variant;
        auto all = read_all(*s, stream_id(1));
        ASSERT_EQ(all.size(), 10U);
        EXPECT_EQ(all[9], payload(1, 9, 64));
        ASSERT_TRUE(s->append_sync(stream_id(1), payload(1, 10, 64)));
        ASSERT_TRUE(s->close());
        rep = verify(*fs_, "/db");
        ASSERT_TRUE(rep);
        EXPECT_TRUE(rep->issues.empty()) << rep->issues[0].to_string();
    }
}

TEST_F(Recovery, CorruptionInTheMiddleOfTheJournalIsATypedError) {
    auto s = open();
    ASSERT_NE(s, nullptr);
    ASSERT_TRUE(s->create_stream(stream_id(1)));
    for (int i = 0; i < 3; ++i) {
        ASSERT_TRUE(s->append_sync(stream_id(1), payload(1, i, 64)));  // three blocks
    }
    power_cut(s);
    const std::string j = last_journal();
    const auto before = read_file(j);
    flip_byte(j, 40);  // inside the first block, followed by two valid blocks
    corruption_info info;
    auto r = stream_store::open(fs_, "/db", {}, &info);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error(), errc::corrupt_journal);
    EXPECT_EQ(info.file, j);
    EXPECT_EQ(info.byte_position, 0U);
    // Nothing was truncated or modified by the failed open.
    auto after = read_file(j);
    after[40] ^= std::byte{0x5a};
    EXPECT_EQ(after, before);
    auto rep = verify(*fs_, "/db");
    ASSERT_TRUE(rep);
    EXPECT_FALSE(rep->ok());
    ASSERT_FALSE(rep->issues.empty());
    EXPECT_EQ(rep->issues[0].file, j);
    EXPECT_EQ(rep->issues[0].byte_position, 0U);
}

TEST_F(Recovery, DamagedBlockLengthCannotHideTheBlocksAfterIt) {
    auto s = open();
    ASSERT_NE(s, nullptr);
    ASSERT_TRUE(s->create_stream(stream_id(1)));
    for (int i = 0; i < 3; ++i) {
        ASSERT_TRUE(s->append_sync(stream_id(1), payload(1, i, 64)));
    }
    power_cut(s);
    const std::string j = last_journal();
    flip_byte(j, 5);  // the first block's length field
    auto r = stream_store::open(fs_, "/db");
    ASSERT_FALSE(r) << "acknowledged blocks after a damaged one must not be truncated";
    EXPECT_EQ(r.error(), errc::corrupt_journal);
}

TEST_F(Recovery, CorruptSealedSegmentIsATypedErrorOnRead) {
    auto o = tiny_options();
    auto s = open(o);
    ASSERT_NE(s, nullptr);
    ASSERT_TRUE(s->create_stream(stream_id(6)));
    for (int i = 0; i < 40; ++i) {
        ASSERT_TRUE(s->append_sync(stream_id(6), payload(6, i, 100)));
    }
    ASSERT_TRUE(s->close());
    s.reset();
    const std::string seg = "/db/streams/0000000000000006/00000000000000000000.log";
    flip_byte(seg, 116 * 3 + 20);  // payload of offset 3
    s = open(o);
    ASSERT_NE(s, nullptr);  // sealed segments are trusted by name at open
    auto b = s->read(stream_id(6), offset(0), 100, 1 << 20);
    ASSERT_FALSE(b);
    EXPECT_EQ(b.error(), errc::corrupt_segment);
    auto c = s->last_corruption();
    ASSERT_TRUE(c);
    EXPECT_EQ(c->stream, stream_id(6));
    EXPECT_EQ(c->file, seg);
    EXPECT_EQ(c->at, offset(3));
    EXPECT_EQ(c->byte_position, 116U * 3);
    // Entries in intact segments still read.
    auto later = s->read(stream_id(6), offset(20), 5, 1 << 20);
    ASSERT_TRUE(later);
    EXPECT_EQ(later->size(), 5U);
    ASSERT_TRUE(s->close());
    auto rep = verify(*fs_, "/db");
    ASSERT_TRUE(rep);
    EXPECT_FALSE(rep->ok());
    ASSERT_EQ(rep->issues.size(), 1U);
    EXPECT_EQ(rep->issues[0].stream, stream_id(6));
    EXPECT_EQ(rep->issues[0].file, seg);
    EXPECT_EQ(rep->issues[0].at, offset(3));
}

TEST_F(Recovery, BadActiveSegmentRecordNotCoveredByTheJournalIsATypedError) {
    auto s = open();
    ASSERT_NE(s, nullptr);
    ASSERT_TRUE(s->create_stream(stream_id(2)));
    for (int i = 0; i < 5; ++i) {
        ASSERT_TRUE(s->append_sync(stream_id(2), payload(2, i, 100)));
    }
    ASSERT_TRUE(s->close());  // checkpoint at the journal's end: it covers nothing any more
    s.reset();
    const std::string seg = "/db/streams/0000000000000002/00000000000000000000.log";
    // Bytes after the synced end that no journal record explains.
    write_file_at(seg, 116 * 5, std::vector<std::byte>(10, std::byte{0x33}));
    corruption_info info;
    auto r = stream_store::open(fs_, "/db", {}, &info);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error(), errc::corrupt_segment);
    EXPECT_EQ(info.stream, stream_id(2));
    EXPECT_EQ(info.file, seg);
    EXPECT_EQ(info.at, offset(5));
    EXPECT_EQ(info.byte_position, 116U * 5);
    EXPECT_EQ(read_file(seg).size(), 116U * 5 + 10) << "a failed open changes nothing";
}

TEST_F(Recovery, CorruptSyncedPartOfTheActiveSegmentIsATypedErrorOnRead) {
    auto s = open();
    ASSERT_NE(s, nullptr);
    ASSERT_TRUE(s->create_stream(stream_id(2)));
    for (int i = 0; i < 5; ++i) {
        ASSERT_TRUE(s->append_sync(stream_id(2), payload(2, i, 100)));
    }
    ASSERT_TRUE(s->close());
    s.reset();
    const std::string seg = "/db/streams/0000000000000002/00000000000000000000.log";
    flip_byte(seg, 116 * 2 + 50);
    s = open();  // the checkpointed (synced) part is trusted at open, checked on first read
    ASSERT_NE(s, nullptr);
    EXPECT_EQ(s->info(stream_id(2))->end.value(), 5U);
    auto b = s->read(stream_id(2), offset(1), 10, 1 << 20);
    ASSERT_FALSE(b);
    EXPECT_EQ(b.error(), errc::corrupt_segment);
    auto c = s->last_corruption();
    ASSERT_TRUE(c);
    EXPECT_EQ(c->stream, stream_id(2));
    EXPECT_EQ(c->file, seg);
    EXPECT_EQ(c->at, offset(2));
    EXPECT_EQ(c->byte_position, 116U * 2);
    // Appends go on.
    ASSERT_TRUE(s->append_sync(stream_id(2), payload(2, 5, 100)));
}

TEST_F(Recovery, TornActiveSegmentTailCoveredByTheJournalIsRepaired) {
    auto s = open();
    ASSERT_NE(s, nullptr);
    ASSERT_TRUE(s->create_stream(stream_id(2)));
    for (int i = 0; i < 5; ++i) {
        ASSERT_TRUE(s->append_sync(stream_id(2), payload(2, i, 100)));
    }
    fs_->crash_now();
    s.reset();
    fs_->process_crash();  // the page cache survives: segment and journal both hold 0..4
    const std::string seg = "/db/streams/0000000000000002/00000000000000000000.log";
    flip_byte(seg, 116 * 3 + 50);
    auto rep = verify(*fs_, "/db");
    ASSERT_TRUE(rep);
    EXPECT_TRUE(rep->ok());
    ASSERT_EQ(rep->issues.size(), 1U);
    EXPECT_EQ(rep->issues[0].level, verify_issue::severity::repairable);
    s = open();
    ASSERT_NE(s, nullptr);
    auto all = read_all(*s, stream_id(2));
    ASSERT_EQ(all.size(), 5U);
    EXPECT_EQ(all[3], payload(2, 3, 100));
    EXPECT_EQ(all[4], payload(2, 4, 100));
}

TEST_F(Recovery, CheckpointsDeleteJournalFilesAndRecoveryStillFindsEverything) {
    auto o = tiny_options();
    auto s = open(o);
    ASSERT_NE(s, nullptr);
    for (std::uint64_t sid = 0; sid < 4; ++sid) {
        ASSERT_TRUE(s->create_stream(stream_id(sid)));
    }
    int n = 0;
    // Checkpoints run in the background; keep appending until several have happened (bounded).
    for (; n < 400 || (n < 20000 && s->stats().checkpoints < 6); ++n) {
        ASSERT_TRUE(s->append_sync(stream_id(n % 4), payload(n % 4, n / 4, 90)));
    }
    while (n % 4 != 0) {
        ASSERT_TRUE(s->append_sync(stream_id(n % 4), payload(n % 4, n / 4, 90)));
        ++n;
    }
    EXPECT_GE(s->stats().checkpoints, 6U);
    EXPECT_GT(s->stats().journal_rolls, 5U);
    auto names = fs_->list_dir("/db/journal");
    ASSERT_TRUE(names);
    EXPECT_LT(names->size(), s->stats().journal_rolls) << "old journal files are deleted";
    power_cut(s);
    s = open(o);
    ASSERT_NE(s, nullptr);
    for (std::uint64_t sid = 0; sid < 4; ++sid) {
        auto all = read_all(*s, stream_id(sid));
        ASSERT_EQ(all.size(), static_cast<std::size_t>(n / 4));
        for (std::size_t i = 0; i < all.size(); ++i) {
            ASSERT_EQ(all[i], payload(sid, i, 90)) << sid << " " << i;
        }
    }
}

// A trim whose directory sync failed leaves the segment's removal only in the page cache. A
// process crash keeps that cache, so the next open sees the segment gone and reports the later
// `first`; that report must then be durable: a power loss after the open must not bring the
// trimmed segment back (`first` never moves backwards). Found by the power-loss campaign.
TEST_F(Recovery, FirstReportedAfterRecoverySurvivesALaterPowerLoss) {
    auto o = tiny_options();
    auto s = open(o);
    ASSERT_NE(s, nullptr);
    const stream_id id(7);
    ASSERT_TRUE(s->create_stream(id));
    for (int i = 0; i < 40; ++i) {
        ASSERT_TRUE(s->append_sync(id, payload(7, i, 100)));  // 116 B records: 8 per segment
    }
    ASSERT_TRUE(s->close());
    s = open(o);
    ASSERT_NE(s, nullptr);
    ASSERT_TRUE(s->trim(id, offset(0)));  // the first trim after an open syncs the directory
    fs_->fail_syncs("/db/streams/", 1);   // the directory sync after the removal fails
    auto failed = s->trim(id, offset(20));
    ASSERT_FALSE(failed) << "the removal was never made durable";
    // The process dies; the page cache (with the removal) survives.
    fs_->crash_now();
    s.reset();
    fs_->process_crash();
    s = open(o);
    ASSERT_NE(s, nullptr);
    const auto seen = s->info(id)->first;
    ASSERT_GT(seen.value(), 0U) << "the open saw the removal (precondition of this test)";
    power_cut(s);
    s = open(o);
    ASSERT_NE(s, nullptr);
    EXPECT_EQ(s->info(id)->first, seen) << "a trimmed segment came back after a power loss";
    EXPECT_EQ(s->info(id)->end.value(), 40U);
}

TEST_F(Recovery, CorruptCheckpointIsATypedError) {
    auto s = open();
    ASSERT_NE(s, nullptr);
    ASSERT_TRUE(s->close());
    s.reset();
    flip_byte("/db/checkpoint", 9);
    corruption_info info;
    auto r = stream_store::open(fs_, "/db", {}, &info);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error(), errc::corrupt_checkpoint);
    EXPECT_EQ(info.file, "/db/checkpoint");
}

TEST_F(Recovery, DeletedStreamNeverResurrectsFromTheJournal) {
    auto s = open();
    ASSERT_NE(s, nullptr);
    ASSERT_TRUE(s->create_stream(stream_id(1)));
    for (int i = 0; i < 5; ++i) {
        ASSERT_TRUE(s->append_sync(stream_id(1), payload(1, i, 30)));
    }
    ASSERT_TRUE(s->delete_stream(stream_id(1)));
    ASSERT_TRUE(s->create_stream(stream_id(1)));
    ASSERT_TRUE(s->append_sync(stream_id(1), payload(1, 99, 30)));
    power_cut(s);
    s = open();
    ASSERT_NE(s, nullptr);
    auto all = read_all(*s, stream_id(1));
    ASSERT_EQ(all.size(), 1U);
    EXPECT_EQ(all[0], payload(1, 99, 30));
}

TEST_F(Recovery, InterruptedDeleteIsFinishedAndInterruptedCreateIsDropped) {
    auto s = open();
    ASSERT_NE(s, nullptr);
    ASSERT_TRUE(s->create_stream(stream_id(1)));
    ASSERT_TRUE(s->append_sync(stream_id(1), payload(1, 0, 30)));
    ASSERT_TRUE(s->close());
    s.reset();
    // A tombstone left by a delete that crashed, and a stream dir whose first segment never made
    // it.
    {
        auto t = fs_->open("/db/streams/0000000000000001/DELETED", open_mode::create);
        ASSERT_TRUE(t);
    }
    ASSERT_TRUE(fs_->create_dir("/db/streams/0000000000000002.creating"));
    ASSERT_TRUE(fs_->create_dir("/db/streams/0000000000000003"));  // no segment at all
    s = open();
    ASSERT_NE(s, nullptr);
    EXPECT_TRUE(s->list_streams().empty());
    EXPECT_EQ(fs_->list_dir("/db/streams")->size(), 0U);
}

}  // namespace
}  // namespace nereus::storage
