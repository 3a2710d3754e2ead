// Crash test with a real process: ledger_crash_child runs an ack-heavy load and is SIGKILLed at
// a random point, 5 times on one directory. After each kill the test recovers the ledger itself
// and checks: every ack the child reported confirmed is still acked, the unacked offsets are
// exactly what a reader is redelivered, and no cursor references data behind the floor.

#include "nereus/ledger/managed_cursor.h"
#include "nereus/ledger/managed_ledger.h"
#include "nereus/meta/rocksdb_store.h"
#include "nereus/meta/sync.h"
#include "nereus/objects/fs_object_store.h"
#include "nereus/storage/stream_store.h"

#include <gtest/gtest.h>

#include "support/child_process.h"
#include "support/harness.h"
#include <random>
#include <set>
#include <sstream>

namespace nereus::ledger::test {
namespace {

TEST(LedgerProcessCrash, SigkillDuringAckLoadKeepsConfirmedAcks) {
    const std::string dir = make_temp_dir("proc");
    std::mt19937_64 rng(::testing::UnitTest::GetInstance()->random_seed() + 17);
    std::set<offset> confirmed;
    offset cumulative_floor = 0;
    for (int kill = 0; kill < 5; ++kill) {
        const std::string seed = std::to_string(rng());
        const auto run =
            nereus::test::run_and_kill({NEREUS_LEDGER_CRASH_CHILD, dir, seed},
                                       std::chrono::milliseconds(300 + rng() % 700), "ready");
        ASSERT_TRUE(nereus::test::killed_by_sigkill(run.wait_status))
            << "child ended on its own, wait status " << run.wait_status << ", output:\n"
            << run.output;
        {
            std::istringstream in(run.output);
            std::string line;
            while (std::getline(in, line)) {
                std::istringstream ls(line);
                char kind = 0;
                offset x = 0;
                if (ls >> kind >> x) {
                    if (kind == 'A') {
                        confirmed.insert(x);
                    } else if (kind == 'C') {
                        cumulative_floor = std::max(cumulative_floor, x + 1);
                    }
                }
            }
        }
        // Recover in this process and check.
        auto m = meta::rocksdb_store::open(dir + "/meta");
        ASSERT_TRUE(m.has_value());
        auto s = storage::stream_store::open(posix_file_system(), dir + "/streams");
        ASSERT_TRUE(s.has_value());
        auto o = objects::fs_object_store::open(posix_file_system(), dir + "/objects");
        ASSERT_TRUE(o.has_value());
        auto session = meta::open_session_sync(**m, std::chrono::minutes(10));
        ASSERT_TRUE(session.has_value());
        ledger_options opts;
        opts.cursor.spill_threshold_bytes = 256;
        auto l = managed_ledger::open_writable(ledger_env{m->get(), o->get(), s->get(), *session},
                                               "persistent://crash/t", opts);
        ASSERT_TRUE(l.has_value()) << l.error().message();
        auto c = (*l)->find_cursor("sub");
        ASSERT_TRUE(c.has_value());
        const auto info = (*l)->info();
        EXPECT_GE((*c)->mark_delete(), info.start);
        EXPECT_GE((*c)->mark_delete(), info.physical_first);
        EXPECT_GE((*c)->mark_delete(), cumulative_floor);
        for (offset x : confirmed) {
            EXPECT_TRUE((*c)->is_acked(x)) << "confirmed ack lost: " << x;
        }
        std::vector<offset> want;
        for (offset x = (*c)->mark_delete(); x < info.end; ++x) {
            if (!(*c)->is_acked(x)) {
                want.push_back(x);
            }
        }
        std::vector<offset> got;
        for (auto& [x, bits] : deliverable(**c)) {
            got.push_back(x);
        }
        EXPECT_EQ(got, want);
        c->reset();
        ASSERT_TRUE((*l)->close().has_value());
        l->reset();
        ASSERT_TRUE((*s)->close().has_value());
        EXPECT_GT(info.end, 0U);
        RecordProperty("kill" + std::to_string(kill) + "_acks", std::to_string(confirmed.size()));
    }
    EXPECT_GT(confirmed.size(), 0U);
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
}

}  // namespace
}  // namespace nereus::ledger::test
