// The cursor-level behavioural scenarios of ../shared/docs/cursor-semantics.md §3 (1–26, 30–39,
// 45), one gtest each, named after the doc's numbering, on both metadata backends.
// "restart" = close + reopen; "crash" = drop the handle without close (RocksDB is also closed
// and reopened from its directory) and reopen from the same stores.

#include "nereus/meta/errc.h"
#include "nereus/objects/object_name.h"

#include <gtest/gtest.h>

#include "unit/cursor/support/harness.h"
#include <algorithm>
#include <atomic>
#include <future>
#include <random>
#include <set>
#include <thread>

namespace nereus::cursor::test {
namespace {

using ranges_t = std::vector<offset_range>;

class CursorScenario : public ::testing::TestWithParam<meta_kind> {
protected:
    CursorScenario() : h_(GetParam()) {}

    std::shared_ptr<cursor> restart(std::shared_ptr<cursor>& c, const std::string& name = "c1") {
        EXPECT_TRUE(close_sync(*c).has_value());
        c.reset();
        return h_.reopen(name);
    }
    std::shared_ptr<cursor> crash(std::shared_ptr<cursor>& c, const std::string& name = "c1") {
        c.reset();
        h_.crash_meta();
        return h_.reopen(name);
    }
    // Offsets in [0, end) not fully acked.
    static std::vector<offset> unacked(const cursor& c, offset end) {
        std::vector<offset> out;
        for (offset x = 0; x < end; ++x) {
            if (!c.is_acked(x)) {
                out.push_back(x);
            }
        }
        return out;
    }
    // Submits many async acks at once (they share group commits) and waits for all.
    static std::vector<result<op_result>> ack_all(cursor& c, const std::vector<offset>& xs) {
        std::vector<std::promise<result<op_result>>> ps(xs.size());
        std::vector<std::future<result<op_result>>> fs;
        for (auto& p : ps) {
            fs.push_back(p.get_future());
        }
        const fence f = c.current_fence();
        for (std::size_t i = 0; i < xs.size(); ++i) {
            c.ack(f, xs[i], [&ps, i](result<op_result> r) { ps[i].set_value(std::move(r)); });
        }
        std::vector<result<op_result>> out;
        for (auto& fu : fs) {
            out.push_back(fu.get());
        }
        return out;
    }

