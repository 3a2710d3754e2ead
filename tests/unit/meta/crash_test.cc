// Kills a real process that is committing CAS increments, then checks that no confirmed value
// was lost (architecture.md: "Nereus never confirms what is not durable").

#include "nereus/meta/rocksdb_store.h"
#include "nereus/meta/sync.h"
#include "nereus/meta/verify.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "support/child_process.h"
#include "unit/meta/support/temp_dir.h"
#include <chrono>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace nereus::meta::test {
namespace {

constexpr int kills = 5;
constexpr int threads = 4;
constexpr int keys = 3;

// Starts the child, lets it run for `run_for` once it has printed "ready" (store open, owner
// key created), SIGKILLs it and collects its output (lines already in the pipe were printed
// after their completion ran: confirmed too).
nereus::test::child_run run_and_kill(const std::string& dir,
                                     std::size_t max_group,
                                     std::chrono::milliseconds run_for) {
    auto run = nereus::test::run_and_kill({NEREUS_META_CRASH_CHILD, dir, std::to_string(max_group),
                                           std::to_string(threads), std::to_string(keys)},
                                          run_for, "ready");
    if (run.wait_status == -1) {
        ADD_FAILURE() << "could not run " << NEREUS_META_CRASH_CHILD;
    }
    return run;
}

class RocksdbStoreCrash : public ::testing::TestWithParam<std::size_t> {};

TEST_P(RocksdbStoreCrash, SigkillNeverLosesAConfirmedValue) {
    temp_dir tmp;
    const std::string dir = tmp.sub("store");
    std::random_device rd;
    const unsigned seed = rd();
    std::mt19937 rng(seed);
    SCOPED_TRACE(fmt::format("seed {}", seed));

    std::map<int, std::uint64_t> stored;  // per key, after the last reopen
    std::size_t total_confirmed = 0;
    for (int round = 0; round < kills; ++round) {
        SCOPED_TRACE(fmt::format("round {}", round));
        const auto run_for = std::chrono::milliseconds(100 + rng() % 401);
        const nereus::test::child_run run = run_and_kill(dir, GetParam(), run_for);
        ASSERT_TRUE(nereus::test::killed_by_sigkill(run.wait_status))
            << "child ended on its own: " << run.output;

        std::map<int, std::uint64_t> confirmed;
        std::istringstream lines(run.output);
        std::string line;
        while (std::getline(lines, line)) {
            ASSERT_FALSE(line.starts_with("e ")) << line;
            if (line.starts_with("c ")) {
                std::istringstream f(line.substr(2));
                int k = 0;
                std::uint64_t v = 0;
                ASSERT_TRUE(f >> k >> v) << line;
                confirmed[k] = std::max(confirmed[k], v);
                ++total_confirmed;
            }
        }

        // The dead process's files verify (its ephemeral key is still there, indexed).
        auto rep = verify_rocksdb_store(dir);
        ASSERT_TRUE(rep.has_value()) << rep.error().message();
        EXPECT_TRUE(rep->ok()) << rep->problems.front().key << ": " << rep->problems.front().reason;

        auto st = rocksdb_store::open(dir);
        ASSERT_TRUE(st.has_value()) << st.error().message();
        std::uint64_t unprinted = 0;
        for (int k = 0; k < keys; ++k) {
            auto r = get_sync(**st, fmt::format("crash/counter/{}", k));
            ASSERT_TRUE(r.has_value()) << r.error().message();
            const std::uint64_t now = *r ? std::stoull((*r)->value) : 0;
            EXPECT_GE(now, confirmed[k]) << "key " << k << " lost a confirmed increment";
            EXPECT_GE(now, stored[k]) << "key " << k << " went backwards across a restart";
            // Each worker has at most one applied-but-unprinted increment when killed.
            unprinted += now - std::max(confirmed[k], stored[k]);
            stored[k] = now;
        }
        EXPECT_LE(unprinted, static_cast<std::uint64_t>(threads)) << "phantom increments";
        // The owner's ephemeral key died with it.
        auto owner = get_sync(**st, "crash/owner");
        ASSERT_TRUE(owner.has_value());
        EXPECT_FALSE(owner->has_value());
    }
    EXPECT_GT(total_confirmed, 0u) << "the child never confirmed anything: the test proved nothing";
    RecordProperty("confirmed", static_cast<int>(total_confirmed));
}

INSTANTIATE_TEST_SUITE_P(meta,
                         RocksdbStoreCrash,
                         ::testing::Values(std::size_t{1}, std::size_t{256}),
                         [](const ::testing::TestParamInfo<std::size_t>& info) {
                             return fmt::format("group{}", info.param);
                         });

}  // namespace
}  // namespace nereus::meta::test
