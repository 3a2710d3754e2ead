// Crash tests at every persistence step of the ledger: the fault hook stops an operation at a
// step, the "process" dies (drop without close; page cache kept or power loss), the ledger is
// reopened, and the invariants are checked: confirmed acks survive, the redelivery set is
// exactly [MDO, end) - acked, every cursor is at or above start (nothing behind the floor is
// referenced), no pending trim or PROTECTION_PENDING cursor survives the open.

#include <gtest/gtest.h>

#include "support/harness.h"
#include <set>

namespace nereus::ledger::test {
namespace {

using cursor::initial_position;
using cursor::reset_target;

struct expected_cursor {
    offset mdo = 0;
    std::set<offset> acked;  // individually acked at or above mdo (confirmed)
};

void check_invariants(harness& h, const std::map<std::string, expected_cursor>& want) {
    auto& l = h.ledger();
    ASSERT_TRUE(l);
    const auto i = l->info();
    EXPECT_GE(i.floor, i.start);
    for (const auto& name : l->cursor_names()) {
        auto c = *l->find_cursor(name);
        EXPECT_EQ(c->life(), cursor::lifecycle::active) << name;
        EXPECT_GE(c->mark_delete(), i.start) << name;
        EXPECT_GE(c->mark_delete(), i.physical_first) << name;
        EXPECT_GE(c->mark_delete(), i.floor) << name;
        auto it = want.find(name);
        if (it == want.end()) {
            continue;
        }
        const auto& w = it->second;
        // Every confirmed ack survives (unless a trim/eviction moved MDO past it).
        for (offset a : w.acked) {
            EXPECT_TRUE(c->is_acked(a)) << name << " lost ack " << a;
        }
        // The redelivery set is exactly [MDO, end) - acked.
        std::vector<offset> want_set;
        for (offset x = c->mark_delete(); x < i.end; ++x) {
            if (!c->is_acked(x)) {
                want_set.push_back(x);
            }
        }
        std::vector<offset> got;
        for (auto& [o, bits] : deliverable(*c)) {
            got.push_back(o);
        }
        EXPECT_EQ(got, want_set) << name;
        EXPECT_EQ(c->backlog(), want_set.size()) << name;
        EXPECT_GE(c->mark_delete(), std::min(w.mdo, i.start)) << name;
    }
}

class LedgerCrash : public ::testing::TestWithParam<std::tuple<std::string, bool>> {};

TEST_P(LedgerCrash, StepCrashThenReopenKeepsInvariants) {
    const auto& [step, power] = GetParam();
    harness h;
    h.options().retention.backlog_limit_entries = 60;
    auto& l = h.open();
    h.append_n(100, 0);
    std::map<std::string, expected_cursor> want;
    {
        auto a = *l->open_cursor("a", initial_position::earliest());
        auto b = *l->open_cursor("b", initial_position::at_offset(20));
        for (offset x = 0; x < 100; x += 3) {
            ok(a->ack_sync(a->current_fence(), x));
            want["a"].acked.insert(x);
        }
        ok(b->ack_cumulative_sync(b->current_fence(), 49));
        ok(b->ack_sync(b->current_fence(), 70));
        want["b"] = expected_cursor{50, {70}};
    }
    h.ledger().reset();
    std::string crash_step = step;
    h.options().fault_hook = [&](std::string_view s) {
        return s == crash_step;
    };
    h.restart_or_fail();
    auto& l2 = h.ledger();
    if (l2) {
        // The operation that reaches the step.
        if (step.rfind("trim.", 0) == 0 || step.rfind("evict.", 0) == 0) {
            EXPECT_EQ(l2->trim().error(), errc::injected_crash);
        } else if (step == "protect.reset_pending") {
            auto b = *l2->find_cursor("b");
            EXPECT_EQ(b->reset(reset_target::to_offset(30)).error(), errc::injected_crash);
            want["b"] = expected_cursor{30, {}};
        } else {
            EXPECT_EQ(l2->open_cursor("c", initial_position::at_offset(10)).error(),
                      errc::injected_crash);
        }
    }
    h.options().fault_hook = nullptr;
    h.crash_and_open(power ? harness::crash_kind::power_loss : harness::crash_kind::process);
    check_invariants(h, want);
    // The reopened ledger trims and serves normally; a second crash changes nothing.
    ASSERT_TRUE(h.ledger()->trim().has_value());
    check_invariants(h, want);
    h.crash_and_open(harness::crash_kind::power_loss);
    check_invariants(h, want);
}

INSTANTIATE_TEST_SUITE_P(Steps,
                         LedgerCrash,
                         ::testing::Combine(::testing::Values("open.claimed",
                                                              "open.stabilized",
                                                              "open.recovered",
                                                              "open.floor_finalized",
                                                              "protect.cursor_pending",
                                                              "protect.floor_written",
                                                              "protect.reset_pending",
                                                              "trim.recorded",
                                                              "evict.advanced",
                                                              "trim.evicted",
                                                              "trim.storage_trimmed"),
                                            ::testing::Bool()),
                         [](const auto& info) {
                             std::string n = std::get<0>(info.param);
                             for (auto& ch : n) {
                                 if (ch == '.') {
                                     ch = '_';
                                 }
                             }
                             return n + (std::get<1>(info.param) ? "_PowerLoss" : "_ProcessCrash");
                         });

TEST(LedgerCrashDrop, DropWithoutCloseUnderPowerLossKeepsConfirmedState) {
    harness h;
    auto& l = h.open();
    h.append_n(200, 0, 4);
    std::map<std::string, expected_cursor> want;
    {
        auto c = *l->open_cursor("s", initial_position::earliest());
        auto f = c->current_fence();
        for (offset x = 0; x < 200; x += 2) {
            ok(c->ack_sync(f, x));
            want["s"].acked.insert(x);
        }
        auto bits = cursor::batch_bits::none_set(4);
        bits.set(1);
        ok(c->ack_batch_index_sync(f, 101, bits));
        ok(c->put_property("k", "v"));
    }
    h.crash_and_open(harness::crash_kind::power_loss);
    EXPECT_EQ(h.ledger()->info().end, 200U);
    check_invariants(h, want);
    auto c = *h.ledger()->find_cursor("s");
    ASSERT_TRUE(c->remaining(101).has_value());
    EXPECT_EQ(c->remaining(101)->indices(), (std::vector<std::uint32_t>{0, 2, 3}));
    EXPECT_EQ(c->properties().at("k"), "v");
}

}  // namespace
}  // namespace nereus::ledger::test
