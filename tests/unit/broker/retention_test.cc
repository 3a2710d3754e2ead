// Retention in the broker (ledger_backend): Pulsar's semantics over the ledger's trim. With the
// defaults (time 0, size 0) data acked by every durable subscription is deleted; a lagging
// subscription holds it; a subscription being created (PROTECTION_PENDING) holds it; retention
// time and size keep acked data longer; a topic without subscriptions keeps nothing; the
// broker's settings apply to existing topics; the periodic pass runs by itself; trims survive a
// restart. (Whole-segment deletion below the trim target: tests/unit/ledger.)

#include "nereus/broker/ledger_backend.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <future>
#include <string>
#include <thread>
#include <vector>

namespace nereus::broker::test {
namespace {

using namespace std::chrono_literals;

constexpr const char* kTopic = "persistent://public/default/retained";

std::int64_t now_ms() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
}

class BrokerRetention : public ::testing::Test {
protected:
    void SetUp() override {
        std::string pattern =
            (std::filesystem::temp_directory_path() / "nereus-retention-XXXXXX").string();
        ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
        dir_ = pattern;
        options_.data_dir = dir_;
    }
    void TearDown() override {
        close();
        std::error_code ec;
        std::filesystem::remove_all(dir_, ec);
    }
    void open() {
        auto b = ledger_backend::open(options_);
        ASSERT_TRUE(b.has_value()) << b.error().message();
        backend_ = std::move(*b);
        auto t = backend_->open_topic(kTopic, true);
        ASSERT_TRUE(t.has_value()) << t.error().message();
        topic_ = std::move(*t);
    }
    void close() {
        topic_.reset();
        if (backend_) {
            EXPECT_TRUE(backend_->close().has_value());
            backend_.reset();
        }
    }
    void append_n(int n, std::int64_t publish_time = 0, std::size_t bytes = 16) {
        const std::vector<std::byte> payload(bytes, std::byte{'x'});
        for (int i = 0; i < n; ++i) {
            std::promise<result<position>> p;
            auto f = p.get_future();
            topic_->append(payload, append_info{publish_time == 0 ? now_ms() : publish_time, 1},
                           [&p](result<position> r) { p.set_value(std::move(r)); });
            ASSERT_TRUE(f.get().has_value());
        }
    }
    std::shared_ptr<subscription_cursor> sub(const std::string& name) {
        auto c = topic_->open_subscription(name, {subscription_start::kind::earliest}, true);
        EXPECT_TRUE(c.has_value()) << (c ? "" : c.error().message());
        return c ? *c : nullptr;
    }
    static void ack_through(subscription_cursor& c, std::uint64_t entry) {
        std::promise<result<ack_outcome>> p;
        auto f = p.get_future();
        c.ack_cumulative(c.current_fence(), entry,
                         [&p](result<ack_outcome> r) { p.set_value(std::move(r)); });
        auto r = f.get();
        ASSERT_TRUE(r.has_value());
        EXPECT_EQ(*r, ack_outcome::applied);
    }
    std::uint64_t first() const { return topic_->details().first_entry; }
    std::uint64_t end() const { return topic_->details().end; }
    // Every entry id a fresh read of `c` delivers (from its mark-delete position).
    static std::vector<std::uint64_t> delivered(subscription_cursor& c) {
        c.rewind();
        std::vector<std::uint64_t> out;
        for (int round = 0; round < 1000; ++round) {
            auto r = c.read(64);
            if (!r || r->empty()) {
                break;
            }
            for (const auto& e : *r) {
                out.push_back(e.pos.entry_id);
            }
        }
        return out;
    }

