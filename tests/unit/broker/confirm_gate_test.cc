// confirm_gate (the stream CAS of a topic owned through a shared metadata store) and
// take_over_topic_dir, against the in-memory metadata store: an entry is confirmed only once
// the stream record covers it under a live owner session and an unchanged ownership node; a
// superseded owner's delayed CAS is rejected even when the stream record's version still
// matches (scenario 34); a fenced gate confirms nothing more. doc/ownership.md.

#include "nereus/broker/confirm_gate.h"

#include "nereus/broker/topic_dir.h"
#include "nereus/meta/memory_store.h"
#include "nereus/meta/sync.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <future>
#include <thread>

namespace nereus::broker {
namespace {

using namespace std::chrono_literals;

struct owner {
    meta::session_id session;
    meta::version node;
};

owner claim(meta::store& m, const std::string& key) {
    auto s = meta::open_session_sync(m, 60s);
    EXPECT_TRUE(s);
    std::vector<meta::op> ops;
    ops.emplace_back(meta::check_session{*s});
    ops.emplace_back(meta::put{key, "pulsar://x\nhttp://x", meta::absent, *s});
    auto r = meta::multi_sync(m, std::move(ops));
    EXPECT_TRUE(r && r->applied);
    return owner{*s, r->versions.at(1)};
}

result<void> confirm_and_wait(confirm_gate& g, std::uint64_t entry) {
    std::promise<result<void>> p;
    g.confirm(entry, [&](result<void> r) { p.set_value(r); });
    auto f = p.get_future();
    EXPECT_EQ(f.wait_for(5s), std::future_status::ready);
    return f.get();
}

TEST(ConfirmGate, ConfirmsOnlyAfterTheStreamRecordCoversTheEntry) {
    auto m = meta::memory_store::open();
    const auto a = claim(*m, "owners/t");
    std::atomic<int> fenced{0};
    auto g = std::make_shared<confirm_gate>(*m, a.session, "owners/t", a.node, "ledgers/t/stream",
                                            meta::absent, [&] { ++fenced; });
    for (std::uint64_t e = 0; e < 5; ++e) {
        ASSERT_TRUE(confirm_and_wait(*g, e));
        auto rec = meta::get_sync(*m, "ledgers/t/stream");
        ASSERT_TRUE(rec && *rec);
        EXPECT_EQ(confirm_gate::decode_end((*rec)->value), e + 1);
    }
    EXPECT_EQ(g->confirmed_end(), 5U);
    EXPECT_EQ(fenced.load(), 0);
}

TEST(ConfirmGate, ManyPendingEntriesAreAllConfirmedInOrder) {
    auto m = meta::memory_store::open();
    const auto a = claim(*m, "owners/t");
    auto g = std::make_shared<confirm_gate>(*m, a.session, "owners/t", a.node, "ledgers/t/stream",
                                            meta::absent, nullptr);
    std::atomic<int> ok{0};
    std::atomic<int> out_of_order{0};
    std::promise<void> all;
    constexpr int n = 500;
    for (int e = 0; e < n; ++e) {
        g->confirm(static_cast<std::uint64_t>(e), [&, e](result<void> r) {
            if (!r) {
                return;
            }
            if (ok.load() != e) {
                ++out_of_order;
            }
            if (++ok == n) {
                all.set_value();
            }
        });
    }
    ASSERT_EQ(all.get_future().wait_for(10s), std::future_status::ready);
    auto rec = meta::get_sync(*m, "ledgers/t/stream");
    ASSERT_TRUE(rec && *rec);
    EXPECT_EQ(confirm_gate::decode_end((*rec)->value), static_cast<std::uint64_t>(n));
    EXPECT_EQ(out_of_order.load(), 0);
}

// Scenario 34: A owns the topic and confirmed up to some version of the stream record; A's
// session ends and B claims without writing the stream record. A's next CAS names the current
// version of the record, and is still rejected: by its dead session and the replaced node.
TEST(ConfirmGate, ASupersededOwnersDelayedCasIsRejectedThoughTheVersionMatches) {
    auto m = meta::memory_store::open();
    const auto a = claim(*m, "owners/t");
    std::atomic<int> fenced{0};
    auto g = std::make_shared<confirm_gate>(*m, a.session, "owners/t", a.node, "ledgers/t/stream",
                                            meta::absent, [&] { ++fenced; });
    ASSERT_TRUE(confirm_and_wait(*g, 0));
    const auto before = meta::get_sync(*m, "ledgers/t/stream").value()->ver;
    ASSERT_TRUE(meta::close_session_sync(*m, a.session));  // expiry: A's ephemerals go
    const auto b = claim(*m, "owners/t");
    EXPECT_NE(b.node, a.node);
    auto r = confirm_and_wait(*g, 1);
    EXPECT_FALSE(r);
    EXPECT_EQ(fenced.load(), 1);
    EXPECT_EQ(meta::get_sync(*m, "ledgers/t/stream").value()->ver, before);  // untouched
    // Fenced for good: no further confirmation, not even a fresh entry.
    EXPECT_FALSE(confirm_and_wait(*g, 2));
    EXPECT_TRUE(g->fenced());
    EXPECT_EQ(fenced.load(), 1);
}

TEST(ConfirmGate, AReplacedOwnershipNodeFencesALiveSession) {
    auto m = meta::memory_store::open();
    const auto a = claim(*m, "owners/t");
    auto g = std::make_shared<confirm_gate>(*m, a.session, "owners/t", a.node, "ledgers/t/stream",
                                            meta::absent, nullptr);
    ASSERT_TRUE(confirm_and_wait(*g, 0));
    // The node is released and re-created (same session, new version): the old gate is stale.
    ASSERT_TRUE(meta::remove_sync(*m, "owners/t", a.node).value().applied);
    std::vector<meta::op> ops;
    ops.emplace_back(meta::put{"owners/t", "v2", meta::absent, a.session});
    ASSERT_TRUE(meta::multi_sync(*m, std::move(ops)).value().applied);
    EXPECT_FALSE(confirm_and_wait(*g, 1));
}

TEST(ConfirmGate, ReleaseFailsWhatIsPendingWithoutReportingALoss) {
    auto m = meta::memory_store::open();
    const auto a = claim(*m, "owners/t");
    std::atomic<int> fenced{0};
    auto g = std::make_shared<confirm_gate>(*m, a.session, "owners/t", a.node, "ledgers/t/stream",
                                            meta::absent, [&] { ++fenced; });
    g->fence();
    EXPECT_FALSE(confirm_and_wait(*g, 0));
    EXPECT_EQ(fenced.load(), 0);
    EXPECT_FALSE(meta::get_sync(*m, "ledgers/t/stream").value());
}

TEST(TopicDir, EachTakeoverCopiesTheNewestGenerationAndDropsTheOlder) {
    const auto root =
        std::filesystem::temp_directory_path() / ("nereus-topic-dir-" + std::to_string(::getpid()));
    std::filesystem::remove_all(root);
    auto g1 = take_over_topic_dir(root.string());
    ASSERT_TRUE(g1);
    EXPECT_EQ(std::filesystem::path(*g1).filename(), "1");
    std::ofstream(*g1 + "/journal") << "abc";
    std::filesystem::create_directories(root / "7.tmp");  // an interrupted takeover
    auto g2 = take_over_topic_dir(root.string());
    ASSERT_TRUE(g2);
    EXPECT_EQ(std::filesystem::path(*g2).filename(), "2");
    std::ifstream in(*g2 + "/journal");
    std::string s;
    in >> s;
    EXPECT_EQ(s, "abc");
    EXPECT_FALSE(std::filesystem::exists(*g1));
    EXPECT_FALSE(std::filesystem::exists(root / "7.tmp"));
    // The previous owner writing into its generation after the takeover touches nothing read.
    std::ofstream(*g1 + "/late") << "x";
    auto g3 = take_over_topic_dir(root.string());
    ASSERT_TRUE(g3);
    EXPECT_FALSE(std::filesystem::exists(*g3 + "/late"));
    std::filesystem::remove_all(root);
}

}  // namespace
}  // namespace nereus::broker
