// A journal spare usable while it is still being zero-filled (doc/format/segment.md, "Prepared
// journal files"): an unprepared active file switches to journal/spare.tmp once its first chunk
// is synced; the preparer fills on ahead of the committer, which stops the fill when it catches
// up (waiting only for the chunk in progress), at a roll and at close. The preparer never
// writes over a block: after any crash, recovery returns exactly the acknowledged records.
// The preparer's syncs are held at a gate (fill_gate), so no test depends on timing.

#include "nereus/base/fault_file_system.h"
#include "nereus/base/forwarding_file_system.h"
#include "nereus/storage/format.h"
#include "nereus/storage/journal_scan.h"
#include "nereus/storage/stream_store.h"
#include "nereus/storage/verify.h"

#include <gtest/gtest.h>

#include "support/payloads.h"
#include "support/store_helpers.h"
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <rapidcheck/gtest.h>
#include <thread>
#include <vector>

namespace nereus::storage {
namespace {

using namespace testing;

constexpr std::size_t kPayload = 40;

// Holds the preparer's syncs: a file opened as journal/spare.tmp may complete `allowed` syncs
// (counted over all such files, in open order); later ones block until allow() raises the
// bound, or (with `hold`) at most that long. Counts each such file's syncs (they follow the
// file through the take's rename).
class fill_gate final : public forwarding_file_system {
public:
    explicit fill_gate(std::shared_ptr<file_system> inner,
                       std::uint64_t allowed = UINT64_MAX,
                       std::optional<std::chrono::microseconds> hold = std::nullopt)
        : forwarding_file_system(std::move(inner)), allowed_(allowed), hold_(hold) {}

    void allow_one_more() {
        {
            const std::lock_guard l(mu_);
            ++allowed_;
        }
        cv_.notify_all();
    }
    void allow(std::uint64_t n) {
        {
            const std::lock_guard l(mu_);
            allowed_ = n;
        }
        cv_.notify_all();
    }
    // Waits (bounded: 60 s) until a sync is held at the gate.
    bool wait_for_waiter() {
        std::unique_lock l(mu_);
        return cv_.wait_for(l, std::chrono::seconds(60), [&] { return waiting_ > 0; });
    }
    bool has_waiter() {
        const std::lock_guard l(mu_);
        return waiting_ > 0;
    }
    // Completed syncs of the k-th spare.tmp file opened.
    std::uint64_t syncs_of(std::size_t k) {
        const std::lock_guard l(mu_);
        return k < per_file_.size() ? per_file_[k] : 0;
    }

    result<std::unique_ptr<file>> open(const std::string& path, open_mode mode) override {
        auto f = inner_->open(path, mode);
        if (!f || !path.ends_with(format::kSpareJournalTmpName)) {
            return f;
        }
        std::size_t k = 0;
        {
            const std::lock_guard l(mu_);
            k = per_file_.size();
            per_file_.push_back(0);
        }
        return std::unique_ptr<file>(std::make_unique<gated_file>(this, k, std::move(*f)));
    }

private:
    class gated_file final : public forwarding_file {
    public:
        gated_file(fill_gate* g, std::size_t k, std::unique_ptr<file> f)
            : forwarding_file(std::move(f)), g_(g), k_(k) {}
        result<void> sync() override {
            {
                std::unique_lock l(g_->mu_);
                ++g_->waiting_;
                g_->cv_.notify_all();
                auto may = [&] {
                    return g_->synced_ < g_->allowed_;
                };
                if (g_->hold_) {
                    if (!g_->cv_.wait_for(l, *g_->hold_, may)) {
                        ++g_->allowed_;  // held long enough: this sync passes
                    }
                } else if (!g_->cv_.wait_for(l, std::chrono::seconds(60), may)) {
                    // Bounded: a test that failed with a sync held still ends (the store's
                    // close waits for its preparer).
                    ADD_FAILURE() << "a fill sync was held for 60 s";
                    g_->allowed_ = UINT64_MAX;
                    g_->cv_.notify_all();
                }
                --g_->waiting_;
                ++g_->synced_;
            }
            auto r = inner_->sync();
            const std::lock_guard l(g_->mu_);
            ++g_->per_file_[k_];
            return r;
        }

    private:
        fill_gate* g_;
        std::size_t k_;
    };

