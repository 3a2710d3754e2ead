// Engine behaviour beyond the scenarios: spill and compaction transitions, bytes per ack with
// many holes, redelivery counts, lifecycle admission, group commit.

#include "nereus/cursor/record_format.h"
#include "nereus/meta/sync.h"

#include <gtest/gtest.h>

#include "unit/cursor/support/harness.h"
#include <algorithm>
#include <atomic>
#include <future>

namespace nereus::cursor::test {
namespace {

class CursorEngine : public ::testing::TestWithParam<meta_kind> {
protected:
    CursorEngine() : h_(GetParam()) {}
    harness h_;
};

TEST_P(CursorEngine, SpillsCompactsAndReturnsInline) {
    h_.options().spill_threshold_bytes = 512;
    h_.stream().append_n(5000);
    auto c = h_.create("c1");
    const fence f = c->current_fence();
    for (offset x = 1; x < 2000; x += 2) {
        ASSERT_EQ(ok(ack_sync(*c, f, x)).status, ack_status::ok);
    }
    EXPECT_TRUE(c->snapshot().spilled);
    // Deltas are compacted: the live delta keys stay few.
    auto deltas = meta::list_sync(h_.meta(), c->keys().delta_prefix);
    ASSERT_TRUE(deltas.has_value());
    EXPECT_LT(deltas->size(), 200U);
    // Only the referenced snapshot remains.
    auto names = h_.objects().list(c->keys().object_prefix);
    ASSERT_TRUE(names.has_value());
    EXPECT_EQ(names->size(), 1U);
    ok(ack_cumulative_sync(*c, f, 4000));
    // The cumulative ack left a tiny state; the next compaction or fence op inlines it.
    ok(skip_sync(*c, f, 1));
    EXPECT_FALSE(c->snapshot().spilled);
    c.reset();
    h_.crash_meta();
    c = h_.reopen("c1");
    EXPECT_EQ(c->mark_delete(), 4002U);
}

// With 100k holes an individual ack writes bytes proportional to the change, not the state.
TEST_P(CursorEngine, AckCostIndependentOfHoleCount) {
    if (h_.kind() == meta_kind::memory) {
        GTEST_SKIP() << "measured once (RocksDB)";
    }
    h_.stream().append_n(300'000);
    auto c = h_.create("c1");
    const fence f = c->current_fence();
    std::vector<std::promise<result<op_result>>> ps(100'000);
    for (offset i = 0; i < 100'000; ++i) {
        c->ack(f, 2 * i + 1, [&ps, i](result<op_result> r) { ps[i].set_value(std::move(r)); });
    }
    for (auto& p : ps) {
        ASSERT_TRUE(p.get_future().get().has_value());
    }
    ASSERT_TRUE(c->snapshot().spilled);
    const auto before = h_.fs().bytes_written();
    auto root_before = meta::get_sync(h_.meta(), c->keys().root);
    for (offset i = 0; i < 50; ++i) {
        ASSERT_EQ(ok(ack_sync(*c, f, 250'000 + 2 * i)).status, ack_status::ok);
    }
    auto root_after = meta::get_sync(h_.meta(), c->keys().root);
    ASSERT_TRUE(root_before && root_after && *root_before && *root_after);
    // Snapshot writes (object store) amortize: at most one compaction in 50 acks here.
    const auto object_bytes = h_.fs().bytes_written() - before;
    EXPECT_LT((*root_after)->value.size(), 200U);
    RecordProperty("object_bytes_for_50_acks", std::to_string(object_bytes));
}

// The live delta count is capped (max_live_deltas): the commit that would exceed it compacts
// instead; the deltas it makes stale are erased by later commits (64 per commit) and recovery
// sees the same state at every step.
TEST_P(CursorEngine, DeltaCountCapForcesCompaction) {
    h_.options().spill_threshold_bytes = 0;
    h_.options().max_live_deltas = 5;
    h_.options().gc_erases_per_commit = 2;
    h_.stream().append_n(200);
    auto c = h_.create("c1");
    const fence f = c->current_fence();
    std::size_t max_live = 0;
    for (offset x = 1; x < 60; x += 2) {  // every ack adds a hole: one small delta per CAS
        ASSERT_EQ(ok(ack_sync(*c, f, x)).status, ack_status::ok);
        auto root = meta::get_sync(h_.meta(), c->keys().root);
        ASSERT_TRUE(root && *root);
        auto decoded = format::decode_root((*root)->value);
        ASSERT_TRUE(decoded.has_value());
        ASSERT_TRUE(decoded->spilled);
        max_live = std::max<std::size_t>(max_live, decoded->delta_count());
        EXPECT_LE(decoded->delta_count(), 5U) << x;
    }
    EXPECT_EQ(max_live, 5U);
    // Stale deltas are collected by later commits: never more than a cap's worth plus one
    // compaction's leftovers remain.
    auto deltas = meta::list_sync(h_.meta(), c->keys().delta_prefix);
    ASSERT_TRUE(deltas.has_value());
    EXPECT_LE(deltas->size(), 10U);
    const auto before = c->snapshot();
    c.reset();
    h_.crash_meta();
    c = h_.reopen("c1");
    EXPECT_EQ(c->snapshot().ranges, before.ranges);
    EXPECT_EQ(c->snapshot().ranges.size(), 30U);
}

TEST_P(CursorEngine, RedeliveryCountsLagNeverLead) {
    h_.stream().append_n(10);
    auto c = h_.create("c1");
    const fence f = c->current_fence();
    c->record_redelivery(3);
    c->record_redelivery(3);
    EXPECT_EQ(c->redelivery_count(3), 2U);
    // No CAS yet: a crash loses them (lag), never invents them.
    c.reset();
    h_.crash_meta();
    c = h_.reopen("c1");
    EXPECT_EQ(c->redelivery_count(3), 0U);
    c->record_redelivery(3);
    c->record_redelivery(4);
    ok(ack_sync(*c, f, 8));  // the next CAS carries them
    c.reset();
    h_.crash_meta();
    c = h_.reopen("c1");
    EXPECT_EQ(c->redelivery_count(3), 1U);
    EXPECT_EQ(c->redelivery_count(4), 1U);
    ok(ack_sync(*c, f, 3));  // acked entries drop their count
    EXPECT_EQ(c->redelivery_count(3), 0U);
    c->record_redelivery(4);
    ASSERT_TRUE(close_sync(*c).has_value());  // close flushes
    c = h_.reopen("c1");
    EXPECT_EQ(c->redelivery_count(4), 2U);
}

TEST_P(CursorEngine, LifecycleAdmission) {
    h_.stream().append_n(10);
    auto c = h_.create("c1");
    fence f = c->current_fence();
    EXPECT_EQ(c->life(), lifecycle::protection_pending);
    ok(ack_sync(*c, f, 1));  // admitted while pending
    ok(activate_sync(*c, f));
    EXPECT_EQ(c->life(), lifecycle::active);
    EXPECT_EQ(ok(activate_sync(*c, f)).status, ack_status::ok);  // idempotent
    ok(reset_sync(*c, f, reset_target::to_offset(5)));           // forward: stays ACTIVE
    EXPECT_EQ(c->life(), lifecycle::active);
    f = c->current_fence();
    ok(remove_sync(*c, f));
    const auto v = c->snapshot().root_version;
    for (auto r : {ack_sync(*c, f, 2), reset_sync(*c, f, reset_target::earliest()),
                   clear_backlog_sync(*c, f), skip_sync(*c, f, 1),
                   put_property_sync(*c, f, "a", "b"), activate_sync(*c, f), remove_sync(*c, f)}) {
        EXPECT_EQ(error_of(r), errc::cursor_deleted);
    }
    EXPECT_EQ(c->snapshot().root_version, v);  // nothing written
    EXPECT_EQ(h_.create("c1")->current_fence().generation, f.generation + 1);
    EXPECT_FALSE(create_sync(h_.env(), harness::id("c1"), initial_position::earliest()));
}

TEST_P(CursorEngine, FencesFromTheFutureAreInvalid) {
    h_.stream().append_n(10);
    auto c = h_.create("c1");
    fence f = c->current_fence();
    EXPECT_EQ(error_of(ack_sync(*c, fence{f.generation, f.epoch + 1}, 1)), errc::invalid_argument);
    EXPECT_EQ(error_of(ack_sync(*c, fence{f.generation + 1, f.epoch}, 1)), errc::invalid_argument);
}

TEST_P(CursorEngine, GroupCommitSharesCas) {
    h_.stream().append_n(5000);
    auto c = h_.create("c1");
    const fence f = c->current_fence();
    const auto v0 = c->snapshot().root_version;
    std::vector<std::promise<result<op_result>>> ps(5000);
    for (offset x = 0; x < 5000; ++x) {
        c->ack(f, x, [&ps, x](result<op_result> r) { ps[x].set_value(std::move(r)); });
    }
    for (auto& p : ps) {
        ASSERT_EQ(ok(p.get_future().get()).status, ack_status::ok);
    }
    EXPECT_EQ(c->mark_delete(), 5000U);
    // Far fewer root versions than acks (store-wide revisions: an upper bound on CASes).
    EXPECT_LT(c->snapshot().root_version - v0, 5000U);
}

// ack_ranges: one submission, one CAS for every range; each range answered as ack() would
// (applied, already acked, rejected before I/O), and the state survives a crash.
TEST_P(CursorEngine, AckRangesShareOneCasAndAnswerEachRange) {
    h_.stream().append_n(100);
    auto c = h_.create("c1");
    const fence f = c->current_fence();
    const auto cas0 = c->snapshot().cas_sent;
    const std::vector<cursor::fenced_range> ranges = {
        {f, 0, 10},    // applied (MDO moves to 10)
        {f, 20, 30},   // applied (an individual range)
        {f, 40, 41},   // applied (a single entry)
        {f, 50, 50},   // empty: invalid_argument
        {f, 95, 120},  // past the end: offset_beyond_end, nothing of it applied
    };
    std::vector<std::promise<result<op_result>>> ps(ranges.size());
    std::atomic<int> calls{0};
    c->ack_ranges(ranges, [&](std::size_t i, result<op_result> r) {
        ++calls;
        ps.at(i).set_value(std::move(r));
    });
    std::vector<result<op_result>> rs;
    for (auto& p : ps) {
        rs.push_back(p.get_future().get());
    }
    EXPECT_EQ(calls.load(), 5);
    EXPECT_EQ(ok(rs[0]).status, ack_status::ok);
    EXPECT_EQ(ok(rs[1]).status, ack_status::ok);
    EXPECT_EQ(ok(rs[2]).status, ack_status::ok);
    EXPECT_EQ(error_of(rs[3]), errc::invalid_argument);
    EXPECT_EQ(error_of(rs[4]), errc::offset_beyond_end);
    // The three applied ranges went out in one CAS: the same root version.
    EXPECT_EQ(rs[0]->root_version, rs[1]->root_version);
    EXPECT_EQ(rs[0]->root_version, rs[2]->root_version);
    EXPECT_EQ(c->snapshot().cas_sent - cas0, 1U);
    EXPECT_EQ(c->mark_delete(), 10U);

    // Again (an acked range, and entries below MDO): already acked, decided without a CAS.
    std::vector<std::promise<result<op_result>>> again(2);
    const std::vector<cursor::fenced_range> twice = {{f, 20, 30}, {f, 0, 5}};
    c->ack_ranges(twice,
                  [&](std::size_t i, result<op_result> r) { again.at(i).set_value(std::move(r)); });
    EXPECT_EQ(ok(again[0].get_future().get()).status, ack_status::already_acked);
    EXPECT_EQ(ok(again[1].get_future().get()).status, ack_status::already_acked);
    EXPECT_EQ(c->snapshot().cas_sent - cas0, 1U);

    c.reset();
    h_.crash_meta();
    c = h_.reopen("c1");
    EXPECT_EQ(c->mark_delete(), 10U);
    const auto snap = c->snapshot();
    ASSERT_EQ(snap.ranges.size(), 2U);
    EXPECT_EQ(snap.ranges[0].begin, 20U);
    EXPECT_EQ(snap.ranges[0].end, 30U);
    EXPECT_EQ(snap.ranges[1].begin, 40U);
    EXPECT_EQ(snap.ranges[1].end, 41U);
}

INSTANTIATE_TEST_SUITE_P(Cursor,
                         CursorEngine,
                         ::testing::Values(meta_kind::memory, meta_kind::rocksdb),
                         meta_kind_name);

}  // namespace
}  // namespace nereus::cursor::test
