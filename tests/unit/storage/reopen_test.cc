// Fail-stop after a journal write/sync error, and the in-process reopen (reopening_store.h).
//
// fault_file_system models Linux after a failed fdatasync: the unsynced pages are no longer
// pending, so a later successful sync does NOT make them durable (they stay readable until a
// power loss). A store that retried the sync, or kept appending to the same journal, could
// confirm records whose earlier bytes never reach the disk. These tests pin the rule instead:
// nothing pending at the failure is confirmed, later appends are refused until a reopen, and
// the reopened store holds exactly the confirmed prefix, plus possibly some unconfirmed records,
// intact and in order, never damaged ones.

#include "nereus/base/fault_file_system.h"
#include "nereus/storage/errc.h"
#include "nereus/storage/reopening_store.h"
#include "nereus/storage/stream_store.h"

#include <gtest/gtest.h>

#include "support/payloads.h"
#include "support/store_helpers.h"
#include <chrono>
#include <mutex>
#include <thread>

namespace nereus::storage {
namespace {

using namespace testing;
using namespace std::chrono_literals;

constexpr std::size_t kSize = 80;

// Results of a burst of async appends, collected from the committer thread.
struct burst {
    std::mutex mu;
    std::vector<result<offset>> results;
    pending_counter pending;

    void run(stream_store& s, std::uint64_t first_seq, int n) {
        {
            const std::lock_guard l(mu);
            results.assign(static_cast<std::size_t>(n), error(errc::closed));
        }
        pending.add(n);
        for (int i = 0; i < n; ++i) {
            const auto p = payload(1, first_seq + i, kSize);
            s.append(stream_id(1), p, [this, i](result<offset> r) {
                {
                    const std::lock_guard l(mu);
                    results[static_cast<std::size_t>(i)] = r;
                }
                pending.done();
            });
        }
        pending.wait();
    }
    int confirmed() {
        const std::lock_guard l(mu);
        int n = 0;
        for (const auto& r : results) {
            n += r.has_value() ? 1 : 0;
        }
        return n;
    }
};

// The stream holds payloads 0..confirmed-1 exactly, then at most `unconfirmed` more, each the
// next attempted payload, intact. Returns the stream's length.
std::size_t expect_confirmed_prefix_plus_intact(stream_store& s,
                                                std::size_t confirmed,
                                                std::size_t unconfirmed) {
    auto all = read_all(s, stream_id(1));
    EXPECT_GE(all.size(), confirmed) << "a confirmed append is missing";
    EXPECT_LE(all.size(), confirmed + unconfirmed) << "records nobody appended";
    for (std::size_t i = 0; i < all.size(); ++i) {
        EXPECT_EQ(all[i], payload(1, i, kSize)) << "entry " << i << " is not what was appended";
    }
    return all.size();
}

enum class restart { process_crash, power_loss };

class FailStop : public ::testing::TestWithParam<restart> {
protected:
    std::shared_ptr<fault_file_system> fs_ = std::make_shared<fault_file_system>();
};

// The journal fdatasync fails once, then every sync succeeds again. Nothing pending at the
// failure is confirmed; later appends are refused (not confirmed by a later, successful sync)
// until the store is reopened; the reopened store holds the confirmed prefix, plus (page cache
// kept) possibly the failed group, intact.
TEST_P(FailStop, SyncFailsOnceThenSucceedsNothingPendingIsConfirmed) {
    auto s = open_store(fs_, "/db");
    ASSERT_NE(s, nullptr);
    ASSERT_TRUE(s->create_stream(stream_id(1)));
    constexpr int kAcked = 5;
    for (int i = 0; i < kAcked; ++i) {
        ASSERT_TRUE(s->append_sync(stream_id(1), payload(1, i, kSize)));
    }
    fs_->fail_syncs(".journal", 1);
    burst b;
    b.run(*s, kAcked, 40);
    EXPECT_EQ(b.confirmed(), 0) << "an append pending at the failed sync was confirmed";
    {
        const std::lock_guard l(b.mu);
        EXPECT_EQ(b.results[0].error(), std::errc::io_error) << b.results[0].error().message();
    }
    EXPECT_TRUE(s->failed());

    // The fault is gone (the next sync would succeed), but the store stays fail-stop.
    const auto syncs = fs_->sync_count();
    for (int i = 0; i < 3; ++i) {
        auto r = s->append_sync(stream_id(1), payload(1, 100 + i, kSize));
        ASSERT_FALSE(r) << "confirmed after the failure at " << r->value();
        EXPECT_EQ(r.error(), errc::store_failed) << r.error().message();
    }
    EXPECT_EQ(fs_->sync_count(), syncs) << "a failed store synced again";
    auto rd = s->read(stream_id(1), offset(0), 10, 1 << 20);
    ASSERT_FALSE(rd);
    EXPECT_EQ(rd.error(), errc::store_failed);
    EXPECT_FALSE(s->close());
    s.reset();

    if (GetParam() == restart::power_loss) {
        fs_->power_loss();
    } else {
        fs_->process_crash();
    }
    s = open_store(fs_, "/db");
    ASSERT_NE(s, nullptr);
    const std::size_t n = expect_confirmed_prefix_plus_intact(*s, kAcked, 40);
    if (GetParam() == restart::power_loss) {
        EXPECT_EQ(n, static_cast<std::size_t>(kAcked)) << "unsynced records survived power loss";
    }
    auto r = s->append_sync(stream_id(1), payload(1, n, kSize));
    ASSERT_TRUE(r) << r.error().message();
    EXPECT_EQ(r->value(), n);
    ASSERT_TRUE(s->close());
}

INSTANTIATE_TEST_SUITE_P(Restarts,
                         FailStop,
                         ::testing::Values(restart::process_crash, restart::power_loss),
                         [](const auto& i) {
                             return i.param == restart::power_loss ? "PowerLoss" : "ProcessCrash";
                         });

// reopening_store: the thread notices the failure and reopens in-process; the records the
// reopen recovered from the page cache are synced by it, so they survive a later power loss
// together with everything appended after the reopen.
TEST(ReopeningStore, ReopensItselfAfterAFailedSyncAndKeepsOffsetsDense) {
    auto fs = std::make_shared<fault_file_system>();
    reopen_options ro;
    ro.check_interval = 10ms;
    auto opened = reopening_store::open(fs, "/db", {}, ro);
    ASSERT_TRUE(opened) << opened.error().message();
    auto s = std::move(*opened);
    ASSERT_TRUE(s->create_stream(stream_id(1)));
    for (int i = 0; i < 5; ++i) {
        ASSERT_TRUE(s->append_sync(stream_id(1), payload(1, i, kSize)));
    }
    fs->fail_syncs(".journal", 1);
    auto failed = s->append_sync(stream_id(1), payload(1, 5, kSize));
    ASSERT_FALSE(failed) << "confirmed by a failed sync";
    EXPECT_EQ(failed.error(), std::errc::io_error) << failed.error().message();

    const auto until = std::chrono::steady_clock::now() + 20s;
    while (s->reopens() == 0 && std::chrono::steady_clock::now() < until) {
        std::this_thread::sleep_for(5ms);
    }
    ASSERT_EQ(s->reopens(), 1U) << "not reopened";
    EXPECT_FALSE(s->failed());
    // The failed group is still in the page cache: the reopen may have recovered it, intact.
    std::size_t n = expect_confirmed_prefix_plus_intact(*s, 5, 1);
    for (int i = 0; i < 10; ++i, ++n) {
        auto r = s->append_sync(stream_id(1), payload(1, n, kSize));
        ASSERT_TRUE(r) << r.error().message();
        EXPECT_EQ(r->value(), n) << "offsets must continue after the recovered end";
    }
    ASSERT_TRUE(s->close());
    s.reset();

    fs->power_loss();
    auto again = open_store(fs, "/db");
    ASSERT_NE(again, nullptr);
    EXPECT_EQ(read_all(*again, stream_id(1)).size(), n) << "lost after the reopen";
    expect_confirmed_prefix_plus_intact(*again, n, 0);
}

// append() reads the serving store without the lock (reopening_store.h): appends racing the
// failure and the reopen each complete exactly once, either confirmed or refused with an I/O
// error or store_failed (never `closed`, never lost); afterwards the stream is dense, and each
// confirmed append's offset holds its payload.
TEST(ReopeningStore, AppendsRacingAReopenCompleteOnceAndConfirmOnlyWhatIsThere) {
    auto fs = std::make_shared<fault_file_system>();
    reopen_options ro;
    ro.check_interval = 1ms;
    auto opened = reopening_store::open(fs, "/db", {}, ro);
    ASSERT_TRUE(opened) << opened.error().message();
    auto s = std::move(*opened);
    ASSERT_TRUE(s->create_stream(stream_id(1)));
    struct outcome {
        std::mutex mu;
        std::vector<std::pair<int, result<offset>>> got;
    } out;
    pending_counter pending;
    constexpr int kAppends = 3000;
    pending.add(kAppends);
    std::thread appender([&] {
        for (int i = 0; i < kAppends; ++i) {
            const auto p = payload(1, static_cast<std::uint64_t>(i), kSize);
            s->append(stream_id(1), p, [&out, &pending, i](result<offset> r) {
                {
                    const std::lock_guard l(out.mu);
                    out.got.emplace_back(i, r);
                }
                pending.done();
            });
            if (i % 100 == 99) {
                std::this_thread::sleep_for(1ms);  // a few groups, some confirmed
            }
            if (i % 1000 == 500) {
                fs->fail_syncs(".journal", 1);  // a failure, then a reopen, mid-stream
            }
        }
    });
    appender.join();
    pending.wait();
    const auto until = std::chrono::steady_clock::now() + 20s;
    while (s->failed() && std::chrono::steady_clock::now() < until) {
        std::this_thread::sleep_for(2ms);
    }
    ASSERT_FALSE(s->failed());
    EXPECT_GE(s->reopens(), 1U);
    ASSERT_EQ(out.got.size(), static_cast<std::size_t>(kAppends));
    std::vector<int> seen(kAppends, 0);
    std::vector<std::pair<offset, int>> confirmed;
    for (const auto& [i, r] : out.got) {
        ++seen[static_cast<std::size_t>(i)];
        if (r) {
            confirmed.emplace_back(*r, i);
        } else {
            EXPECT_TRUE(r.error() == errc::store_failed || r.error() == std::errc::io_error)
                << "append " << i << ": " << r.error().message();
        }
    }
    for (int i = 0; i < kAppends; ++i) {
        EXPECT_EQ(seen[static_cast<std::size_t>(i)], 1) << "append " << i;
    }
    ASSERT_FALSE(confirmed.empty());
    auto all = read_all(*s, stream_id(1));
    for (const auto& [at, i] : confirmed) {
        ASSERT_LT(at.value(), all.size()) << "confirmed append " << i << " is missing";
        EXPECT_EQ(all[at.value()], payload(1, static_cast<std::uint64_t>(i), kSize))
            << "offset " << at.value();
    }
    ASSERT_TRUE(s->close());
}

// While the fault persists the reopen fails (the store stays failed, every call refused with
// store_failed); once it clears, the reopen succeeds and nothing confirmed is lost.
TEST(ReopeningStore, ReopenFailsWhileTheFaultPersistsThenRecovers) {
    auto fs = std::make_shared<fault_file_system>();
    reopen_options ro;
    ro.check_interval = std::chrono::hours(1);  // the test drives reopen_if_failed() itself
    ro.max_backoff = std::chrono::hours(1);
    // No journal spare: a preparation running when the limit is set would fail, free its
    // partial file and so make room for the reopen this test expects to fail.
    store_options so;
    so.prepare_journal_files = false;
    auto opened = reopening_store::open(fs, "/db", so, ro);
    ASSERT_TRUE(opened) << opened.error().message();
    auto s = std::move(*opened);
    ASSERT_TRUE(s->create_stream(stream_id(1)));
    for (int i = 0; i < 5; ++i) {
        ASSERT_TRUE(s->append_sync(stream_id(1), payload(1, i, kSize)));
    }
    ASSERT_TRUE(s->reopen_if_failed()) << "healthy: nothing to do";
    EXPECT_EQ(s->reopens(), 0U);

    fs->set_space_limit(fs->used_bytes() + 10);  // ENOSPC on the journal, and on recovery
    auto r = s->append_sync(stream_id(1), payload(1, 5, kSize));
    ASSERT_FALSE(r);
    EXPECT_TRUE(s->failed());
    for (int attempt = 0; attempt < 3; ++attempt) {
        auto re = s->reopen_if_failed();
        ASSERT_FALSE(re) << "reopened although the disk is still full";
        EXPECT_TRUE(s->failed());
        auto a = s->append_sync(stream_id(1), payload(1, 5, kSize));
        ASSERT_FALSE(a);
        EXPECT_EQ(a.error(), errc::store_failed) << a.error().message();
        auto rd = s->read(stream_id(1), offset(0), 10, 1 << 20);
        ASSERT_FALSE(rd);
        EXPECT_EQ(rd.error(), errc::store_failed) << rd.error().message();
    }
    fs->set_space_limit(std::nullopt);
    ASSERT_TRUE(s->reopen_if_failed());
    EXPECT_EQ(s->reopens(), 1U);
    const std::size_t n = expect_confirmed_prefix_plus_intact(*s, 5, 1);
    auto a = s->append_sync(stream_id(1), payload(1, n, kSize));
    ASSERT_TRUE(a) << a.error().message();
    EXPECT_EQ(a->value(), n);
    ASSERT_TRUE(s->close());
    EXPECT_EQ(s->append_sync(stream_id(1), payload(1, 0, kSize)).error(), errc::closed);
}

}  // namespace
}  // namespace nereus::storage