    std::mutex mu_;
    std::condition_variable cv_;
    std::uint64_t allowed_;
    const std::optional<std::chrono::microseconds> hold_;
    std::uint64_t synced_ = 0;
    int waiting_ = 0;
    std::vector<std::uint64_t> per_file_;
};

// 64 KiB journal files in 4 KiB chunks (a page: the committer keeps a page away from the fill).
store_options fill_options() {
    store_options o = tiny_options();
    o.journal_max_bytes = 64 << 10;
    o.checkpoint_bytes = 1ULL << 30;  // keep every journal file for inspection
    o.prepare_chunk_bytes = 4096;
    o.prepare_bytes_per_s = 0;
    o.prepare_lead_bytes = 0;
    return o;
}

// The rate measure's clock (store_options::rate_clock): a slow phase advances it, a fast phase
// does not, so "fast" does not depend on this machine's speed.
std::atomic<std::int64_t> g_rate_now_ns{0};
std::chrono::steady_clock::time_point rate_now() {
    return std::chrono::steady_clock::time_point(std::chrono::nanoseconds(g_rate_now_ns.load()));
}

class PartialSpare : public ::testing::Test {
protected:
    std::unique_ptr<stream_store> open(std::shared_ptr<file_system> fs,
                                       store_options o = fill_options()) {
        return open_store(std::move(fs), "/db", o);
    }
    void append(stream_store& s) {
        auto r = s.append_sync(stream_id(1), payload(1, acked_, kPayload));
        ASSERT_TRUE(r) << r.error().message();
        ASSERT_EQ(r->value(), acked_);
        ++acked_;
    }
    // Appends until the store switched to a spare still being filled (bounded: 60 s).
    void append_until_partial(stream_store& s) {
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
        while (s.stats().partial_spares == 0 && std::chrono::steady_clock::now() < deadline) {
            ASSERT_NO_FATAL_FAILURE(append(s));
        }
        ASSERT_GE(s.stats().partial_spares, 1U) << "no switch to a spare being filled";
    }
    // A slow writer asks for a spare: appends slowly until a commit asked for one, then waits
    // (in real time, bounded) until the preparer's next sync is held at the gate. No append is
    // made while the preparer starts, so the active file cannot fill meanwhile, however slow
    // the machine.
    void slow_until_asked_and_held(stream_store& s, fill_gate& gate) {
        const auto asked = s.stats().spares_asked;
        ASSERT_NO_FATAL_FAILURE(slow_until(s, [&] { return s.stats().spares_asked > asked; }));
        ASSERT_TRUE(gate.wait_for_waiter());
    }
    // Appends one record per 100 ms of the rate clock (a slow writer) until done() (bounded).
    template <class Done>
    void slow_until(stream_store& s, Done done) {
        for (int i = 0; i < 5000 && !done(); ++i) {
            g_rate_now_ns.fetch_add(100'000'000);
            ASSERT_NO_FATAL_FAILURE(append(s));
        }
        ASSERT_TRUE(done());
    }
    // Waits for cond() (bounded: 60 s).
    template <class Cond>
    static void wait_for(Cond cond) {
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
        while (!cond() && std::chrono::steady_clock::now() < deadline) {
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
        ASSERT_TRUE(cond());
    }
    void expect_all_acked(stream_store& s) {
        auto all = read_all(s, stream_id(1));
        ASSERT_EQ(all.size(), acked_);
        for (std::uint64_t i = 0; i < acked_; ++i) {
            ASSERT_EQ(all[i], payload(1, i, kPayload)) << i;
        }
    }
    void expect_clean() {
        auto rep = verify(*fs_, "/db");
        ASSERT_TRUE(rep);
        EXPECT_TRUE(rep->issues.empty()) << rep->issues[0].to_string();
    }
    std::string last_journal() {
        std::string last;
        auto names = fs_->list_dir("/db/journal");
        EXPECT_TRUE(names);
        for (const auto& n : *names) {
            if (format::parse_journal_file_name(n)) {
                last = std::max(last, "/db/journal/" + n);
            }
        }
        return last;
    }
    bool exists(const std::string& path) {
        auto e = fs_->exists(path);
        EXPECT_TRUE(e);
        return e && *e;
    }
    journal_file_scan scan(const std::string& path) {
        auto f = fs_->open(path, open_mode::read_only);
        EXPECT_TRUE(f);
        auto s = scan_journal_file(**f, 0, 0, nullptr);
        EXPECT_TRUE(s);
        return s ? *s : journal_file_scan{};
    }

    std::shared_ptr<fault_file_system> fs_ = std::make_shared<fault_file_system>();
    std::uint64_t acked_ = 0;
};

// The open found no spare, so the active file is unprepared; the spare asked for is switched in
// once its first chunk is durable, while its second chunk's sync is still held.
TEST_F(PartialSpare, AnUnpreparedFileSwitchesToASpareOnceItsFirstChunkIsDurable) {
    auto gate = std::make_shared<fill_gate>(fs_, 1);
    auto s = open(gate);
    ASSERT_NE(s, nullptr);
    ASSERT_TRUE(s->create_stream(stream_id(1)));
    ASSERT_NO_FATAL_FAILURE(append_until_partial(*s));
    ASSERT_TRUE(gate->wait_for_waiter()) << "the second chunk's sync is held";
    EXPECT_EQ(gate->syncs_of(0), 1U);
    EXPECT_EQ(s->stats().prepared_journals, 1U);
    EXPECT_FALSE(exists("/db/journal/spare.tmp")) << "renamed to the new journal file";
    EXPECT_FALSE(exists("/db/journal/spare"));
    const std::string j = last_journal();
    // Commits in the first chunk's pages go on while the fill is held.
    for (int i = 0; i < 5; ++i) {
        ASSERT_NO_FATAL_FAILURE(append(*s));
    }
    EXPECT_EQ(last_journal(), j);
    EXPECT_EQ(s->stats().fill_stops, 0U);
    // The file is its blocks, then zeros up to the fill end (and the held chunk): a zero tail.
    const auto sc = scan(j);
    EXPECT_TRUE(sc.zero_tail);
    EXPECT_FALSE(sc.defect);
    EXPECT_GE(sc.blocks, 5U);
    gate->allow(UINT64_MAX);
    ASSERT_TRUE(s->close());
    expect_clean();
    s = open(fs_);
    ASSERT_NE(s, nullptr);
    expect_all_acked(*s);
}

// After the take, the fill runs prepare_lead_bytes ahead of the writer without its pace: a
// writer faster than prepare_bytes_per_s would otherwise overtake it and write the rest of the
// file unprepared (doc/perf.md, "Prepared files for fast writers"). Here the pace is 1 byte
// per second, so a paced second chunk would be due in about an hour; the take comes while the
// preparer waits for it. The fill still stops at the lead: the file is not filled to its end.
TEST_F(PartialSpare, ATakenFileIsFilledItsLeadAheadOfTheWriterWithoutThePace) {
    store_options o = fill_options();
    o.prepare_bytes_per_s = 1;
    o.prepare_lead_bytes = 16 << 10;  // four chunks
    auto gate = std::make_shared<fill_gate>(fs_);
    auto s = open(gate, o);
    ASSERT_NE(s, nullptr);
    ASSERT_TRUE(s->create_stream(stream_id(1)));
    ASSERT_NO_FATAL_FAILURE(append_until_partial(*s));
    const std::string j = last_journal();
    const std::uint64_t write_end = scan(j).end_pos;
    const std::uint64_t chunk = o.prepare_chunk_bytes;
    // No append from here on: the write end stays, and the fill must reach write_end + lead.
    const std::uint64_t want = (write_end + o.prepare_lead_bytes + chunk - 1) / chunk;
    ASSERT_NO_FATAL_FAILURE(wait_for([&] { return gate->syncs_of(0) >= want; }));
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    EXPECT_LE(gate->syncs_of(0), want + 1) << "filled past its lead";
    EXPECT_LT(gate->syncs_of(0), o.journal_max_bytes / chunk);
    EXPECT_EQ(s->stats().fill_stops, 0U);
    EXPECT_EQ(last_journal(), j);
    for (int i = 0; i < 5; ++i) {
        ASSERT_NO_FATAL_FAILURE(append(*s));
    }
    ASSERT_TRUE(s->close());
    expect_clean();
    s = open(fs_);
    ASSERT_NE(s, nullptr);
    expect_all_acked(*s);
}

// The committer catches up with a fill held in its second chunk's sync: it stops the fill,
// waits for that chunk (and only it), then writes past the fill end as into an unprepared
// file. Every acknowledged append survives a kill and a power cut.
TEST_F(PartialSpare, CommitterCatchingUpStopsTheFillAndWaitsOnlyForTheChunkInProgress) {
    for (int power = 0; power < 2; ++power) {
        SCOPED_TRACE(power);
        fs_ = std::make_shared<fault_file_system>();
        acked_ = 0;
        auto gate = std::make_shared<fill_gate>(fs_, 1);
        auto s = open(gate);
        ASSERT_NE(s, nullptr);
        ASSERT_TRUE(s->create_stream(stream_id(1)));
        ASSERT_NO_FATAL_FAILURE(append_until_partial(*s));
        ASSERT_TRUE(gate->wait_for_waiter());
        const std::string j = last_journal();
        // 100 appends of ~100 B pass the first chunk's 4 KiB: the committer must stop the fill.
        constexpr int kMore = 100;
        std::atomic<int> done{0};
        std::thread writer([&] {
            for (int i = 0; i < kMore; ++i) {
                auto r = s->append_sync(stream_id(1), payload(1, acked_ + i, kPayload));
                ASSERT_TRUE(r) << r.error().message();
                done.fetch_add(1);
            }
        });
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
        while (s->stats().fill_stops == 0 && std::chrono::steady_clock::now() < deadline) {
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
        ASSERT_EQ(s->stats().fill_stops, 1U);
        // The committer waits for the held chunk: the writer cannot be done.
        EXPECT_LT(done.load(), kMore);
        gate->allow(UINT64_MAX);
        writer.join();
        acked_ += kMore;
        EXPECT_EQ(gate->syncs_of(0), 2U) << "no chunk after the stop";
        EXPECT_EQ(last_journal(), j);
        const auto sc = scan(j);
        EXPECT_GT(sc.end_pos, 8192U) << "the blocks went on past the two zeroed chunks";
        EXPECT_FALSE(sc.defect);
        fs_->crash_now();
        s.reset();  // with the fill over, nothing waits
        if (power != 0) {
            fs_->power_loss();
        } else {
            fs_->process_crash();
        }
        s = open(fs_);
        ASSERT_NE(s, nullptr);
        ASSERT_NO_FATAL_FAILURE(expect_all_acked(*s));
        ASSERT_TRUE(s->close());
        expect_clean();
    }
}

// A slow phase, then a fast one across a roll (doc/format/segment.md, "Prepared journal files"
// 2a): the roll does not take the spare still being filled (a fast writer would catch up with
// the fill and wait for it), it creates an empty file, and the fill pauses after its chunk in
// progress; once the writer is slow again, the next commit takes the spare and its fill
// resumes. Every acknowledged append survives a kill and a power cut.
TEST_F(PartialSpare, AFastRollPassesASpareBeingFilledAndASlowWriterTakesIt) {
    for (int power = 0; power < 2; ++power) {
        SCOPED_TRACE(power);
        fs_ = std::make_shared<fault_file_system>();
        acked_ = 0;
        store_options o = fill_options();
        o.prepare_max_bytes_per_s = 64 << 10;  // a slow phase writes ~1 KB per second
        o.rate_clock = &rate_now;
        constexpr std::uint64_t kChunks = (64 << 10) / 4096;  // syncs of one whole spare
        auto gate = std::make_shared<fill_gate>(fs_, 0);
        auto s = open(gate, o);
        ASSERT_NE(s, nullptr);
        ASSERT_TRUE(s->create_stream(stream_id(1)));
        // The open found no spare; the slow writer asks for one, which completes while no
        // commit runs, and the next commit switches to it.
        ASSERT_NO_FATAL_FAILURE(slow_until_asked_and_held(*s, *gate));
        gate->allow(kChunks);
        ASSERT_NO_FATAL_FAILURE(wait_for([&] { return exists("/db/journal/spare"); }));
        ASSERT_NO_FATAL_FAILURE(slow_until(*s, [&] { return s->stats().prepared_journals == 1; }));
        EXPECT_EQ(s->stats().partial_spares, 0U);
        const std::string prepared = last_journal();
        // Half way through the prepared file the next spare is asked for; its first chunk is
        // synced, its second held: a spare being filled, usable by a slow writer.
        ASSERT_NO_FATAL_FAILURE(slow_until_asked_and_held(*s, *gate));
        gate->allow(kChunks + 1);
        ASSERT_NO_FATAL_FAILURE(
            wait_for([&] { return gate->syncs_of(1) == 1 && gate->has_waiter(); }));
        ASSERT_EQ(last_journal(), prepared);
        // Fast: the clock stands still. The roll passes the spare being filled.
        const auto rolls = s->stats().journal_rolls;
        for (int i = 0; i < 5000 && s->stats().journal_rolls == rolls; ++i) {
            ASSERT_NO_FATAL_FAILURE(append(*s));
        }
        ASSERT_EQ(s->stats().journal_rolls, rolls + 1);
        EXPECT_EQ(s->stats().partial_spares_passed, 1U);
        EXPECT_EQ(s->stats().partial_spares, 0U) << "a fast roll took a spare being filled";
        EXPECT_EQ(s->stats().prepared_journals, 1U);
        EXPECT_EQ(s->stats().fill_stops, 0U);
        EXPECT_TRUE(exists("/db/journal/spare.tmp")) << "still being filled, not taken";
        const std::string empty = last_journal();
        EXPECT_NE(empty, prepared);
        // The fill pauses after its chunk in progress while the writer is fast, and the new,
        // unprepared file does not switch to the spare meanwhile. (The gate would let one more
        // chunk through: a fill beside the fast writer shows as a third sync.)
        gate->allow(kChunks + 3);
        ASSERT_NO_FATAL_FAILURE(wait_for([&] { return gate->syncs_of(1) >= 2; }));
        for (int i = 0; i < 20; ++i) {
            ASSERT_NO_FATAL_FAILURE(append(*s));
        }
        EXPECT_EQ(last_journal(), empty);
        EXPECT_EQ(s->stats().partial_spares, 0U);
        EXPECT_EQ(gate->syncs_of(1), 2U) << "the fill went on beside a fast writer";
        EXPECT_TRUE(exists("/db/journal/spare.tmp"));
        EXPECT_FALSE(exists("/db/journal/spare"));
        // Slow again (the rate is of past commits: one slow commit makes it slow), the fill
        // goes on (its third chunk; the gate holds the fourth), the next commit takes the spare
        // being filled, and its fill resumes.
        const auto before = acked_;
        ASSERT_NO_FATAL_FAILURE(slow_until(*s, [&] { return s->stats().partial_spares == 1; }));
        EXPECT_EQ(acked_ - before, 2U);
        EXPECT_EQ(s->stats().prepared_journals, 2U);
        EXPECT_GT(last_journal(), empty);
        gate->allow(UINT64_MAX);
        ASSERT_NO_FATAL_FAILURE(wait_for([&] { return gate->syncs_of(1) == kChunks; }));
        for (int i = 0; i < 20; ++i) {
            ASSERT_NO_FATAL_FAILURE(append(*s));
        }
        fs_->crash_now();
        s.reset();
        if (power != 0) {
            fs_->power_loss();
        } else {
            fs_->process_crash();
        }
        s = open(fs_, o);
        ASSERT_NE(s, nullptr);
        ASSERT_NO_FATAL_FAILURE(expect_all_acked(*s));
        ASSERT_TRUE(s->close());
        expect_clean();
    }
}

// A short burst after an idle gap is fast from its second commit: the gap is part of at most the
// burst's first interval of the rate measure (with a window of 32 commits only, a burst looked
// slow for 31 commits, and took spares still being filled and stopped their fills: doc/perf.md,
// "Short bursts, partial spares and the unlink stall"). Here the prepared active file is nearly
// full when the burst begins and the next spare is being filled: the roll, within the burst's
// first commits, passes that spare. Every acknowledged append survives a power cut.
TEST_F(PartialSpare, ARollEarlyInABurstAfterAnIdleGapPassesASpareBeingFilled) {
    store_options o = fill_options();
    o.prepare_max_bytes_per_s = 64 << 10;
    o.rate_clock = &rate_now;
    constexpr std::uint64_t kFile = 64 << 10;
    constexpr std::uint64_t kChunks = kFile / 4096;
    auto gate = std::make_shared<fill_gate>(fs_, 0);
    auto s = open(gate, o);
    ASSERT_NE(s, nullptr);
    ASSERT_TRUE(s->create_stream(stream_id(1)));
    // Every commit is one record of the same size.
    const std::uint64_t before = s->stats().journal_bytes;
    g_rate_now_ns.fetch_add(100'000'000);
    ASSERT_NO_FATAL_FAILURE(append(*s));
    const std::uint64_t block = s->stats().journal_bytes - before;
    ASSERT_GT(block, 0U);
    // The open found no spare; the slow writer asks for one and switches to it when complete.
    ASSERT_NO_FATAL_FAILURE(slow_until_asked_and_held(*s, *gate));
    gate->allow(kChunks);
    ASSERT_NO_FATAL_FAILURE(wait_for([&] { return exists("/db/journal/spare"); }));
    std::uint64_t file_start = 0;  // journal bytes before the commit that switched to the spare
    ASSERT_NO_FATAL_FAILURE(slow_until(*s, [&] {
        const auto st = s->stats();
        if (st.prepared_journals == 1) {
            return true;
        }
        file_start = st.journal_bytes;
        return false;
    }));
    // Half way the next spare is asked for: its first chunk synced, its second held.
    ASSERT_NO_FATAL_FAILURE(slow_until_asked_and_held(*s, *gate));
    gate->allow(kChunks + 1);
    ASSERT_NO_FATAL_FAILURE(wait_for([&] { return gate->syncs_of(1) == 1 && gate->has_waiter(); }));
    // Slow on until fewer than 10 blocks fit in the active file.
    const auto rolls = s->stats().journal_rolls;
    ASSERT_NO_FATAL_FAILURE(slow_until(
        *s, [&] { return s->stats().journal_bytes - file_start + 10 * block >= kFile; }));
    ASSERT_EQ(s->stats().journal_rolls, rolls);
    // Idle for 10 s, then a burst of a commit per millisecond (over 64 KiB/s from its second).
    g_rate_now_ns.fetch_add(10'000'000'000);
    int burst = 0;
    for (; burst < 40 && s->stats().journal_rolls == rolls; ++burst) {
        g_rate_now_ns.fetch_add(1'000'000);
        ASSERT_NO_FATAL_FAILURE(append(*s));
    }
    ASSERT_EQ(s->stats().journal_rolls, rolls + 1);
    EXPECT_LE(burst, 12);
    EXPECT_EQ(s->stats().partial_spares_passed, 1U);
    EXPECT_EQ(s->stats().partial_spares, 0U) << "a roll in a burst took a spare being filled";
    EXPECT_EQ(s->stats().fill_stops, 0U);
    EXPECT_TRUE(exists("/db/journal/spare.tmp")) << "still being filled, not taken";
    gate->allow(UINT64_MAX);
    for (int i = 0; i < 20; ++i) {
        g_rate_now_ns.fetch_add(1'000'000);
        ASSERT_NO_FATAL_FAILURE(append(*s));
    }
    fs_->crash_now();
    s.reset();
    fs_->power_loss();
    s = open(fs_, o);
    ASSERT_NE(s, nullptr);
    ASSERT_NO_FATAL_FAILURE(expect_all_acked(*s));
    ASSERT_TRUE(s->close());
    expect_clean();
}

// A spare not taken is not filled beside a fast writer, but it is filled while the writer is
// idle: the fill waits after its chunk in progress while commits come fast, and goes on once the
// last commit is kRateWindow (100 ms on the rate clock) old, so the spare is complete for the
// next burst.
TEST_F(PartialSpare, ASpareHeldForAFastWriterIsFilledWhileTheWriterIsIdle) {
    store_options o = fill_options();
    o.prepare_max_bytes_per_s = 64 << 10;
    o.rate_clock = &rate_now;
    constexpr std::uint64_t kChunks = (64 << 10) / 4096;
    auto gate = std::make_shared<fill_gate>(fs_, 0);
    auto s = open(gate, o);
    ASSERT_NE(s, nullptr);
    ASSERT_TRUE(s->create_stream(stream_id(1)));
    // The slow writer asks for a spare; the gate holds its first chunk's sync.
    ASSERT_NO_FATAL_FAILURE(slow_until_asked_and_held(*s, *gate));
    // Fast (the clock stands still): the first chunk completes, then the fill waits although
    // the gate would let the whole file through.
    for (int i = 0; i < 40; ++i) {
        ASSERT_NO_FATAL_FAILURE(append(*s));
    }
    gate->allow(UINT64_MAX);
    ASSERT_NO_FATAL_FAILURE(wait_for([&] { return gate->syncs_of(0) >= 1; }));
    for (int i = 0; i < 20; ++i) {
        ASSERT_NO_FATAL_FAILURE(append(*s));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    EXPECT_EQ(gate->syncs_of(0), 1U) << "the fill went on beside a fast writer";
    EXPECT_EQ(s->stats().partial_spares, 0U) << "a fast writer took a spare being filled";
    EXPECT_FALSE(exists("/db/journal/spare"));
    // Idle: no commit for 200 ms of the rate clock. The fill completes the spare.
    g_rate_now_ns.fetch_add(200'000'000);
    ASSERT_NO_FATAL_FAILURE(wait_for([&] { return exists("/db/journal/spare"); }));
    EXPECT_EQ(gate->syncs_of(0), kChunks);
    // The next commit (the first of a burst) switches to the complete spare.
    ASSERT_NO_FATAL_FAILURE(append(*s));
    EXPECT_EQ(s->stats().prepared_journals, 1U);
    EXPECT_EQ(s->stats().partial_spares, 0U);
    ASSERT_TRUE(s->close());
    expect_clean();
    s = open(fs_, o);
    ASSERT_NE(s, nullptr);
    ASSERT_NO_FATAL_FAILURE(expect_all_acked(*s));
}

// The first commit after an idle gap may start a burst, and tells nothing of its rate: it does
// not take a spare still being filled (in a burst the committer would catch up with the fill and
// wait for its chunk in progress). A writer whose next commits are slow takes it.
TEST_F(PartialSpare, TheFirstCommitAfterAnIdleGapDoesNotTakeASpareBeingFilled) {
    store_options o = fill_options();
    o.prepare_max_bytes_per_s = 64 << 10;
    o.rate_clock = &rate_now;
    auto gate = std::make_shared<fill_gate>(fs_, 0);
    auto s = open(gate, o);
    ASSERT_NE(s, nullptr);
    ASSERT_TRUE(s->create_stream(stream_id(1)));
    // The slow writer asks for a spare; its first chunk is held, then synced, its second held.
    ASSERT_NO_FATAL_FAILURE(slow_until_asked_and_held(*s, *gate));
    g_rate_now_ns.fetch_add(10'000'000'000);  // idle for 10 s
    gate->allow(1);
    ASSERT_NO_FATAL_FAILURE(wait_for([&] { return gate->syncs_of(0) == 1 && gate->has_waiter(); }));
    ASSERT_NO_FATAL_FAILURE(append(*s));
    EXPECT_EQ(s->stats().partial_spares, 0U) << "the first commit after a gap took the spare";
    // Slow commits: the second one's rate is known, and the third commit takes the spare.
    const auto before = acked_;
    ASSERT_NO_FATAL_FAILURE(slow_until(*s, [&] { return s->stats().partial_spares == 1; }));
    EXPECT_EQ(acked_ - before, 2U);
    gate->allow(UINT64_MAX);
    ASSERT_TRUE(s->close());
    expect_clean();
    s = open(fs_, o);
    ASSERT_NE(s, nullptr);
    ASSERT_NO_FATAL_FAILURE(expect_all_acked(*s));
}

// close() while the preparer is held in a chunk of the active file: the fill stops after that
// chunk, close cuts the file to its blocks, and nothing is left named spare or spare.tmp.
TEST_F(PartialSpare, CloseDuringTheFillOfTheActiveFile) {
    auto gate = std::make_shared<fill_gate>(fs_, 1);
    auto s = open(gate);
    ASSERT_NE(s, nullptr);
    ASSERT_TRUE(s->create_stream(stream_id(1)));
    ASSERT_NO_FATAL_FAILURE(append_until_partial(*s));
    ASSERT_TRUE(gate->wait_for_waiter());
    const std::string j = last_journal();
    std::optional<result<void>> closed;
    std::thread closer([&] { closed = s->close(); });
    gate->allow(UINT64_MAX);  // before or after close() asked the preparer to stop
    closer.join();
    ASSERT_TRUE(closed && *closed);
    EXPECT_FALSE(exists("/db/journal/spare.tmp"));
    auto size = fs_->file_size(j);
    ASSERT_TRUE(size);
    EXPECT_EQ(*size, scan(j).end_pos) << "close cut the zeros after the blocks";
    expect_clean();
    s = open(fs_);
    ASSERT_NE(s, nullptr);
    expect_all_acked(*s);
}

// A spare that became usable (its first chunk synced) and then failed before any roll took
// it is gone: the store does not keep rolling to a spare that no longer exists.
TEST_F(PartialSpare, AFailedFillBeforeTheTakeLeavesNoUsableSpare) {
    auto gate = std::make_shared<fill_gate>(fs_, 0);
    auto s = open(gate);
    ASSERT_NE(s, nullptr);
    ASSERT_TRUE(s->create_stream(stream_id(1)));
    // The spare is asked for once the unprepared file holds half its size: its first sync
    // is then held.
    for (int i = 0; i < 5000 && s->stats().spares_asked == 0; ++i) {
        ASSERT_NO_FATAL_FAILURE(append(*s));
    }
    ASSERT_EQ(s->stats().spares_asked, 1U);
    ASSERT_TRUE(gate->wait_for_waiter());
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    // Its second chunk's write (and every retry's) fails; the first chunk's sync passes.
    fs_->fail_writes(std::string(format::kSpareJournalTmpName), std::errc::no_space_on_device, 0,
                     1 << 20);
    gate->allow(UINT64_MAX);
    while (exists("/db/journal/spare.tmp") && std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    ASSERT_FALSE(exists("/db/journal/spare.tmp")) << "the failed preparation was abandoned";
    const auto rolls = s->stats().journal_rolls;
    for (int i = 0; i < 20; ++i) {
        ASSERT_NO_FATAL_FAILURE(append(*s));
    }
    EXPECT_EQ(s->stats().journal_rolls, rolls) << "no switch to a spare that is gone";
    EXPECT_EQ(s->stats().partial_spares, 0U);
    ASSERT_TRUE(s->close());
    s = open(fs_);
    ASSERT_NE(s, nullptr);
    expect_all_acked(*s);
}

// Fill and commit concurrently, with random record sizes, chunk sizes, leads, journal sizes and
// fill progress (the appender lets one more chunk's sync pass every `step` appends; a held sync
// passes anyway after 2 ms, so a committer that caught up never waits for the appender), then
// a crash of a random kind (or a clean close): recovery returns exactly the acknowledged
// records and verify finds nothing wrong. A zero-fill written over a block would lose an
// acknowledged record (at the end) or be a bad block followed by valid ones (before). Timing
// changes only which interleavings a run covers, never whether it passes.
RC_GTEST_PROP(PartialSpareProperty, RecoveryReturnsExactlyTheAcknowledgedRecords, ()) {
    auto fs = std::make_shared<fault_file_system>();
    auto gate = std::make_shared<fill_gate>(fs, 1, std::chrono::milliseconds(2));
    store_options o = fill_options();
    o.journal_max_bytes = *rc::gen::element<std::uint64_t>(16 << 10, 32 << 10, 64 << 10);
    o.prepare_chunk_bytes = *rc::gen::element<std::uint64_t>(4096, 8192, 12288);
    o.prepare_lead_bytes = *rc::gen::element<std::uint64_t>(0, 4096, 16 << 10);
    o.direct_journal_writes = *rc::gen::arbitrary<bool>();
    const auto sizes = *rc::gen::container<std::vector<std::size_t>>(
        *rc::gen::inRange<std::size_t>(50, 400),
        rc::gen::weightedOneOf<std::size_t>({{4, rc::gen::inRange<std::size_t>(0, 300)},
                                             {1, rc::gen::inRange<std::size_t>(300, 6000)}}));
    const auto step = *rc::gen::inRange<std::size_t>(1, 40);
    const int ending = *rc::gen::inRange(0, 4);  // kill, power cut, torn power cut, close
    auto opened = stream_store::open(gate, "/db", o);
    RC_ASSERT(opened.has_value());
    auto s = std::move(*opened);
    RC_ASSERT(s->create_stream(stream_id(1)).has_value());
    for (std::size_t i = 0; i < sizes.size(); ++i) {
        auto r = s->append_sync(stream_id(1), payload(1, i, sizes[i]));
        RC_ASSERT(r.has_value());
        RC_ASSERT(r->value() == i);
        if (i % step == 0) {
            gate->allow_one_more();
        }
    }
    RC_CLASSIFY(s->stats().partial_spares > 0, "switched to a spare being filled");
    RC_CLASSIFY(s->stats().fill_stops > 0, "a fill was stopped");
    if (ending == 3) {
        RC_ASSERT(s->close().has_value());
        s.reset();
    } else {
        fs->crash_now();
        s.reset();
        if (ending == 0) {
            fs->process_crash();
        } else if (ending == 1) {
            fs->power_loss();
        } else {
            fs->power_loss_torn(sizes.size());
        }
    }
    opened = stream_store::open(fs, "/db", o);
    RC_ASSERT(opened.has_value());
    s = std::move(*opened);
    auto all = read_all(*s, stream_id(1));
    RC_ASSERT(all.size() == sizes.size());
    for (std::size_t i = 0; i < sizes.size(); ++i) {
        RC_ASSERT(all[i] == payload(1, i, sizes[i]));
    }
    RC_ASSERT(s->close().has_value());
    auto rep = verify(*fs, "/db");
    RC_ASSERT(rep.has_value());
    RC_ASSERT(rep->issues.empty());
}

}  // namespace
}  // namespace nereus::storage