    harness h_;
};

TEST_P(CursorScenario, Scenario01EarliestOnTenEntries) {
    h_.stream().append_n(10);
    auto c = h_.create("c1");
    EXPECT_EQ(c->mark_delete(), 0U);
    EXPECT_EQ(c->backlog(), 10U);
    EXPECT_TRUE(c->snapshot().ranges.empty());
    EXPECT_EQ(c->life(), lifecycle::protection_pending);
}

TEST_P(CursorScenario, Scenario02CumulativeAckTwice) {
    h_.stream().append_n(10);
    auto c = h_.create("c1");
    auto r = ok(ack_cumulative_sync(*c, c->current_fence(), 4));
    EXPECT_EQ(r.status, ack_status::ok);
    EXPECT_EQ(c->mark_delete(), 5U);
    const auto v = c->snapshot().root_version;
    r = ok(ack_cumulative_sync(*c, c->current_fence(), 2));
    EXPECT_EQ(r.status, ack_status::already_acked);
    EXPECT_EQ(c->mark_delete(), 5U);
    EXPECT_EQ(c->snapshot().root_version, v);
}

TEST_P(CursorScenario, Scenario03SingleDeletes) {
    h_.stream().append_n(10);
    auto c = h_.create("c1");
    const fence f = c->current_fence();
    ok(ack_sync(*c, f, 3));
    ok(ack_sync(*c, f, 0));
    EXPECT_EQ(c->mark_delete(), 1U);
    EXPECT_EQ(c->snapshot().ranges, (ranges_t{{3, 4}}));
    // The doc's "ack 2 -> MDO=4" needs offset 1 acked too (MDO is the first unacked offset).
    ok(ack_sync(*c, f, 2));
    EXPECT_EQ(c->mark_delete(), 1U);
    EXPECT_EQ(c->snapshot().ranges, (ranges_t{{2, 4}}));
    ok(ack_sync(*c, f, 1));
    EXPECT_EQ(c->mark_delete(), 4U);
    EXPECT_TRUE(c->snapshot().ranges.empty());
    const auto before = c->snapshot().root_version;
    EXPECT_EQ(ok(ack_sync(*c, f, 3)).status, ack_status::already_acked);
    EXPECT_EQ(c->snapshot().root_version, before);
}

TEST_P(CursorScenario, Scenario04IndividualRangesMerge) {
    h_.stream().append_n(20);
    auto c = h_.create("c1");
    const fence f = c->current_fence();
    ok(ack_cumulative_sync(*c, f, 3));  // MDO = 4
    ok(ack_sync(*c, f, 5));
    ok(ack_sync(*c, f, 7));
    ok(ack_sync(*c, f, 6));
    EXPECT_EQ(c->snapshot().ranges, (ranges_t{{5, 8}}));
    ok(ack_sync(*c, f, 8));
    EXPECT_EQ(c->snapshot().ranges, (ranges_t{{5, 9}}));
    ok(ack_sync(*c, f, 4));
    EXPECT_EQ(c->mark_delete(), 9U);
    EXPECT_TRUE(c->snapshot().ranges.empty());
}

TEST_P(CursorScenario, Scenario05AckPastEndRejected) {
    h_.stream().append_n(10);
    auto c = h_.create("c1");
    const fence f = c->current_fence();
    EXPECT_EQ(error_of(ack_sync(*c, f, 10)), errc::offset_beyond_end);
    EXPECT_EQ(error_of(ack_cumulative_sync(*c, f, 12)), errc::offset_beyond_end);
    EXPECT_EQ(c->mark_delete(), 0U);
    EXPECT_TRUE(c->snapshot().ranges.empty());
}

TEST_P(CursorScenario, Scenario06BacklogExactAtEveryStep) {
    constexpr offset n = 200;
    h_.stream().append_n(n);
    auto c = h_.create("c1");
    std::vector<offset> xs(n);
    for (offset i = 0; i < n; ++i) {
        xs[i] = i;
    }
    std::shuffle(xs.begin(), xs.end(), std::mt19937_64(6));
    std::set<offset> acked;
    for (offset x : xs) {
        ok(ack_sync(*c, c->current_fence(), x));
        acked.insert(x);
        ASSERT_EQ(c->backlog(), n - acked.size());
    }
}

TEST_P(CursorScenario, Scenario07ReadFilteringSkipsAcked) {
    h_.stream().append_n(10);
    auto c = h_.create("c1");
    ok(ack_sync(*c, c->current_fence(), 4));
    // The dispatcher read 0..2; reading 3 more from 3 yields 3, 5, 6 (never 4).
    std::vector<offset> read;
    for (offset pos = 3; read.size() < 3; ++pos) {
        pos = c->next_unacked(pos);
        read.push_back(pos);
    }
    EXPECT_EQ(read, (std::vector<offset>{3, 5, 6}));
}

TEST_P(CursorScenario, Scenario08OutOfOrderPersistenceWithClose) {
    h_.stream().append_n(20);
    auto c = h_.create("c1");
    for (offset x : {2, 5, 7, 8, 9}) {
        ok(ack_sync(*c, c->current_fence(), x));
    }
    c = restart(c);
    EXPECT_EQ(unacked(*c, 20),
              (std::vector<offset>{0, 1, 3, 4, 6, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19}));
}

TEST_P(CursorScenario, Scenario09OutOfOrderPersistenceAfterCrash) {
    h_.stream().append_n(20);
    auto c = h_.create("c1");
    for (offset x : {2, 5, 7, 8, 9}) {
        ok(ack_sync(*c, c->current_fence(), x));
    }
    c = crash(c);
    EXPECT_EQ(unacked(*c, 20),
              (std::vector<offset>{0, 1, 3, 4, 6, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19}));
}

TEST_P(CursorScenario, Scenario10HundredThousandHolesSurviveCrash) {
    constexpr offset n = 200'000;
    h_.stream().append_n(n);
    auto c = h_.create("c1");
    std::vector<offset> xs;
    for (offset x = 1; x < n; x += 2) {
        xs.push_back(x);
    }
    for (const auto& r : ack_all(*c, xs)) {
        ASSERT_TRUE(r.has_value());
        ASSERT_EQ(r->status, ack_status::ok);
    }
    EXPECT_EQ(c->snapshot().ranges.size(), xs.size());
    EXPECT_TRUE(c->snapshot().spilled);
    c = crash(c);
    ASSERT_NE(c, nullptr);
    EXPECT_EQ(c->snapshot().ranges.size(), xs.size());
    for (offset x : xs) {
        ASSERT_TRUE(c->is_acked(x)) << x;
    }
    EXPECT_EQ(c->backlog(), n - xs.size());
}

TEST_P(CursorScenario, Scenario11HardBoundRejectsNeverDrops) {
    h_.options().max_state_bytes = 1000;
    h_.stream().append_n(1000);
    auto c = h_.create("c1");
    std::vector<offset> confirmed;
    bool rejected = false;
    for (offset x = 1; x < 1000; x += 2) {
        auto r = ok(ack_sync(*c, c->current_fence(), x));
        if (r.status == ack_status::state_full) {
            rejected = true;
            EXPECT_FALSE(c->is_acked(x));
            continue;
        }
        ASSERT_EQ(r.status, ack_status::ok);
        confirmed.push_back(x);
    }
    ASSERT_TRUE(rejected);
    ASSERT_FALSE(confirmed.empty());
    // Acks that shrink the state are still admitted.
    EXPECT_EQ(ok(ack_cumulative_sync(*c, c->current_fence(), 100)).status, ack_status::ok);
    c = crash(c);
    for (offset x : confirmed) {
        ASSERT_TRUE(c->is_acked(x)) << x;
    }
}

class CursorScenarioSpill : public ::testing::TestWithParam<std::tuple<meta_kind, std::size_t>> {};

TEST_P(CursorScenarioSpill, Scenario12BatchIndexPersistAndRecover) {
    harness h(std::get<0>(GetParam()));
    h.options().spill_threshold_bytes = std::get<1>(GetParam());
    h.stream().append_n(10);
    auto c = h.create("c1");
    auto acked = batch_bits::none_set(10);
    acked.set(1);
    acked.set(2);
    acked.set(3);
    ok(ack_batch_index_sync(*c, c->current_fence(), 6, acked));
    const std::vector<std::uint32_t> want{0, 4, 5, 6, 7, 8, 9};
    EXPECT_EQ(c->remaining(6)->indices(), want);
    ASSERT_TRUE(close_sync(*c).has_value());
    c = h.reopen("c1");
    ASSERT_TRUE(c->remaining(6).has_value());
    EXPECT_EQ(c->remaining(6)->indices(), want);
    EXPECT_EQ(c->snapshot().spilled, std::get<1>(GetParam()) == 0);
}

INSTANTIATE_TEST_SUITE_P(
    Cursor,
    CursorScenarioSpill,
    ::testing::Combine(::testing::Values(meta_kind::memory, meta_kind::rocksdb),
                       ::testing::Values(std::size_t{0}, std::size_t{1} << 30)),
    [](const auto& info) {
        return std::string(std::get<0>(info.param) == meta_kind::memory ? "Memory" : "RocksDB") +
               (std::get<1>(info.param) == 0 ? "Spilled" : "Inline");
    });

TEST_P(CursorScenario, Scenario13BatchCompletesEntry) {
    h_.stream().append_n(3);
    auto c = h_.create("c1");
    const fence f = c->current_fence();
    for (std::uint32_t i : {0U, 1U, 9U, 5U, 2U, 8U, 3U, 7U, 4U, 6U}) {
        auto a = batch_bits::none_set(10);
        a.set(i);
        ok(ack_batch_index_sync(*c, f, 0, a));
    }
    EXPECT_FALSE(c->remaining(0).has_value());
    EXPECT_TRUE(c->is_acked(0));
    EXPECT_EQ(c->mark_delete(), 1U);
}

TEST_P(CursorScenario, Scenario14CumulativeIntoBatchNeverRollsBack) {
    h_.stream().append_n(3);
    auto c = h_.create("c1");
    const fence f = c->current_fence();
    ok(ack_cumulative_sync(*c, f, 0, 3, 10));
    EXPECT_EQ(c->remaining(0)->indices(), (std::vector<std::uint32_t>{4, 5, 6, 7, 8, 9}));
    ok(ack_cumulative_sync(*c, f, 0, 4, 10));
    EXPECT_EQ(ok(ack_cumulative_sync(*c, f, 0, 2, 10)).status, ack_status::already_acked);
    EXPECT_EQ(c->remaining(0)->indices(), (std::vector<std::uint32_t>{5, 6, 7, 8, 9}));
    EXPECT_EQ(c->mark_delete(), 0U);
}

TEST_P(CursorScenario, Scenario15WholeAckDropsBitmap) {
    h_.stream().append_n(5);
    auto c = h_.create("c1");
    const fence f = c->current_fence();
    auto a = batch_bits::none_set(8);
    a.set(1);
    ok(ack_batch_index_sync(*c, f, 2, a));
    ASSERT_TRUE(c->remaining(2).has_value());
    ok(ack_sync(*c, f, 2));
    EXPECT_FALSE(c->remaining(2).has_value());
    a.set(2);
    EXPECT_EQ(ok(ack_batch_index_sync(*c, f, 2, a)).status, ack_status::already_acked);
    EXPECT_FALSE(c->remaining(2).has_value());
}

TEST_P(CursorScenario, Scenario16CumulativePastBitmapDropsIt) {
    h_.stream().append_n(5);
    auto c = h_.create("c1");
    const fence f = c->current_fence();
    auto a = batch_bits::none_set(8);
    a.set(1);
    ok(ack_batch_index_sync(*c, f, 2, a));
    ok(ack_cumulative_sync(*c, f, 3));
    EXPECT_FALSE(c->remaining(2).has_value());
    EXPECT_TRUE(c->snapshot().batches.empty());
}

TEST_P(CursorScenario, Scenario17ResetClearsEverything) {
    h_.stream().append_n(20);
    auto c = h_.create("c1");
    ok(activate_sync(*c, c->current_fence()));
    fence f = c->current_fence();
    ok(ack_cumulative_sync(*c, f, 7));
    ok(ack_sync(*c, f, 10));
    ok(ack_sync(*c, f, 11));
    auto a = batch_bits::none_set(4);
    a.set(0);
    ok(ack_batch_index_sync(*c, f, 9, a));
    auto r = ok(reset_sync(*c, f, reset_target::to_offset(3)));
    EXPECT_EQ(r.current.epoch, f.epoch + 1);
    const auto s = c->snapshot();
    EXPECT_EQ(s.mark_delete, 3U);
    EXPECT_TRUE(s.ranges.empty());
    EXPECT_TRUE(s.batches.empty());
    EXPECT_EQ(s.epoch, f.epoch + 1);
    EXPECT_EQ(s.life, lifecycle::protection_pending);  // backward reset
    EXPECT_EQ(c->next_unacked(0), 3U);
}

TEST_P(CursorScenario, Scenario18ResetToTime) {
    auto& s = h_.stream();
    for (std::int64_t t : {10, 20, 20, 30, 40}) {
        s.append(t);
    }
    auto c = h_.create("c1");
    auto r = ok(reset_sync(*c, c->current_fence(), reset_target::to_time(20)));
    EXPECT_EQ(r.position, 1U);  // ties: the first entry with time >= T
    EXPECT_FALSE(r.clamped);
    EXPECT_EQ(c->mark_delete(), 1U);
    r = ok(reset_sync(*c, c->current_fence(), reset_target::to_time(99)));
    EXPECT_EQ(c->mark_delete(), 5U);  // all older: end
    s.trim_to(3);
    r = ok(reset_sync(*c, c->current_fence(), reset_target::to_time(15)));
    EXPECT_TRUE(r.clamped);
    EXPECT_EQ(c->mark_delete(), 3U);
}

TEST_P(CursorScenario, Scenario19ResetToLatestThenRestart) {
    h_.stream().append_n(10);
    auto c = h_.create("c1");
    ok(reset_sync(*c, c->current_fence(), reset_target::latest()));
    h_.stream().append_n(4, 100);
    EXPECT_EQ(c->mark_delete(), 10U);
    EXPECT_EQ(c->backlog(), 4U);
    c = restart(c);
    EXPECT_EQ(c->mark_delete(), 10U);
    EXPECT_EQ(c->backlog(), 4U);
}

TEST_P(CursorScenario, Scenario20ClearBacklogLinearizedAtCas) {
    h_.stream().append_n(100);
    auto c = h_.create("c1");
    ok(ack_sync(*c, c->current_fence(), 50));
    std::atomic<bool> stop{false};
    std::thread appender([&] {
        while (!stop) {
            h_.stream().append(0);
        }
    });
    auto r = ok(clear_backlog_sync(*c, c->current_fence()));
    stop = true;
    appender.join();
    EXPECT_EQ(c->mark_delete(), r.position);
    EXPECT_GE(r.position, 100U);
    EXPECT_TRUE(c->snapshot().ranges.empty());
    EXPECT_EQ(c->backlog(), h_.stream().end() - r.position);
    EXPECT_EQ(r.current.epoch, 2U);
}

TEST_P(CursorScenario, Scenario21Properties) {
    h_.stream().append_n(1);
    auto c = h_.create("c1");
    const fence f = c->current_fence();
    ok(set_properties_sync(*c, f, {{"a", "1"}}));
    ok(put_property_sync(*c, f, "b", "2"));
    ok(remove_property_sync(*c, f, "a"));
    c = restart(c);
    EXPECT_EQ(c->snapshot().properties, (property_map{{"b", "2"}}));
    // Two concurrent puts on different keys both survive.
    std::promise<result<op_result>> p1;
    std::promise<result<op_result>> p2;
    c->put_property(f, "x", "1", [&](result<op_result> r) { p1.set_value(r); });
    c->put_property(f, "y", "2", [&](result<op_result> r) { p2.set_value(r); });
    ok(p1.get_future().get());
    ok(p2.get_future().get());
    c = restart(c);
    EXPECT_EQ(c->snapshot().properties, (property_map{{"b", "2"}, {"x", "1"}, {"y", "2"}}));
    EXPECT_EQ(error_of(put_property_sync(*c, f, "#nereus.internal.x", "1")),
              errc::reserved_property);
    EXPECT_EQ(error_of(ack_cumulative_sync(*c, f, 0, {}, 0, {{"#nereus.internal.y", "1"}})),
              errc::reserved_property);
}

TEST_P(CursorScenario, Scenario22CumulativeAckWithPropertiesSurvivesCrash) {
    h_.stream().append_n(20);
    auto c = h_.create("c1");
    ok(ack_cumulative_sync(*c, c->current_fence(), 10, {}, 0, {{"seq", "42"}}));
    c = crash(c);
    EXPECT_EQ(c->mark_delete(), 11U);
    EXPECT_EQ(c->snapshot().properties, (property_map{{"seq", "42"}}));
}

TEST_P(CursorScenario, Scenario23DeleteRecreateBumpsGeneration) {
    h_.stream().append_n(10);
    auto c = h_.create("c1");
    const fence f = c->current_fence();
    ok(ack_sync(*c, f, 3));
    ok(put_property_sync(*c, f, "k", "v"));
    ok(remove_sync(*c, f));
    EXPECT_EQ(error_of(ack_sync(*c, f, 4)), errc::cursor_deleted);
    EXPECT_EQ(h_.open("c1").error(), errc::cursor_deleted);
    auto c2 = h_.create("c1");
    ASSERT_NE(c2, nullptr);
    const auto s = c2->snapshot();
    EXPECT_EQ(s.generation, f.generation + 1);
    EXPECT_EQ(s.mark_delete, 0U);
    EXPECT_TRUE(s.ranges.empty());
    EXPECT_TRUE(s.properties.empty());
    EXPECT_EQ(error_of(ack_sync(*c, f, 4)), errc::cursor_deleted);
}

TEST_P(CursorScenario, Scenario24RestartRestartsAtMdoSkippingAcked) {
    h_.stream().append_n(20);
    auto c = h_.create("c1");
    const fence f = c->current_fence();
    ok(ack_sync(*c, f, 0));
    ok(ack_sync(*c, f, 2));
    ok(ack_sync(*c, f, 3));
    // The dispatcher had read up to 15 (in memory only).
    c = restart(c);
    EXPECT_EQ(c->mark_delete(), 1U);
    EXPECT_EQ(c->next_unacked(c->mark_delete()), 1U);
    EXPECT_EQ(c->next_unacked(2), 4U);
}

TEST_P(CursorScenario, Scenario25LatestWhileAppendsRace) {
    h_.stream().append_n(50);
    std::atomic<bool> stop{false};
    std::thread appender([&] {
        while (!stop) {
            h_.stream().append(0);
        }
    });
    auto c = h_.create("c1", initial_position::latest());
    stop = true;
    appender.join();
    const offset boundary = c->mark_delete();
    EXPECT_GE(boundary, 50U);
    EXPECT_LE(boundary, h_.stream().end());
    EXPECT_EQ(c->next_unacked(0), boundary);
    c = crash(c);
    EXPECT_EQ(c->mark_delete(), boundary);
}

TEST_P(CursorScenario, Scenario26EarliestStartsAtFloor) {
    h_.stream().append_n(50);
    h_.stream().trim_to(20);
    auto c = h_.create("c1");
    EXPECT_EQ(c->mark_delete(), 20U);
    EXPECT_EQ(c->backlog(), 30U);
    c = crash(c);
    EXPECT_EQ(c->mark_delete(), 20U);
}

TEST_P(CursorScenario, Scenario30CrashBetweenSnapshotAndRootCas) {
    h_.options().spill_threshold_bytes = 0;
    h_.stream().append_n(20);
    auto c = h_.create("c1");
    const fence f = c->current_fence();
    for (offset x : {1, 3, 5}) {
        ok(ack_sync(*c, f, x));
    }
    ASSERT_TRUE(c->snapshot().spilled);
    auto before = h_.objects().list(c->keys().object_prefix);
    ASSERT_TRUE(before && before->size() == 1);
    // S2 is written, then the root CAS never applies (the process "dies" before it).
    h_.faults().fail_multis(false, 1, make_error_code(meta::errc::unavailable));
    EXPECT_TRUE(error_of(skip_sync(*c, f, 1)));
    auto mid = h_.objects().list(c->keys().object_prefix);
    ASSERT_TRUE(mid.has_value());
    EXPECT_EQ(mid->size(), 2U);  // S1 (referenced) and the orphan S2
    c = crash(c);
    EXPECT_EQ(c->mark_delete(), 0U);
    EXPECT_EQ(c->snapshot().ranges, (ranges_t{{1, 2}, {3, 4}, {5, 6}}));
    auto after = h_.objects().list(c->keys().object_prefix);
    ASSERT_TRUE(after.has_value());
    EXPECT_EQ(after->size(), 1U);  // the orphan was collected at open
}

TEST_P(CursorScenario, Scenario31CasAppliedReplyLostRetryIdempotent) {
    h_.stream().append_n(20);
    auto c = h_.create("c1");
    const fence f = c->current_fence();
    h_.faults().fail_multis(true, 1);  // applied, but the reply is "unknown"
    EXPECT_EQ(ok(ack_sync(*c, f, 7)).status, ack_status::ok);  // resolved by re-reading
    const auto s1 = c->snapshot();
    EXPECT_EQ(ok(ack_sync(*c, f, 7)).status, ack_status::already_acked);  // the client's retry
    c = crash(c);
    const auto s2 = c->snapshot();
    EXPECT_EQ(s2.ranges, s1.ranges);
    EXPECT_EQ(s2.mark_delete, s1.mark_delete);
    EXPECT_EQ(s2.root_version, s1.root_version);
}

// Flips one byte of the stored object `name`.
void flip_object_byte(fault_file_system& fs, const std::string& name, std::uint64_t at) {
    const std::string path = "/objects/objects/" + objects::object_file_name(name);
    auto f = fs.open(path, open_mode::read_write);
    ASSERT_TRUE(f.has_value()) << path;
    std::byte b{};
    ASSERT_TRUE((*f)->read_at(at, std::span<std::byte>(&b, 1)).has_value());
    b ^= std::byte{0x40};
    ASSERT_TRUE((*f)->write_at(at, bytes_view(&b, 1)).has_value());
}

TEST_P(CursorScenario, Scenario32CorruptSnapshotFailsClosed) {
    h_.options().spill_threshold_bytes = 0;
    h_.stream().append_n(20);
    auto c = h_.create("c1");
    ok(ack_sync(*c, c->current_fence(), 5));
    ok(skip_sync(*c, c->current_fence(), 1));  // a fresh snapshot
    auto names = h_.objects().list(c->keys().object_prefix);
    ASSERT_TRUE(names && names->size() == 1);
    ASSERT_TRUE(close_sync(*c).has_value());
    c.reset();
    flip_object_byte(h_.fs(), names->front(), 40);
    auto r = h_.open("c1");
    ASSERT_FALSE(r.has_value());
    EXPECT_EQ(r.error(), errc::corrupt_snapshot);
}

TEST_P(CursorScenario, Scenario32CorruptRootAndDeltaFailClosed) {
    h_.options().spill_threshold_bytes = 0;
    h_.stream().append_n(20);
    auto c = h_.create("c1");
    ok(skip_sync(*c, c->current_fence(), 1));
    ok(ack_sync(*c, c->current_fence(), 5));  // one delta
    const std::string root_key = c->keys().root;
    const std::string delta_prefix = c->keys().delta_prefix;
    ASSERT_TRUE(close_sync(*c).has_value());
    c.reset();
    auto deltas = meta::list_sync(h_.meta(), delta_prefix);
    ASSERT_TRUE(deltas && deltas->size() == 1);
    std::string bad = deltas->front().rec.value;
    bad[bad.size() / 2] ^= 0x01;
    ASSERT_TRUE(meta::cas_sync(h_.meta(), deltas->front().key, meta::any_version, bad));
    EXPECT_EQ(h_.open("c1").error(), errc::corrupt_delta);
    auto root = meta::get_sync(h_.meta(), root_key);
    ASSERT_TRUE(root && *root);
    bad = (*root)->value;
    bad[bad.size() / 2] ^= 0x01;
    ASSERT_TRUE(meta::cas_sync(h_.meta(), root_key, meta::any_version, bad));
    EXPECT_EQ(h_.open("c1").error(), errc::corrupt_root);
}

TEST_P(CursorScenario, Scenario33MissingSnapshotOrDeltaFailsClosed) {
    h_.options().spill_threshold_bytes = 0;
    h_.stream().append_n(20);
    auto c = h_.create("c1");
    ok(skip_sync(*c, c->current_fence(), 1));
    ok(ack_sync(*c, c->current_fence(), 5));
    const std::string delta_prefix = c->keys().delta_prefix;
    const std::string object_prefix = c->keys().object_prefix;
    ASSERT_TRUE(close_sync(*c).has_value());
    c.reset();
    auto deltas = meta::list_sync(h_.meta(), delta_prefix);
    ASSERT_TRUE(deltas && deltas->size() == 1);
    ASSERT_TRUE(meta::remove_sync(h_.meta(), deltas->front().key, meta::any_version));
    EXPECT_EQ(h_.open("c1").error(), errc::delta_missing);
    auto names = h_.objects().list(object_prefix);
    ASSERT_TRUE(names && names->size() == 1);
    ASSERT_TRUE(h_.objects().remove(names->front()));
    EXPECT_EQ(h_.open("c1").error(), errc::snapshot_missing);
}

TEST_P(CursorScenario, Scenario34DelayedCasOfSupersededOwnerRejected) {
    h_.stream().append_n(20);
    const meta::session_id sa = h_.owner();
    auto a = h_.create("c1");
    const auto v = a->snapshot().root_version;
    // B claims ownership with its own session; A's session is closed. B has not written.
    const meta::session_id sb = h_.new_session();
    h_.set_owner(sb);
    auto b = h_.reopen("c1");
    ASSERT_TRUE(meta::close_session_sync(h_.meta(), sa).has_value());
    // A wakes up: its CAS expects version v, which still matches, but its session is dead.
    EXPECT_EQ(error_of(ack_sync(*a, a->current_fence(), 3)), errc::owner_fenced);
    auto root = meta::get_sync(h_.meta(), a->keys().root);
    ASSERT_TRUE(root && *root);
    EXPECT_EQ((*root)->ver, v);
    EXPECT_EQ(error_of(ack_sync(*a, a->current_fence(), 4)), errc::owner_fenced);
    EXPECT_EQ(ok(ack_sync(*b, b->current_fence(), 3)).status, ack_status::ok);
}

TEST_P(CursorScenario, Scenario35PartitionedOwnerConfirmsNothingAfterFence) {
    h_.stream().append_n(2000);
    const meta::session_id sa = h_.owner();
    auto a = h_.create("c1");
    const fence f = a->current_fence();
    std::vector<std::promise<result<op_result>>> ps(2000);
    // A keeps dispatching and acking; halfway, B claims (A's session ends) while A's earlier
    // acks may still be in flight.
    for (offset x = 0; x < 1000; ++x) {
        a->ack(f, x, [&ps, x](result<op_result> r) { ps[x].set_value(std::move(r)); });
    }
    ASSERT_TRUE(meta::close_session_sync(h_.meta(), sa).has_value());
    for (offset x = 1000; x < 2000; ++x) {
        a->ack(f, x, [&ps, x](result<op_result> r) { ps[x].set_value(std::move(r)); });
    }
    std::vector<offset> confirmed;
    bool fenced = false;
    for (offset x = 0; x < 2000; ++x) {
        auto r = ps[x].get_future().get();
        if (r && r->status == ack_status::ok) {
            EXPECT_FALSE(fenced) << "an ack confirmed after the fence: " << x;
            confirmed.push_back(x);
        } else if (!r) {
            EXPECT_EQ(r.error(), errc::owner_fenced);
            fenced = true;
        }
    }
    EXPECT_TRUE(fenced);
    h_.set_owner(h_.new_session());
    auto b = h_.reopen("c1");
    for (offset x : confirmed) {
        ASSERT_TRUE(b->is_acked(x)) << "confirmed ack " << x << " missing from B's state";
    }
}

TEST_P(CursorScenario, Scenario36LateAckAfterResetRejected) {
    h_.stream().append_n(10);
    auto c = h_.create("c1");
    const fence e = c->current_fence();  // offset 7 delivered at epoch e
    ok(reset_sync(*c, e, reset_target::to_offset(0)));
    const fence e1 = c->current_fence();
    EXPECT_EQ(e1.epoch, e.epoch + 1);
    EXPECT_EQ(ok(ack_sync(*c, e, 7)).status, ack_status::stale_epoch);
    EXPECT_FALSE(c->is_acked(7));
    EXPECT_EQ(ok(ack_sync(*c, e1, 7)).status, ack_status::ok);
    EXPECT_TRUE(c->is_acked(7));
}

TEST_P(CursorScenario, Scenario37LateCumulativeAfterClearOrReset) {
    h_.stream().append_n(10);
    auto c = h_.create("c1");
    const fence e = c->current_fence();
    ok(clear_backlog_sync(*c, e));
    EXPECT_EQ(ok(ack_cumulative_sync(*c, e, 4)).status, ack_status::stale_epoch);
    EXPECT_EQ(c->mark_delete(), 10U);
    const fence e1 = c->current_fence();
    ok(reset_sync(*c, e1, reset_target::to_offset(2)));  // backward
    EXPECT_EQ(ok(ack_cumulative_sync(*c, e1, 6)).status, ack_status::stale_epoch);
    EXPECT_EQ(c->mark_delete(), 2U);
}

TEST_P(CursorScenario, Scenario38AckOfOldGenerationRejected) {
    h_.stream().append_n(10);
    auto c = h_.create("c1");
    const fence g = c->current_fence();
    auto c2 = h_.reopen("c1");  // a second handle (e.g. a delayed dispatcher path)
    ok(remove_sync(*c, g));
    auto c3 = h_.create("c1");
    const auto before = c3->snapshot();
    // The old handle learns the new generation only through a lost CAS race.
    EXPECT_EQ(ok(ack_sync(*c2, g, 3)).status, ack_status::stale_generation);
    EXPECT_EQ(ok(ack_sync(*c3, g, 3)).status, ack_status::stale_generation);
    auto c4 = h_.reopen("c1");
    EXPECT_EQ(c4->snapshot().ranges, before.ranges);
    EXPECT_EQ(c4->snapshot().mark_delete, before.mark_delete);
    EXPECT_FALSE(c4->is_acked(3));
}

TEST_P(CursorScenario, Scenario39ResetAmidPendingAcks) {
    h_.stream().append_n(1000);
    auto c = h_.create("c1");
    const fence e = c->current_fence();
    std::vector<std::promise<result<op_result>>> ps(400);
    std::promise<result<op_result>> reset_done;
    for (offset x = 0; x < 200; ++x) {
        c->ack(e, 2 * x + 1, [&ps, x](result<op_result> r) { ps[x].set_value(std::move(r)); });
    }
    c->reset(e, reset_target::to_offset(100),
             [&](result<op_result> r) { reset_done.set_value(std::move(r)); });
    for (offset x = 200; x < 400; ++x) {
        c->ack(e, 2 * x + 1, [&ps, x](result<op_result> r) { ps[x].set_value(std::move(r)); });
    }
    auto rr = ok(reset_done.get_future().get());
    for (offset x = 0; x < 400; ++x) {
        auto r = ps[x].get_future().get();
        ASSERT_TRUE(r.has_value());
        if (x >= 200) {
            EXPECT_EQ(r->status, ack_status::stale_epoch) << x;
        }
    }
    c = crash(c);
    const auto s = c->snapshot();
    EXPECT_EQ(s.mark_delete, 100U);
    EXPECT_TRUE(s.ranges.empty());
    EXPECT_EQ(s.epoch, rr.current.epoch);
}

TEST_P(CursorScenario, Scenario45UnknownOutcomeAndPropertyRace) {
    h_.stream().append_n(100);
    auto c = h_.create("c1");
    const fence f = c->current_fence();
    h_.faults().fail_multis(false, 1);  // not applied, outcome unknown: re-read, resend
    EXPECT_EQ(ok(ack_sync(*c, f, 5)).status, ack_status::ok);
    EXPECT_TRUE(c->is_acked(5));
    // A property update on a second handle races acks on the first: BadVersion -> reload,
    // rebase, retry; neither is lost.
    auto other = h_.reopen("c1");
    std::vector<std::promise<result<op_result>>> ps(50);
    std::promise<result<op_result>> prop;
    for (offset x = 0; x < 50; ++x) {
        c->ack(f, 10 + x, [&ps, x](result<op_result> r) { ps[x].set_value(std::move(r)); });
        if (x == 10) {
            other->put_property(f, "k", "v",
                                [&](result<op_result> r) { prop.set_value(std::move(r)); });
        }
    }
    EXPECT_EQ(ok(prop.get_future().get()).status, ack_status::ok);
    for (auto& p : ps) {
        EXPECT_EQ(ok(p.get_future().get()).status, ack_status::ok);
    }
    auto fresh = h_.reopen("c1");
    EXPECT_EQ(fresh->snapshot().properties, (property_map{{"k", "v"}}));
    for (offset x = 10; x < 60; ++x) {
        EXPECT_TRUE(fresh->is_acked(x)) << x;
    }
}

INSTANTIATE_TEST_SUITE_P(Cursor,
                         CursorScenario,
                         ::testing::Values(meta_kind::memory, meta_kind::rocksdb),
                         meta_kind_name);

}  // namespace
}  // namespace nereus::cursor::test