    std::string dir_;
    ledger_backend_options options_;
    std::unique_ptr<ledger_backend> backend_;
    std::shared_ptr<topic_store> topic_;
};

TEST_F(BrokerRetention, AckedByEverySubscriptionIsDeletedLaggingOneHoldsTheRest) {
    open();
    auto a = sub("a");
    auto b = sub("b");
    append_n(100);
    auto rep = backend_->run_retention();
    EXPECT_EQ(rep.topics, 1U);
    EXPECT_EQ(rep.trimmed, 0U);
    EXPECT_EQ(first(), 0U);  // nothing acked

    ack_through(*a, 99);
    EXPECT_EQ(backend_->run_retention().trimmed, 0U);
    EXPECT_EQ(first(), 0U) << "b has acked nothing: it holds everything";

    ack_through(*b, 59);
    rep = backend_->run_retention();
    EXPECT_EQ(rep.trimmed, 60U);
    EXPECT_EQ(rep.errors, 0U);
    EXPECT_EQ(first(), 60U);  // b's mark-delete position: never past it
    EXPECT_EQ(end(), 100U);
    // Backlogs unaffected; b still gets exactly 60..99.
    EXPECT_EQ(a->backlog(), 0U);
    EXPECT_EQ(b->backlog(), 40U);
    auto got = delivered(*b);
    ASSERT_EQ(got.size(), 40U);
    EXPECT_EQ(got.front(), 60U);
    EXPECT_EQ(got.back(), 99U);
    // A second pass with nothing newly acked changes nothing.
    EXPECT_EQ(backend_->run_retention().trimmed, 0U);
    EXPECT_EQ(first(), 60U);
}

// Segments roll at 64 MiB, so a small topic's acked data stays on disk (only the first
// readable entry moves) unless its segment also rolls by entry count
// (managedLedgerMaxEntriesPerLedger, here 10, no minimum age): then retention deletes the
// sealed segments below the acked position.
TEST_F(BrokerRetention, SmallTopicFreesAckedDataOnceItsSegmentRolled) {
    options_.segment_max_entries = 10;
    open();
    auto a = sub("a");
    append_n(35);
    ack_through(*a, 34);
    const auto rep = backend_->run_retention();
    EXPECT_EQ(rep.trimmed, 35U);
    EXPECT_EQ(rep.errors, 0U);
    EXPECT_EQ(first(), 35U);
    EXPECT_EQ(topic_->details().first_stored, 30U)
        << "the segments [0,10) [10,20) [20,30) are deleted; the active one [30,35) stays";
    // Still serves from there, and keeps the freed layout across a restart.
    append_n(2);
    close();
    open();
    EXPECT_EQ(first(), 35U);
    EXPECT_EQ(topic_->details().first_stored, 30U);
    auto again = sub("a");
    EXPECT_EQ(delivered(*again), (std::vector<std::uint64_t>{35, 36}));
}

TEST_F(BrokerRetention, SmallTopicWithoutTheEntryRollKeepsItsSegment) {
    open();  // segment_max_entries = 0: bytes only
    auto a = sub("a");
    append_n(35);
    ack_through(*a, 34);
    EXPECT_EQ(backend_->run_retention().trimmed, 35U);
    EXPECT_EQ(first(), 35U);
    EXPECT_EQ(topic_->details().first_stored, 0U) << "one active segment: nothing deleted";
}

TEST_F(BrokerRetention, TopicWithoutSubscriptionsKeepsNothingAndTrimSurvivesRestart) {
    open();
    append_n(35);
    EXPECT_EQ(backend_->run_retention().trimmed, 35U);
    EXPECT_EQ(first(), 35U);
    EXPECT_EQ(end(), 35U);
    close();
    open();
    EXPECT_EQ(first(), 35U);
    append_n(2);
    auto late = sub("late");  // earliest = the first retained entry
    auto got = delivered(*late);
    EXPECT_EQ(got, (std::vector<std::uint64_t>{35, 36}));
}

TEST_F(BrokerRetention, SubscriptionBeingCreatedProtectsTheDataItStartsAt) {
    // A pass that runs while a durable subscription is PROTECTION_PENDING (created, floor not
    // yet finalized: the hook runs exactly there) must not pass it.
    std::atomic<bool> armed{false};
    std::optional<retention_pass_report> during;
    std::uint64_t first_during = ~0ULL;
    options_.ledger_fault_hook = [&](std::string_view step) {
        if (step == "protect.cursor_pending" && armed.exchange(false)) {
            during = backend_->run_retention();
            first_during = topic_->details().first_entry;
        }
        return false;  // never a crash
    };
    open();
    auto a = sub("a");
    append_n(50);
    ack_through(*a, 49);  // alone, a would let everything go
    armed = true;
    auto late = sub("late");
    ASSERT_TRUE(during.has_value()) << "the hook did not run at protect.cursor_pending";
    EXPECT_EQ(during->errors, 0U);
    EXPECT_EQ(first_during, 0U) << "a trim passed a PROTECTION_PENDING subscription";
    EXPECT_EQ(late->backlog(), 50U);
    EXPECT_EQ(delivered(*late).size(), 50U);
    // Once it is active its mark-delete position keeps protecting the data.
    EXPECT_EQ(backend_->run_retention().trimmed, 0U);
    ack_through(*late, 29);
    EXPECT_EQ(backend_->run_retention().trimmed, 30U);
    EXPECT_EQ(first(), 30U);
}

TEST_F(BrokerRetention, RetentionTimeKeepsRecentAckedData) {
    options_.retention_time_ms = 5 * 60'000;  // 5 minutes
    options_.retention_size_bytes = -1;       // the time rule alone
    open();
    auto a = sub("a");
    append_n(40, now_ms() - 10 * 60'000);  // older than the retention time
    append_n(40);                          // recent
    ack_through(*a, 79);
    EXPECT_EQ(backend_->run_retention().trimmed, 40U);
    EXPECT_EQ(first(), 40U);  // the recent, acked half is kept
    EXPECT_EQ(a->backlog(), 0U);
}

TEST_F(BrokerRetention, RetentionSizeKeepsTheNewestBytes) {
    constexpr std::size_t entry_bytes = 1000;
    options_.retention_time_ms = -1;
    options_.retention_size_bytes = 100'000;  // ~98 entries of 1000 B (+ 14 B header each)
    open();
    auto a = sub("a");
    append_n(256, 0, entry_bytes);
    ack_through(*a, 255);
    const auto rep = backend_->run_retention();
    EXPECT_GT(rep.trimmed, 0U);
    // The newest whole index blocks (64 entries) that fit in 100,000 bytes are kept: at most
    // the limit, and less than one block below it (ledger_stream::size_boundary).
    constexpr std::uint64_t stored = entry_bytes + 14;  // + the ledger's entry header
    const std::uint64_t kept = (256 - first()) * stored;
    EXPECT_LE(kept, 100'000U);
    EXPECT_GT(kept + 64 * stored, 100'000U);
    EXPECT_EQ(first(), 192U);
    EXPECT_EQ(a->backlog(), 0U);
}

TEST_F(BrokerRetention, UnlimitedRetentionKeepsEverythingAndAppliesToExistingTopics) {
    open();
    auto a = sub("a");
    append_n(30);
    a.reset();
    close();
    options_.retention_time_ms = -1;
    options_.retention_size_bytes = -1;
    open();  // the topic was created under 0/0; the broker's settings now say unlimited
    auto a2 = sub("a");
    ack_through(*a2, 29);
    EXPECT_EQ(backend_->run_retention().trimmed, 0U);
    EXPECT_EQ(first(), 0U);
    close();
    options_.retention_time_ms = 0;
    options_.retention_size_bytes = 0;
    open();
    EXPECT_EQ(backend_->run_retention().trimmed, 30U);
    EXPECT_EQ(first(), 30U);
}

TEST_F(BrokerRetention, PeriodicPassTrimsWithoutBeingAsked) {
    options_.retention_interval = 20ms;
    open();
    auto a = sub("a");
    append_n(25);
    ack_through(*a, 24);
    // Bounded wait for the background pass (generous: a loaded CI machine).
    const auto deadline = std::chrono::steady_clock::now() + 60s;
    while (first() != 25U && std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(10ms);
    }
    EXPECT_EQ(first(), 25U);
    EXPECT_EQ(a->backlog(), 0U);
}

}  // namespace
}  // namespace nereus::broker::test
