// Leader commits (journaled_store.h, "Leader commit"): an appending thread inside a
// flush_batch scope writes the group itself at the scope's end, at low rates.

#include "nereus/base/fault_file_system.h"
#include "nereus/base/flush_batch.h"
#include "nereus/storage/stream_store.h"

#include <gtest/gtest.h>

#include "support/counting_file_system.h"
#include "support/payloads.h"
#include "support/store_helpers.h"
#include <array>
#include <atomic>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <thread>
#include <vector>

namespace nereus::storage {
namespace {

using namespace testing;

struct seen {
    std::mutex mu;
    std::vector<std::uint64_t> offsets;  // successful completions, in completion order
    std::vector<std::thread::id> threads;
    int failures = 0;
    void add(const result<offset>& r) {
        const std::lock_guard l(mu);
        if (r) {
            offsets.push_back(r->value());
        } else {
            ++failures;
        }
        threads.push_back(std::this_thread::get_id());
    }
    std::size_t size() {
        const std::lock_guard l(mu);
        return threads.size();
    }
};

store_options leader_options(store_options o = {}) {
    o.leader_commits = true;
    return o;
}

// Appends one record in a scope until a leader commit happens (the committer thread must have
// reached its idle wait first; it does within microseconds, so this takes one or two rounds).
// Afterwards the committer waits idle and the last group was small: the next scope leads.
bool settle_into_leader_mode(stream_store& s, stream_id id, std::uint64_t& seq) {
    for (int i = 0; i < 2000; ++i) {
        const auto before = s.stats().leader_commits;
        pending_counter pending;
        pending.add();
        {
            const flush_batch batch;
            s.append(id, payload(id.value(), seq++, 100), [&](result<offset> r) {
                EXPECT_TRUE(r);
                pending.done();
            });
        }
        pending.wait();
        if (s.stats().leader_commits > before) {
            return true;
        }
        std::this_thread::yield();
    }
    return false;
}

TEST(LeaderCommit, TheAppendingThreadCommitsItsBatchAtTheScopeEnd) {
    auto fs = std::make_shared<counting_file_system>(std::make_shared<fault_file_system>());
    auto s = open_store(fs, "/db", leader_options());
    ASSERT_NE(s, nullptr);
    ASSERT_TRUE(s->create_stream(stream_id(1)));
    std::uint64_t seq = 0;
    ASSERT_TRUE(settle_into_leader_mode(*s, stream_id(1), seq));

    const auto commits = s->stats().commits;
    const auto leaders = s->stats().leader_commits;
    const auto syncs = fs->journal_syncs.load();
    seen got;
    {
        const flush_batch batch;
        for (int i = 0; i < 3; ++i) {
            s->append(stream_id(1), payload(1, seq++, 100), [&](result<offset> r) { got.add(r); });
        }
        // Not woken: the committer leaves the group to this thread's scope.
        EXPECT_EQ(got.size(), 0U);
        EXPECT_EQ(s->stats().commits, commits);
    }
    // The scope's end wrote the group (one journal sync) and ran the completions here.
    ASSERT_EQ(got.size(), 3U);
    EXPECT_EQ(got.offsets, (std::vector<std::uint64_t>{seq - 3, seq - 2, seq - 1}));
    for (const auto& t : got.threads) {
        EXPECT_EQ(t, std::this_thread::get_id());
    }
    EXPECT_EQ(s->stats().commits, commits + 1);
    EXPECT_EQ(s->stats().leader_commits, leaders + 1);
    EXPECT_EQ(fs->journal_syncs.load(), syncs + 1);
    EXPECT_EQ(read_all(*s, stream_id(1)).size(), seq);
    ASSERT_TRUE(s->close());
}

// Pacing (store_options::min_sync_interval) binds a leader too: inside the interval, the scope's
// end hands its group to the committer, which waits out the interval.
TEST(LeaderCommit, ALeaderDoesNotWriteInsideTheMinSyncInterval) {
    auto fs = std::make_shared<counting_file_system>(std::make_shared<fault_file_system>());
    store_options o = leader_options();
    o.min_sync_interval = std::chrono::seconds(1);
    auto s = open_store(fs, "/db", o);
    ASSERT_NE(s, nullptr);
    ASSERT_TRUE(s->create_stream(stream_id(1)));
    // Outside the interval a scope leads (a few rounds, each after the interval has passed).
    std::uint64_t seq = 0;
    bool led = false;
    auto led_at = std::chrono::steady_clock::now();  // before the leader's write started
    for (int round = 0; round < 10 && !led; ++round) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1100));
        const auto before = s->stats().leader_commits;
        led_at = std::chrono::steady_clock::now();
        seen first;
        {
            const flush_batch batch;
            s->append(stream_id(1), payload(1, seq++, 100),
                      [&](result<offset> r) { first.add(r); });
        }
        for (int i = 0; i < 30000 && first.size() == 0; ++i) {  // bounded: 30 s
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
        led = s->stats().leader_commits > before;
    }
    ASSERT_TRUE(led);  // a write just started, on this thread
    const auto leaders = s->stats().leader_commits;
    seen got;
    {
        const flush_batch batch;
        s->append(stream_id(1), payload(1, seq++, 100), [&](result<offset> r) { got.add(r); });
    }
    for (int i = 0; i < 30000 && got.size() == 0; ++i) {  // bounded: 30 s
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    ASSERT_EQ(got.size(), 1U);
    EXPECT_NE(got.threads.front(), std::this_thread::get_id());  // the committer wrote it
    EXPECT_EQ(s->stats().leader_commits, leaders);
    EXPECT_GE(s->stats().paced_commits, 1U);
    // Its write started no sooner than 1 s after the leader's, which started after led_at.
    EXPECT_GE(std::chrono::steady_clock::now() - led_at, std::chrono::seconds(1));
    ASSERT_TRUE(s->close());
}

TEST(LeaderCommit, WithoutAScopeOrWhenDisabledTheCommitterCommits) {
    for (const bool enabled : {true, false}) {
        auto fs = std::make_shared<fault_file_system>();
        store_options o;  // the default: no leader commits
        EXPECT_FALSE(o.leader_commits);
        o.leader_commits = enabled;
        auto s = open_store(fs, "/db", o);
        ASSERT_NE(s, nullptr);
        ASSERT_TRUE(s->create_stream(stream_id(1)));
        for (int i = 0; i < 50; ++i) {
            seen got;
            pending_counter pending;
            pending.add();
            if (enabled) {
                // No scope: nobody would run a leader, so the append wakes the committer.
                s->append(stream_id(1), payload(1, i, 50), [&](result<offset> r) {
                    got.add(r);
                    pending.done();
                });
            } else {
                const flush_batch batch;
                s->append(stream_id(1), payload(1, i, 50), [&](result<offset> r) {
                    got.add(r);
                    pending.done();
                });
            }
            pending.wait();
            ASSERT_EQ(got.offsets, std::vector<std::uint64_t>{static_cast<std::uint64_t>(i)});
            EXPECT_NE(got.threads[0], std::this_thread::get_id());
        }
        EXPECT_EQ(s->stats().leader_commits, 0U);
        ASSERT_TRUE(s->close());
    }
}

TEST(LeaderCommit, AfterALargeGroupTheCommitterKeepsCommitting) {
    // A closed-loop writer at max rate makes large groups: a read batch's appends then go to the
    // committer (with its linger), not to an io thread.
    auto fs = std::make_shared<counting_file_system>(std::make_shared<fault_file_system>());
    auto s = open_store(fs, "/db", leader_options());
    ASSERT_NE(s, nullptr);
    ASSERT_TRUE(s->create_stream(stream_id(1)));
    pending_counter pending;
    pending.add(101);
    fs->close_gate();
    s->append(stream_id(1), payload(1, 0, 100), [&](result<offset>) { pending.done(); });
    fs->wait_for_gate_waiter();  // the committer is in the first group's sync
    for (int i = 1; i <= 100; ++i) {
        s->append(stream_id(1), payload(1, i, 100), [&](result<offset>) { pending.done(); });
    }
    fs->open_gate();
    pending.wait();  // the second group held 100 appends
    const auto leaders = s->stats().leader_commits;
    seen got;
    pending.add();
    {
        const flush_batch batch;
        s->append(stream_id(1), payload(1, 101, 100), [&](result<offset> r) {
            got.add(r);
            pending.done();
        });
    }
    pending.wait();
    ASSERT_EQ(got.offsets, std::vector<std::uint64_t>{101});
    EXPECT_NE(got.threads[0], std::this_thread::get_id());
    EXPECT_EQ(s->stats().leader_commits, leaders);
    ASSERT_TRUE(s->close());
}

TEST(LeaderCommit, AFailedDurableWriteConfirmsNothing) {
    for (const bool fail_write : {false, true}) {
        auto fs = std::make_shared<fault_file_system>();
        auto s = open_store(fs, "/db", leader_options());
        ASSERT_NE(s, nullptr);
        ASSERT_TRUE(s->create_stream(stream_id(1)));
        std::uint64_t seq = 0;
        ASSERT_TRUE(settle_into_leader_mode(*s, stream_id(1), seq));
        const auto leaders = s->stats().leader_commits;
        if (fail_write) {
            fs->fail_writes(".journal", std::errc::io_error, 10);  // a short write
        } else {
            fs->fail_syncs(".journal");
        }
        seen got;
        {
            const flush_batch batch;
            for (int i = 0; i < 4; ++i) {
                s->append(stream_id(1), payload(1, seq + i, 100),
                          [&](result<offset> r) { got.add(r); });
            }
        }
        ASSERT_EQ(got.size(), 4U);  // the leader ran them, as failures
        EXPECT_EQ(got.failures, 4);
        EXPECT_TRUE(got.offsets.empty());
        EXPECT_EQ(s->stats().leader_commits, leaders + 1);
        EXPECT_TRUE(s->failed());
        (void)s->close();
        s.reset();
        fs->power_loss();
        auto r = open_store(fs, "/db", leader_options());
        ASSERT_NE(r, nullptr);
        // Every confirmed append survives; the failed ones may or may not.
        EXPECT_GE(read_all(*r, stream_id(1)).size(), seq);
        ASSERT_TRUE(r->close());
    }
}

TEST(LeaderCommit, TornLeaderWriteKeepsEveryConfirmedAppend) {
    for (std::uint64_t k : {1ULL, 17ULL, 100ULL, 333ULL, 700ULL}) {
        auto fs = std::make_shared<fault_file_system>();
        auto s = open_store(fs, "/db", leader_options());
        ASSERT_NE(s, nullptr);
        ASSERT_TRUE(s->create_stream(stream_id(1)));
        std::uint64_t seq = 0;
        ASSERT_TRUE(settle_into_leader_mode(*s, stream_id(1), seq));
        fs->crash_after_bytes(k);
        seen got;
        {
            const flush_batch batch;
            for (int i = 0; i < 5; ++i) {
                s->append(stream_id(1), payload(1, seq + i, 100),
                          [&](result<offset> r) { got.add(r); });
            }
        }
        ASSERT_EQ(got.size(), 5U);
        const std::uint64_t confirmed = seq + got.offsets.size();
        (void)s->close();
        s.reset();
        fs->power_loss_torn(k);
        auto r = open_store(fs, "/db", leader_options());
        ASSERT_NE(r, nullptr) << "k=" << k;
        const auto all = read_all(*r, stream_id(1));
        ASSERT_GE(all.size(), confirmed) << "k=" << k;
        for (std::size_t i = 0; i < all.size(); ++i) {
            ASSERT_EQ(all[i], payload(1, i, 100)) << "k=" << k << " i=" << i;
        }
        ASSERT_TRUE(r->close());
    }
}

TEST(LeaderCommit, ACompletionThatAppendsAgainDoesNotWaitForItself) {
    // A group bound smaller than what the completion appends: without the leader's exemption
    // from backpressure it would wait for a commit only it could run.
    auto fs = std::make_shared<fault_file_system>();
    store_options o;
    o.max_group_bytes = 256;
    auto s = open_store(fs, "/db", leader_options(o));
    ASSERT_NE(s, nullptr);
    ASSERT_TRUE(s->create_stream(stream_id(1)));
    ASSERT_TRUE(s->create_stream(stream_id(2)));
    std::uint64_t seq = 0;
    ASSERT_TRUE(settle_into_leader_mode(*s, stream_id(1), seq));
    pending_counter pending;
    seen second;
    pending.add(1 + 5);
    std::thread::id first_thread;
    {
        const flush_batch batch;
        s->append(stream_id(1), payload(1, seq, 100), [&](result<offset> r) {
            EXPECT_TRUE(r);
            first_thread = std::this_thread::get_id();
            for (int i = 0; i < 5; ++i) {
                s->append(stream_id(2), payload(2, i, 100), [&](result<offset> r2) {
                    second.add(r2);
                    pending.done();
                });
            }
            pending.done();
        });
    }
    pending.wait();
    EXPECT_EQ(first_thread, std::this_thread::get_id());
    EXPECT_EQ(second.offsets, (std::vector<std::uint64_t>{0, 1, 2, 3, 4}));
    EXPECT_EQ(read_all(*s, stream_id(2)).size(), 5U);
    ASSERT_TRUE(s->close());
}

TEST(LeaderCommit, CloseDuringALeaderCommitWaitsForItAndDrainsTheRest) {
    auto fs = std::make_shared<counting_file_system>(std::make_shared<fault_file_system>());
    auto s = open_store(fs, "/db", leader_options());
    ASSERT_NE(s, nullptr);
    ASSERT_TRUE(s->create_stream(stream_id(1)));
    std::uint64_t seq = 0;
    ASSERT_TRUE(settle_into_leader_mode(*s, stream_id(1), seq));
    const std::uint64_t base = seq;
    seen led;
    seen queued;
    fs->close_gate();
    std::thread::id leader_id;
    std::thread leader([&] {
        leader_id = std::this_thread::get_id();
        const flush_batch batch;
        for (int i = 0; i < 3; ++i) {
            s->append(stream_id(1), payload(1, base + i, 100),
                      [&](result<offset> r) { led.add(r); });
        }
    });
    fs->wait_for_gate_waiter();  // the leader is inside its journal sync
    // Appends made meanwhile queue for the next group (the committer's, at the release).
    for (int i = 3; i < 6; ++i) {
        s->append(stream_id(1), payload(1, base + i, 100),
                  [&](result<offset> r) { queued.add(r); });
    }
    std::atomic<bool> closed{false};
    std::thread closer([&] {
        EXPECT_TRUE(s->close());
        closed = true;
    });
    fs->open_gate();
    leader.join();
    closer.join();
    EXPECT_TRUE(closed.load());
    ASSERT_EQ(led.size(), 3U);
    EXPECT_EQ(led.offsets, (std::vector<std::uint64_t>{base, base + 1, base + 2}));
    for (const auto& t : led.threads) {
        EXPECT_EQ(t, leader_id);  // committed by the leader, not drained by close
    }
    ASSERT_EQ(queued.size(), 3U);  // drained by the committer before close returned
    EXPECT_EQ(queued.offsets, (std::vector<std::uint64_t>{base + 3, base + 4, base + 5}));
    // A scope that ends after close() finds no store.
    seen late;
    {
        const flush_batch batch;
        s->append(stream_id(1), payload(1, 99, 100), [&](result<offset> r) { late.add(r); });
    }
    EXPECT_EQ(late.failures, 1);
    s.reset();
    auto r = open_store(fs, "/db", leader_options());
    ASSERT_NE(r, nullptr);
    EXPECT_EQ(read_all(*r, stream_id(1)).size(), base + 6);
    ASSERT_TRUE(r->close());
}

TEST(LeaderCommit, AThreadThatWaitsInsideItsScopeIsTakenOverByTheCommitter) {
    // append_sync inside a scope waits for a commit its own scope's end would run: the committer
    // takes the late group over (kLeaderLate) instead of leaving it to a thread that waits.
    auto fs = std::make_shared<fault_file_system>();
    auto s = open_store(fs, "/db", leader_options());
    ASSERT_NE(s, nullptr);
    ASSERT_TRUE(s->create_stream(stream_id(1)));
    std::uint64_t seq = 0;
    ASSERT_TRUE(settle_into_leader_mode(*s, stream_id(1), seq));
    for (int i = 0; i < 3; ++i) {
        const flush_batch batch;
        auto r = s->append_sync(stream_id(1), payload(1, seq, 100));
        ASSERT_TRUE(r);
        EXPECT_EQ(r->value(), seq);
        ++seq;
    }
    EXPECT_EQ(read_all(*s, stream_id(1)).size(), seq);
    ASSERT_TRUE(s->close());
}

TEST(LeaderCommit, ConcurrentScopedAndPlainAppendsCompleteInOffsetOrderPerStream) {
    // Several threads, some appending in scopes of random sizes (leaders), some not; streams
    // shared between them. Per stream, completions fire in offset order with no gaps, and
    // everything is read back after a reopen.
    constexpr int kThreads = 4;
    constexpr int kPerThread = 1500;
    constexpr int kStreams = 3;
    auto fs = std::make_shared<fault_file_system>();
    store_options o = leader_options(tiny_options());  // rolls and checkpoints (also from leaders)
    auto s = open_store(fs, "/db", leader_options(o));
    ASSERT_NE(s, nullptr);
    for (int i = 0; i < kStreams; ++i) {
        ASSERT_TRUE(s->create_stream(stream_id(i)));
    }
    std::array<seen, kStreams> got;
    pending_counter pending;
    pending.add(kThreads * kPerThread);
    std::vector<std::thread> ts;
    for (int t = 0; t < kThreads; ++t) {
        ts.emplace_back([&, t] {
            std::mt19937 rng(static_cast<unsigned>(t + 1));
            int left = kPerThread;
            while (left > 0) {
                const int n = std::min<int>(left, 1 + static_cast<int>(rng() % 20));
                std::optional<flush_batch> batch;
                if (t % 2 == 0 || rng() % 2 == 0) {
                    batch.emplace();
                }
                for (int i = 0; i < n; ++i) {
                    const int st = static_cast<int>(rng() % kStreams);
                    s->append(stream_id(st), payload(st, 0, 20 + (rng() % 200)),
                              [&, st](result<offset> r) {
                                  got[st].add(r);
                                  pending.done();
                              });
                }
                batch.reset();
                left -= n;
            }
        });
    }
    for (auto& th : ts) {
        th.join();
    }
    pending.wait();
    std::size_t total = 0;
    for (int st = 0; st < kStreams; ++st) {
        EXPECT_EQ(got[st].failures, 0);
        for (std::size_t i = 0; i < got[st].offsets.size(); ++i) {
            ASSERT_EQ(got[st].offsets[i], i) << "stream " << st;
        }
        total += got[st].offsets.size();
    }
    EXPECT_EQ(total, static_cast<std::size_t>(kThreads * kPerThread));
    // How many groups leaders took depends on the timing (none when every group is large, as
    // in slow sanitizer builds); the other tests check leader commits deterministically.
    RecordProperty("leader_commits", static_cast<int>(s->stats().leader_commits));
    ASSERT_TRUE(s->close());
    s.reset();
    fs->power_loss();
    auto r = open_store(fs, "/db", leader_options(o));
    ASSERT_NE(r, nullptr);
    for (int st = 0; st < kStreams; ++st) {
        EXPECT_EQ(read_all(*r, stream_id(st)).size(), got[st].offsets.size());
    }
    ASSERT_TRUE(r->close());
}

}  // namespace
}  // namespace nereus::storage
