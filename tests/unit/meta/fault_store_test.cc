// The store decorators: fault_store (failures before / after apply, skip and count, key prefix,
// crash, delay) and counting_store, on both backends.

#include "nereus/meta/fault_store.h"

#include "nereus/meta/counting_store.h"
#include "nereus/meta/errc.h"
#include "nereus/meta/memory_store.h"
#include "nereus/meta/sync.h"

#include <gtest/gtest.h>

#include "unit/meta/support/backends.h"
#include <atomic>
#include <future>
#include <vector>

namespace nereus::meta::test {
namespace {

class FaultStore : public ::testing::TestWithParam<backend_kind> {
protected:
    FaultStore() : holder_(GetParam()), faults_(holder_.get()) {}

    std::optional<record> read(const std::string& key) {
        auto r = get_sync(holder_.get(), key);
        EXPECT_TRUE(r.has_value());
        return r ? *r : std::nullopt;
    }

    store_holder holder_;
    fault_store faults_;
};

TEST_P(FaultStore, FailBeforeAppliesNothing) {
    faults_.fail_multis(false, 1, make_error_code(errc::unavailable));
    auto r = cas_sync(faults_, "a", absent, "1");
    ASSERT_FALSE(r.has_value());
    EXPECT_EQ(r.error(), errc::unavailable);
    EXPECT_FALSE(read("a").has_value());
    // Only `count` calls fail.
    auto again = cas_sync(faults_, "a", absent, "1");
    ASSERT_TRUE(again && again->applied);
    EXPECT_EQ(faults_.fired(), 1U);
}

TEST_P(FaultStore, FailAfterAppliesAndReportsUnknownOutcome) {
    faults_.fail_multis(true);
    auto r = cas_sync(faults_, "a", absent, "1");
    ASSERT_FALSE(r.has_value());
    EXPECT_EQ(r.error(), errc::unknown_outcome);
    auto rec = read("a");
    ASSERT_TRUE(rec.has_value());
    EXPECT_EQ(rec->value, "1");
}

TEST_P(FaultStore, SkipCountAndKeyPrefixSelectCalls) {
    faults_.add(fault_rule{.calls = call_kind::multi,
                           .key_prefix = "x/",
                           .skip = 1,
                           .count = 2,
                           .ec = make_error_code(errc::unavailable)});
    EXPECT_TRUE(cas_sync(faults_, "y/1", absent, "v").has_value());  // other prefix
    EXPECT_TRUE(cas_sync(faults_, "x/1", absent, "v").has_value());  // skipped
    EXPECT_FALSE(cas_sync(faults_, "x/2", absent, "v").has_value());
    // A multi matches when any of its ops names a matching key.
    auto m =
        multi_sync(faults_, {put{.key = "y/2", .value = "v"}, put{.key = "x/3", .value = "v"}});
    EXPECT_FALSE(m.has_value());
    EXPECT_TRUE(cas_sync(faults_, "x/4", absent, "v").has_value());  // count used up
    EXPECT_FALSE(read("x/2").has_value());
    EXPECT_FALSE(read("y/2").has_value());
    EXPECT_TRUE(read("x/4").has_value());
    EXPECT_EQ(faults_.fired(), 2U);
    EXPECT_EQ(faults_.multis_seen(), 5U);
}

TEST_P(FaultStore, ReadsAndSessionsCanFail) {
    faults_.add(fault_rule{.calls = call_kind::get | call_kind::list | call_kind::session,
                           .count = 3,
                           .ec = make_error_code(errc::io_error)});
    EXPECT_EQ(get_sync(faults_, "a").error(), errc::io_error);
    EXPECT_EQ(list_sync(faults_, "").error(), errc::io_error);
    EXPECT_EQ(open_session_sync(faults_, std::chrono::seconds(10)).error(), errc::io_error);
    EXPECT_TRUE(open_session_sync(faults_, std::chrono::seconds(10)).has_value());
}

TEST_P(FaultStore, ThenCrashFailsEveryLaterCallUntilCleared) {
    std::atomic<int> fired{0};
    faults_.add(fault_rule{.calls = call_kind::multi,
                           .action = fault_action::pass,
                           .then_crash = true,
                           .on_fire = [&fired] {
                               ++fired;
                           }});
    ASSERT_TRUE(cas_sync(faults_, "a", absent, "1").has_value());  // passes, then "dies"
    EXPECT_EQ(fired.load(), 1);
    EXPECT_TRUE(faults_.crashed());
    EXPECT_EQ(cas_sync(faults_, "b", absent, "1").error(), errc::unavailable);
    EXPECT_EQ(get_sync(faults_, "a").error(), errc::unavailable);
    faults_.clear();
    EXPECT_FALSE(faults_.crashed());
    EXPECT_TRUE(cas_sync(faults_, "b", absent, "1").has_value());
    EXPECT_EQ(read("a")->value, "1");
}

// Completions of one submitting thread keep their order when some of them fail.
TEST_P(FaultStore, CompletionsKeepSubmissionOrder) {
    faults_.add(fault_rule{.calls = call_kind::multi, .skip = 1, .count = 1});
    std::vector<int> order;
    std::mutex mu;
    std::vector<std::promise<void>> ps(3);
    for (int i = 0; i < 3; ++i) {
        std::string key = "k";
        key += std::to_string(i);
        faults_.compare_and_set(std::move(key), absent, "v", [&, i](result<cas_outcome>) {
            EXPECT_TRUE(faults_.is_callback_thread());
            const std::lock_guard lock(mu);
            order.push_back(i);
            ps[i].set_value();
        });
    }
    for (auto& p : ps) {
        p.get_future().wait();
    }
    // The last callback may still be running (unlocking `mu`) after set_value() woke us; a
    // completion that runs after it (one at a time, in order) proves it returned before the
    // locals it uses go away.
    ASSERT_TRUE(get_sync(holder_.get(), "k0").has_value());
    EXPECT_EQ(order, (std::vector<int>{0, 1, 2}));
}

TEST_P(FaultStore, CountingStoreCountsPutsAndTrackedKeys) {
    counting_store counting(faults_, "/d/");
    ASSERT_TRUE(multi_sync(counting, {put{.key = "c/root", .value = "12345"},
                                      put{.key = "c/d/1", .value = "123"}, erase{.key = "c/d/0"}})
                    .has_value());
    EXPECT_EQ(counting.multis(), 1U);
    EXPECT_EQ(counting.value_bytes(), 8U);
    EXPECT_EQ(counting.tracked_bytes(), 3U);
}

// memory_store's own injection (per commit group, below the engine): a lost reply is applied
// and watched, a failure before apply changes nothing.
TEST(MemoryStore, InjectedCommitFailureIsAnUnknownOutcome) {
    auto mem = memory_store::open();
    std::atomic<int> events{0};
    auto handle = mem->watch("u/", [&](const result<watch_event>& ev) { events += ev ? 1 : 0; });
    auto v = create_sync(*mem, "u/k", "0");
    ASSERT_TRUE(v && v->applied);
    mem->inject_commit_failure(/*applied=*/true);
    auto lost = cas_sync(*mem, "u/k", v->current, "1");
    ASSERT_FALSE(lost);
    EXPECT_EQ(lost.error(), errc::unknown_outcome);
    auto reread = get_sync(*mem, "u/k");
    ASSERT_TRUE(reread && *reread);
    EXPECT_EQ((*reread)->value, "1");
    mem->inject_commit_failure(/*applied=*/false);
    auto failed = cas_sync(*mem, "u/k", (*reread)->ver, "2");
    ASSERT_FALSE(failed);
    EXPECT_EQ(failed.error(), errc::unknown_outcome);
    EXPECT_EQ((*get_sync(*mem, "u/k"))->value, "1");
    EXPECT_EQ(events.load(), 2);
}

INSTANTIATE_TEST_SUITE_P(meta,
                         FaultStore,
                         ::testing::Values(backend_kind::memory,
                                           backend_kind::rocksdb,
                                           backend_kind::zookeeper),
                         backend_name);

}  // namespace
}  // namespace nereus::meta::test
