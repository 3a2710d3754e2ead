// The retention and ownership scenarios of ../shared/docs/cursor-semantics.md, section 3
// (27-29, 40-44, 46), at the ledger level on RocksDB meta + fault_file_system storage.

#include "nereus/cursor/errc.h"

#include <gtest/gtest.h>

#include "support/harness.h"
#include <thread>

namespace nereus::ledger::test {
namespace {

using cursor::ack_status;
using cursor::initial_position;
using cursor::reset_target;

// 27. MDO = 100, segments of 10, retention expired -> only whole segments < 100 go.
TEST(LedgerScenario, Scenario27TrimRemovesOnlyWholeSegmentsBelowCursor) {
    harness h;
    auto& l = h.open();
    h.append_n(150, 0);
    auto c = *l->open_cursor("s", initial_position::earliest());
    ok(c->ack_cumulative_sync(c->current_fence(), 99));  // MDO 100
    ok(c->ack_sync(c->current_fence(), 120));
    h.clock = 1'000'000;  // everything is past its retention time (0)
    auto t = l->trim();
    ASSERT_TRUE(t.has_value()) << t.error().message();
    EXPECT_EQ(t->start_after, 100U);
    EXPECT_EQ(t->physical_first, 100U);
    const auto i = l->info();
    EXPECT_EQ(i.physical_first, 100U);
    EXPECT_EQ(i.end - i.physical_first, 50U);  // retained count
    EXPECT_EQ(c->mark_delete(), 100U);         // unchanged
    EXPECT_EQ(c->backlog(), 49U);
    EXPECT_EQ(deliverable(*c).size(), 49U);
    // MDO 105 (inside a segment): the segment [100, 110) stays.
    ok(c->ack_cumulative_sync(c->current_fence(), 104));
    EXPECT_EQ(l->trim()->physical_first, 100U);
}

// 28. A slow cursor is protected; only an explicit eviction policy passes it, as a fenced,
// recorded CAS.
TEST(LedgerScenario, Scenario28SlowCursorProtectedUnlessEvictedExplicitly) {
    auto so = ten_per_segment();
    so.segment_max_bytes = 1 * (16 + 14 + kPayload);  // one entry per segment
    harness h(so);
    auto& l = h.open();
    h.append_n(1005, 0);
    auto c = *l->open_cursor("slow", initial_position::earliest());
    ok(c->ack_cumulative_sync(c->current_fence(), 4));  // MDO 5
    ok(c->ack_sync(c->current_fence(), 7));
    h.clock = 10'000'000;
    auto t = l->trim();
    ASSERT_TRUE(t.has_value());
    EXPECT_EQ(t->start_after, 5U);
    EXPECT_EQ(t->physical_first, 5U);
    EXPECT_TRUE(t->evicted.empty());
    EXPECT_EQ(c->mark_delete(), 5U);
    // Backlog eviction: keep at most 100 entries of backlog.
    const auto before = c->current_fence();
    ASSERT_TRUE(l->set_retention(retention_policy{.backlog_limit_entries = 100}).has_value());
    auto t2 = l->trim();
    ASSERT_TRUE(t2.has_value()) << t2.error().message();
    ASSERT_EQ(t2->evicted.size(), 1U);
    EXPECT_EQ(t2->evicted[0], (eviction{"slow", before.generation, 5, 905, before.epoch}));
    EXPECT_EQ(c->mark_delete(), 905U);
    EXPECT_EQ(c->current_fence().epoch, before.epoch + 1);
    EXPECT_EQ(t2->start_after, 905U);
    EXPECT_EQ(c->backlog(), 100U);
    // An ack of the old epoch is fenced.
    EXPECT_EQ(ok(c->ack_sync(before, 950)).status, ack_status::stale_epoch);
    // The skip is durable and observable after a restart.
    c.reset();
    h.restart();
    auto hist = h.ledger()->info().eviction_history;
    ASSERT_EQ(hist.size(), 1U);
    EXPECT_EQ(hist[0].from, 5U);
    EXPECT_EQ(hist[0].to, 905U);
    EXPECT_EQ((*h.ledger()->find_cursor("slow"))->mark_delete(), 905U);
}

// 29. Deleting the slowest cursor moves the floor on the next trim; Earliest then starts at the
// new floor and its backlog is exactly what can be read.
TEST(LedgerScenario, Scenario29DeleteSlowestCursorThenEarliestStartsAtNewFloor) {
    harness h;
    auto& l = h.open();
    h.append_n(60, 0);
    auto slow = *l->open_cursor("slow", initial_position::earliest());
    auto fast = *l->open_cursor("fast", initial_position::earliest());
    ok(fast->ack_cumulative_sync(fast->current_fence(), 44));  // MDO 45
    EXPECT_EQ(l->trim()->start_after, 0U);
    slow.reset();
    ASSERT_TRUE(l->delete_cursor("slow").has_value());
    auto t = l->trim();
    EXPECT_EQ(t->start_after, 45U);
    EXPECT_EQ(t->physical_first, 40U);
    auto again = *l->open_cursor("slow", initial_position::earliest());
    EXPECT_EQ(again->mark_delete(), 45U);
    EXPECT_EQ(again->backlog(), 15U);
    EXPECT_EQ(deliverable(*again).size(), again->backlog());
}

// 40. Trim races the creation of an Earliest cursor: either the pending protection is seen
// (trim stops below it) or creation sees the new floor; never a cursor on deleted data.
TEST(LedgerScenario, Scenario40TrimRacesEarliestCreation) {
    // (a) The cursor is PROTECTION_PENDING when the trim runs: the trim stops below it.
    {
        harness h;
        std::shared_ptr<managed_ledger>* lp = nullptr;
        std::optional<trim_report> during;
        bool armed = false;
        h.options().fault_hook = [&](std::string_view step) {
            if (step == "protect.cursor_pending" && armed && !during) {
                auto t = (*lp)->trim();
                EXPECT_TRUE(t.has_value());
                during = t ? *t : trim_report{};
            }
            return false;
        };
        auto& l = h.open();
        lp = &l;
        h.append_n(50, 0);
        auto fast = *l->open_cursor("fast", initial_position::latest());
        armed = true;
        auto c = l->open_cursor("new", initial_position::earliest());
        ASSERT_TRUE(c.has_value());
        ASSERT_TRUE(during.has_value());
        EXPECT_EQ(during->start_after, 0U);  // the pending cursor at 0 held the floor
        EXPECT_EQ((*c)->mark_delete(), 0U);
        EXPECT_EQ((*c)->life(), cursor::lifecycle::active);
        EXPECT_EQ(deliverable(**c).size(), 50U);
    }
    // (b) The trim commits first: creation observes the new start and reports nothing lost.
    {
        harness h;
        auto& l = h.open();
        h.append_n(50, 0);
        auto fast = *l->open_cursor("fast", initial_position::latest());
        std::thread creator;
        std::optional<result<std::shared_ptr<managed_cursor>>> created;
        h.options().fault_hook = nullptr;
        auto t = l->trim();
        ASSERT_TRUE(t.has_value());
        EXPECT_EQ(t->start_after, 50U);
        auto c = l->open_cursor("new", initial_position::earliest());
        ASSERT_TRUE(c.has_value());
        EXPECT_EQ((*c)->mark_delete(), 50U);
        auto at = l->open_cursor("at", initial_position::at_offset(10));
        ASSERT_TRUE(at.has_value());
        EXPECT_TRUE((*at)->created().clamped);
        EXPECT_EQ((*at)->created().requested, 10U);
        EXPECT_EQ((*at)->mark_delete(), 50U);
    }
    // (c) Real threads racing, many rounds: the invariant holds whichever wins.
    {
        harness h;
        auto& l = h.open();
        auto fast = *l->open_cursor("fast", initial_position::earliest());
        for (int round = 0; round < 20; ++round) {
            h.append_n(7, round * 10);
            ok(fast->ack_cumulative_sync(fast->current_fence(), l->info().end - 1));
            std::thread trimmer([&] { EXPECT_TRUE(l->trim().has_value()); });
            std::string name = std::to_string(round);
            name.insert(0, 1, 'r');
            auto c = l->open_cursor(name, initial_position::earliest());
            trimmer.join();
            ASSERT_TRUE(c.has_value());
            EXPECT_GE((*c)->mark_delete(), l->info().start);
            EXPECT_GE((*c)->mark_delete(), l->info().physical_first);
            EXPECT_EQ(deliverable(**c).size(), (*c)->backlog());
            (*c).reset();
            ASSERT_TRUE(l->delete_cursor(name).has_value());
        }
    }
}

// 41. A backward reset to 10 races a trim to 50: exactly one wins.
TEST(LedgerScenario, Scenario41BackwardResetRacesTrim) {
    // (a) The reset is pending when the trim runs: the trim leaves 10..49.
    {
        harness h;
        std::shared_ptr<managed_ledger>* lp = nullptr;
        bool trimmed = false;
        h.options().fault_hook = [&](std::string_view step) {
            if (step == "protect.reset_pending" && !trimmed) {
                trimmed = true;
                auto t = (*lp)->trim();
                EXPECT_TRUE(t.has_value());
                EXPECT_EQ(t->start_after, 10U);
            }
            return false;
        };
        auto& l = h.open();
        lp = &l;
        h.append_n(60, 0);
        auto c = *l->open_cursor("s", initial_position::earliest());
        ok(c->ack_cumulative_sync(c->current_fence(), 49));  // MDO 50
        auto r = ok(c->reset(reset_target::to_offset(10)));
        EXPECT_TRUE(trimmed);
        EXPECT_FALSE(r.clamped);
        EXPECT_EQ(c->mark_delete(), 10U);
        EXPECT_EQ(c->life(), cursor::lifecycle::active);
        EXPECT_EQ(deliverable(*c).size(), 50U);
        EXPECT_EQ(l->info().start, 10U);
    }
    // (b) The trim commits first: the reset clamps to 50 and says so.
    {
        harness h;
        auto& l = h.open();
        h.append_n(60, 0);
        auto c = *l->open_cursor("s", initial_position::earliest());
        ok(c->ack_cumulative_sync(c->current_fence(), 49));
        EXPECT_EQ(l->trim()->start_after, 50U);
        auto r = ok(c->reset(reset_target::to_offset(10)));
        EXPECT_TRUE(r.clamped);
        EXPECT_EQ(r.position, 50U);
        EXPECT_EQ(c->mark_delete(), 50U);
        EXPECT_EQ(deliverable(*c).size(), 10U);
    }
}

// 42. Crash mid-trim after the segments were deleted but before the new floor was recorded:
// the next open completes the trim idempotently and advances the cursor durably.
TEST(LedgerScenario, Scenario42CrashMidTrimCompletedOnReopen) {
    for (const char* step :
         {"trim.recorded", "evict.advanced", "trim.evicted", "trim.storage_trimmed"}) {
        SCOPED_TRACE(step);
        harness h;
        h.options().retention.backlog_limit_entries = 20;
        auto& l = h.open();
        h.append_n(100, 0);
        auto slow = *l->open_cursor("slow", initial_position::earliest());  // MDO 0
        auto fast = *l->open_cursor("fast", initial_position::earliest());
        ok(fast->ack_cumulative_sync(fast->current_fence(), 89));  // MDO 90
        const auto gen = slow->current_fence().generation;
        const auto epoch = slow->current_fence().epoch;
        std::string crash_step = step;
        slow.reset();
        fast.reset();
        h.restart();
        h.ledger().reset();
        h.options().fault_hook = [&](std::string_view s) {
            return s == crash_step;
        };
        h.restart();
        auto t = h.ledger()->trim();
        ASSERT_FALSE(t.has_value());
        EXPECT_EQ(t.error(), errc::injected_crash);
        h.options().fault_hook = nullptr;
        h.crash_and_open();
        auto& l2 = h.ledger();
        const auto i = l2->info();
        EXPECT_EQ(i.start, 80U);
        EXPECT_EQ(i.physical_first, 80U);
        auto s2 = *l2->find_cursor("slow");
        EXPECT_EQ(s2->mark_delete(), 80U);  // advanced explicitly
        EXPECT_EQ(s2->current_fence().generation, gen);
        EXPECT_EQ(s2->current_fence().epoch, epoch + 1);  // fenced exactly once
        ASSERT_FALSE(i.eviction_history.empty());
        EXPECT_EQ(i.eviction_history.back(), (eviction{"slow", gen, 0, 80, epoch}));
        // ... and durably: survives another crash, and nothing behind the floor is referenced.
        s2.reset();
        h.crash_and_open();
        auto s3 = *h.ledger()->find_cursor("slow");
        EXPECT_EQ(s3->mark_delete(), 80U);
        EXPECT_EQ(s3->current_fence().epoch, epoch + 1);
        EXPECT_EQ(deliverable(*s3).size(), 20U);
        // Completing again is idempotent.
        auto t3 = h.ledger()->trim();
        ASSERT_TRUE(t3.has_value());
        EXPECT_EQ(t3->start_after, 80U);
    }
}

// 43. Crash while a new cursor is PROTECTION_PENDING: the reopen finalizes it before any trim.
TEST(LedgerScenario, Scenario43CrashWhileProtectionPending) {
    for (const char* step : {"protect.cursor_pending", "protect.floor_written"}) {
        SCOPED_TRACE(step);
        harness h;
        std::string crash_step = step;
        auto& l = h.open();
        h.append_n(50, 0);
        auto fast = *l->open_cursor("fast", initial_position::latest());  // MDO 50
        fast.reset();
        h.ledger().reset();
        h.options().fault_hook = [&](std::string_view s) {
            return s == crash_step;
        };
        h.restart();
        auto c = h.ledger()->open_cursor("new", initial_position::at_offset(5));
        ASSERT_FALSE(c.has_value());
        EXPECT_EQ(c.error(), errc::injected_crash);
        h.options().fault_hook = nullptr;
        h.crash_and_open();
        auto& l2 = h.ledger();
        auto n = *l2->find_cursor("new");
        EXPECT_EQ(n->life(), cursor::lifecycle::active);
        EXPECT_EQ(n->mark_delete(), 5U);
        EXPECT_EQ(l2->info().floor, 5U);  // finalized, including the recovered cursor
        auto t = l2->trim();
        ASSERT_TRUE(t.has_value());
        EXPECT_EQ(t->start_after, 5U);
        EXPECT_EQ(deliverable(*n).size(), 45U);
    }
}

// 44. Two openers of the writable ledger: exactly one claims the retention root; the loser
// fails having changed nothing and opened no cursor; no double trim.
TEST(LedgerScenario, Scenario44TwoOpenersExactlyOneWins) {
    harness h;
    {
        auto& l = h.open();
        h.append_n(30, 0);
        auto c = *l->open_cursor("s", initial_position::earliest());
        ok(c->ack_cumulative_sync(c->current_fence(), 9));
        c.reset();
        ASSERT_TRUE(l->close().has_value());
        h.ledger().reset();
    }
    for (int round = 0; round < 10; ++round) {
        const auto sa = h.new_session();
        const auto sb = h.new_session();
        counting_meta spy_a(&h.meta());
        counting_meta spy_b(&h.meta());
        auto env_a = h.env();
        env_a.owner = sa;
        env_a.meta = &spy_a;
        auto env_b = h.env();
        env_b.owner = sb;
        env_b.meta = &spy_b;
        result<std::shared_ptr<managed_ledger>> ra = nereus::error(errc::closed);
        result<std::shared_ptr<managed_ledger>> rb = nereus::error(errc::closed);
        const auto trims0 = h.stream_spy().trims.load();
        std::thread ta([&] { ra = managed_ledger::open_writable(env_a, "persistent://t/n/a"); });
        std::thread tb([&] { rb = managed_ledger::open_writable(env_b, "persistent://t/n/a"); });
        ta.join();
        tb.join();
        ASSERT_NE(ra.has_value(), rb.has_value());
        auto& winner = ra ? *ra : *rb;
        auto& loser = ra ? rb : ra;
        auto& loser_spy = ra ? spy_b : spy_a;
        EXPECT_EQ(loser.error(), errc::owned_elsewhere);
        EXPECT_EQ(loser_spy.lists.load(), 0U);  // never listed (stabilized) a cursor
        EXPECT_EQ(h.stream_spy().trims.load(), trims0);
        auto t = winner->trim();
        ASSERT_TRUE(t.has_value());
        EXPECT_EQ(winner->info().claim_epoch, static_cast<std::uint64_t>(round + 2));
        EXPECT_EQ((*winner->find_cursor("s"))->mark_delete(), 10U);
        ASSERT_TRUE(winner->close().has_value());
    }
    // A dead owner (its session expired, e.g. the process restarted) no longer blocks.
    auto s1 = h.new_session();
    auto env1 = h.env();
    env1.owner = s1;
    auto l1 = managed_ledger::open_writable(env1, "persistent://t/n/a");
    ASSERT_TRUE(l1.has_value());
    ASSERT_TRUE(meta::close_session_sync(h.meta(), s1).has_value());
    auto l2 = h.try_open();
    ASSERT_TRUE(l2.has_value()) << l2.error().message();
    // The superseded owner's CAS is fenced by its session even though its versions match.
    auto old = (*l1)->find_cursor("s");
    ASSERT_TRUE(old.has_value());
    auto late = (*old)->ack_sync((*old)->current_fence(), 20);
    EXPECT_FALSE(late.has_value());
    EXPECT_EQ((*l1)->state(), ledger_state::fenced);
    EXPECT_FALSE((*(*l2)->find_cursor("s"))->is_acked(20));
}

// 46. After a failover, idle expiry uses the persisted activity time with a grace period: an
// active subscription is never deleted because the new owner saw a stale lastActive.
TEST(LedgerScenario, Scenario46IdleExpiryUsesPersistedActivityWithGrace) {
    harness h;
    h.options().idle_grace = std::chrono::milliseconds(1000);
    h.clock = 0;
    auto& l = h.open();
    h.append_n(10, 0);
    auto active = *l->open_cursor("active", initial_position::earliest());
    auto idle = *l->open_cursor("idle", initial_position::earliest());
    ASSERT_TRUE(l->persist_activity().has_value());  // both persisted at t = 0
    // The old owner keeps serving "active" (acks at t = 5000) but crashes before persisting.
    h.clock = 5000;
    ok(active->ack_sync(active->current_fence(), 0));
    active.reset();
    idle.reset();
    h.crash_and_open();  // new owner at t = 5000; persisted lastActive is the stale t = 0
    auto& l2 = h.ledger();
    // Within the grace period nothing is expired, whatever the persisted times say.
    h.clock = 5500;
    auto e = l2->expire_idle_cursors(std::chrono::milliseconds(2000));
    ASSERT_TRUE(e.has_value());
    EXPECT_TRUE(e->empty());
    // The consumer of "active" reattaches; "idle" stays idle.
    (*l2->find_cursor("active"))->set_connected(true);
    h.clock = 5000 + 2500;
    e = l2->expire_idle_cursors(std::chrono::milliseconds(2000));
    ASSERT_TRUE(e.has_value());
    EXPECT_EQ(*e, (std::vector<std::string>{"idle"}));
    EXPECT_EQ(l2->cursor_names(), (std::vector<std::string>{"active"}));
}

}  // namespace
}  // namespace nereus::ledger::test
