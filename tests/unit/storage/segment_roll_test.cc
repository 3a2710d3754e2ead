// Segment roll by entry count and age (store_options::segment_max_entries / segment_min_age,
// Pulsar's managedLedgerMaxEntriesPerLedger / managedLedgerMinLedgerRolloverTimeMinutes): a
// small stream rolls, so a trim can delete its acked prefix; a young segment does not roll; the
// rolled layout survives a power loss and recovery.

#include "nereus/base/fault_file_system.h"
#include "nereus/storage/stream_store.h"

#include <gtest/gtest.h>

#include "support/counting_file_system.h"
#include "support/payloads.h"
#include "support/store_helpers.h"
#include <atomic>
#include <chrono>
#include <thread>

namespace nereus::storage {
namespace {

using namespace testing;
using namespace std::chrono_literals;

TEST(SegmentRoll, ByEntryCountLetsATrimFreeASmallStream) {
    auto fs = std::make_shared<fault_file_system>();
    store_options o;
    o.segment_max_entries = 10;
    auto s = open_store(fs, "/db", o);
    ASSERT_NE(s, nullptr);
    ASSERT_TRUE(s->create_stream(stream_id(1)));
    for (int i = 0; i < 35; ++i) {
        ASSERT_TRUE(s->append_sync(stream_id(1), payload(1, i, 40)));
    }
    EXPECT_EQ(s->stats().segment_rolls, 3U) << "segments of 10 entries: 0, 10, 20, 30 (active)";
    auto t = s->trim(stream_id(1), offset(25));
    ASSERT_TRUE(t) << t.error().message();
    EXPECT_EQ(t->value(), 20U) << "the sealed segments wholly below 25 are deleted";
    auto info = s->info(stream_id(1));
    ASSERT_TRUE(info);
    EXPECT_EQ(info->first.value(), 20U);
    auto tail = read_all(*s, stream_id(1), 20);
    ASSERT_EQ(tail.size(), 15U);
    for (std::size_t i = 0; i < tail.size(); ++i) {
        EXPECT_EQ(tail[i], payload(1, 20 + i, 40));
    }
    ASSERT_TRUE(s->close());
    s.reset();
    fs->power_loss();
    s = open_store(fs, "/db", o);
    ASSERT_NE(s, nullptr);
    info = s->info(stream_id(1));
    ASSERT_TRUE(info);
    EXPECT_EQ(info->first.value(), 20U);
    EXPECT_EQ(read_all(*s, stream_id(1), 20).size(), 15U);
    auto r = s->append_sync(stream_id(1), payload(1, 35, 40));
    ASSERT_TRUE(r);
    EXPECT_EQ(r->value(), 35U);
}

TEST(SegmentRoll, AYoungSegmentDoesNotRollByEntryCount) {
    auto fs = std::make_shared<fault_file_system>();
    store_options o;
    o.segment_max_entries = 10;
    o.segment_min_age = std::chrono::hours(1);
    auto s = open_store(fs, "/db", o);
    ASSERT_NE(s, nullptr);
    ASSERT_TRUE(s->create_stream(stream_id(1)));
    for (int i = 0; i < 35; ++i) {
        ASSERT_TRUE(s->append_sync(stream_id(1), payload(1, i, 40)));
    }
    EXPECT_EQ(s->stats().segment_rolls, 0U);
    auto t = s->trim(stream_id(1), offset(25));
    ASSERT_TRUE(t);
    EXPECT_EQ(t->value(), 0U) << "one active segment: nothing to delete";
}

TEST(SegmentRoll, ByEntryCountOnceTheSegmentIsOldEnough) {
    auto fs = std::make_shared<fault_file_system>();
    store_options o;
    o.segment_max_entries = 5;
    o.segment_min_age = 50ms;
    auto s = open_store(fs, "/db", o);
    ASSERT_NE(s, nullptr);
    ASSERT_TRUE(s->create_stream(stream_id(1)));
    for (int i = 0; i < 8; ++i) {
        ASSERT_TRUE(s->append_sync(stream_id(1), payload(1, i, 40)));
    }
    // 0 unless this loaded machine took 50 ms for 8 appends: then it rolled at 5 already.
    const auto rolls = s->stats().segment_rolls;
    std::this_thread::sleep_for(60ms);  // ages the segment; the roll itself is not timed
    ASSERT_TRUE(s->append_sync(stream_id(1), payload(1, 8, 40)));
    if (rolls == 0) {
        EXPECT_EQ(s->stats().segment_rolls, 1U) << "old enough and over the entry count";
    } else {
        EXPECT_EQ(rolls, 1U);
    }
    EXPECT_EQ(read_all(*s, stream_id(1)).size(), 9U);
}

// The committer reads the segment's age once per group (not per record): after a roll inside a
// group the new segment is young again, so the rest of that group must not roll it by entry
// count. An old segment of 3 entries, then one group of 20: exactly one roll (at entry 5).
TEST(SegmentRoll, ASegmentRolledInsideAGroupIsYoungForTheRestOfIt) {
    auto fs = std::make_shared<counting_file_system>(std::make_shared<fault_file_system>());
    store_options o;
    o.segment_max_entries = 5;
    o.segment_min_age = 300ms;
    auto s = open_store(fs, "/db", o);
    ASSERT_NE(s, nullptr);
    ASSERT_TRUE(s->create_stream(stream_id(1)));
    for (int i = 0; i < 3; ++i) {
        ASSERT_TRUE(s->append_sync(stream_id(1), payload(1, i, 40)));
    }
    std::this_thread::sleep_for(350ms);  // the active segment is old enough now
    ASSERT_EQ(s->stats().segment_rolls, 0U);
    fs->close_gate();  // entry 3 commits alone and waits; 4..23 queue as one group
    pending_counter pending;
    std::atomic<int> ok{0};
    auto done = [&](result<offset> r) {
        ok += r ? 1 : 0;
        pending.done();
    };
    for (int i = 3; i < 24; ++i) {
        pending.add(1);
        s->append(stream_id(1), payload(1, i, 40), done);
        if (i == 3) {
            fs->wait_for_gate_waiter();
        }
    }
    fs->open_gate();
    pending.wait();
    EXPECT_EQ(ok.load(), 21);
    EXPECT_EQ(s->stats().segment_rolls, 1U) << "rolled at 5; the new segment is young";
    auto info = s->info(stream_id(1));
    ASSERT_TRUE(info);
    EXPECT_EQ(read_all(*s, stream_id(1)).size(), 24U);
}

}  // namespace
}  // namespace nereus::storage
