// Group commit: how many fdatasyncs and open files the commit path costs (counted, not timed).

#include "nereus/base/crc32c.h"
#include "nereus/base/fault_file_system.h"
#include "nereus/storage/format.h"
#include "nereus/storage/journal_scan.h"
#include "nereus/storage/stream_store.h"

#include <gtest/gtest.h>

#include "support/counting_file_system.h"
#include "support/payloads.h"
#include "support/store_helpers.h"
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <numeric>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace nereus::storage {
namespace {

using namespace testing;

// Runs every journal file of /db through the recovery scanner: each block must be intact and
// have the CRC of its bytes; `records` gets the number of records in them.
void count_journal_records(file_system& fs, std::uint64_t& records) {
    records = 0;
    auto names = fs.list_dir("/db/journal");
    ASSERT_TRUE(names);
    for (const auto& name : *names) {
        if (!format::parse_journal_file_name(name)) {
            continue;
        }
        auto f = fs.open("/db/journal/" + name, open_mode::read_only);
        ASSERT_TRUE(f);
        auto scan = scan_journal_file(**f, 0, 0, [&](std::uint64_t, bytes_view block) {
            EXPECT_EQ(format::check_block(block), format::defect::none);
            format::for_each_block_record(block, [&](std::uint64_t, bytes_view) { ++records; });
            return result<void>{};
        });
        ASSERT_TRUE(scan);
        EXPECT_FALSE(scan->defect) << format::to_string(scan->defect->what);
    }
}

TEST(GroupCommit, AppendsQueuedDuringACommitShareOneSync) {
    auto fs = std::make_shared<counting_file_system>(std::make_shared<fault_file_system>());
    auto s = open_store(fs, "/db");
    ASSERT_NE(s, nullptr);
    ASSERT_TRUE(s->create_stream(stream_id(1)));
    const auto before = fs->journal_syncs.load();

    fs->close_gate();
    pending_counter pending;
    std::atomic<int> ok{0};
    pending.add(1001);
    auto done = [&](result<offset> r) {
        ok += r ? 1 : 0;
        pending.done();
    };
    s->append(stream_id(1), payload(1, 0, 100), done);
    fs->wait_for_gate_waiter();  // the first group is inside its fdatasync
    for (int i = 1; i <= 1000; ++i) {
        s->append(stream_id(1), payload(1, i, 100), done);
    }
    fs->open_gate();
    pending.wait();
    EXPECT_EQ(ok.load(), 1001);
    EXPECT_EQ(fs->journal_syncs.load() - before, 2U);  // one for the first, one for the 1,000
    EXPECT_EQ(fs->segment_syncs.load(), 0U);           // segments are synced by checkpoints only
    EXPECT_EQ(read_all(*s, stream_id(1)).size(), 1001U);
}

// Durable-write pacing (store_options::min_sync_interval): the journal write after a write that
// started at T starts no sooner than T + interval, and the appends made meanwhile share it.
// Only lower bounds on time are checked (the pacing guarantees them); with the interval at 2 s,
// twenty appends made right after a write all fall inside its window.
TEST(GroupCommit, MinSyncIntervalSpacesJournalWritesAndGroupsTheAppendsMadeMeanwhile) {
    auto fs = std::make_shared<counting_file_system>(std::make_shared<fault_file_system>());
    store_options o;
    EXPECT_EQ(o.min_sync_interval.count(), 0);  // off by default
    o.min_sync_interval = std::chrono::seconds(2);
    auto s = open_store(fs, "/db", o);
    ASSERT_NE(s, nullptr);
    ASSERT_TRUE(s->create_stream(stream_id(1)));
    const auto before = fs->journal_syncs.load();
    const auto first_start = std::chrono::steady_clock::now();
    ASSERT_TRUE(s->append_sync(stream_id(1), payload(1, 0, 100)));  // written at once
    EXPECT_EQ(fs->journal_syncs.load() - before, 1U);
    EXPECT_EQ(s->stats().paced_commits, 0U);

    pending_counter pending;
    std::atomic<int> ok{0};
    std::atomic<std::int64_t> last_done_ns{0};
    pending.add(20);
    for (int i = 1; i <= 20; ++i) {
        s->append(stream_id(1), payload(1, i, 100), [&](result<offset> r) {
            ok += r ? 1 : 0;
            last_done_ns = (std::chrono::steady_clock::now() - first_start).count();
            pending.done();
        });
    }
    pending.wait();
    EXPECT_EQ(ok.load(), 20);
    EXPECT_GE(std::chrono::nanoseconds(last_done_ns.load()), std::chrono::seconds(2));
    EXPECT_EQ(fs->journal_syncs.load() - before, 2U);  // the twenty shared one write
    EXPECT_EQ(s->stats().paced_commits, 1U);
    EXPECT_EQ(read_all(*s, stream_id(1)).size(), 21U);
    ASSERT_TRUE(s->close());  // a paced group is not held up by a close
    auto again = open_store(fs, "/db");
    ASSERT_NE(again, nullptr);
    EXPECT_EQ(read_all(*again, stream_id(1)).size(), 21U);
}

// The commit-latency histograms (store_stats, /metrics): one count per journal block in each,
// and a group held behind a slow sync shows it in its wait; the held sync, in its write. Only
// lower bounds are checked (a sleep guarantees them), never an upper one.
TEST(GroupCommit, LatencyHistogramsCountEveryBlockAndShowAHeldSync) {
    auto fs = std::make_shared<counting_file_system>(std::make_shared<fault_file_system>());
    auto s = open_store(fs, "/db");
    ASSERT_NE(s, nullptr);
    ASSERT_TRUE(s->create_stream(stream_id(1)));
    const store_stats before = s->stats();

    fs->close_gate();
    pending_counter pending;
    pending.add(11);
    auto done = [&](result<offset> r) {
        EXPECT_TRUE(r);
        pending.done();
    };
    s->append(stream_id(1), payload(1, 0, 100), done);
    fs->wait_for_gate_waiter();  // the first group is inside its fdatasync
    for (int i = 1; i <= 10; ++i) {
        s->append(stream_id(1), payload(1, i, 100), done);  // the second group, waiting
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    fs->open_gate();
    pending.wait();

    // commit_apply is recorded after the completions: poll for it (bounded).
    store_stats after = s->stats();
    for (int i = 0; i < 500 && after.commit_apply.since(before.commit_apply).count < 2; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
        after = s->stats();
    }
    const auto blocks = after.commits - before.commits;
    EXPECT_EQ(blocks, 2U);
    const auto wait = after.commit_wait.since(before.commit_wait);
    const auto write = after.journal_write.since(before.journal_write);
    const auto apply = after.commit_apply.since(before.commit_apply);
    EXPECT_EQ(wait.count, blocks);
    EXPECT_EQ(write.count, blocks);
    EXPECT_EQ(apply.count, blocks);
    // The held sync took ≥ 30 ms: its bucket is (20 ms, 50 ms] or above; so was the wait of the
    // group queued behind it.
    EXPECT_GE(write.quantile_bound_us(1.0), 50000U);
    EXPECT_GE(wait.quantile_bound_us(1.0), 50000U);
    EXPECT_GE(write.sum_ns, 30'000'000U);
}

// Pipelined apply (store_options::pipelined_apply, journaled_store.h "Apply stage"). Three
// groups: 0 (one 100 B append, held at the gate; small, so applied inline), 1 (20 x 16 KiB,
// over the store's pipelining threshold; its first completion blocks whoever applies it) and
// 2 (10 appends, queued while group 1 syncs). What the store has done while group 1's
// completion is blocked:
struct blocked_apply {
    std::uint64_t journal_syncs = 0;       // since the first append
    std::vector<std::uint64_t> completed;  // offsets, in completion order
    std::uint64_t end = 0;                 // the stream's published end
    std::vector<std::uint64_t> all_order;  // after the release
    std::uint64_t pipelined_applies = 0;
};

blocked_apply run_with_a_blocked_apply(const store_options& o) {
    blocked_apply out;
    auto fs = std::make_shared<counting_file_system>(std::make_shared<fault_file_system>());
    auto s = open_store(fs, "/db", o);
    EXPECT_NE(s, nullptr);
    if (s == nullptr) {
        return out;
    }
    EXPECT_TRUE(s->create_stream(stream_id(1)));
    const auto syncs_before = fs->journal_syncs.load();
    std::mutex mu;
    std::condition_variable cv;
    bool release = false;
    bool blocked = false;
    std::vector<std::uint64_t> order;
    pending_counter pending;
    pending.add(31);
    auto record = [&](result<offset> r) {
        EXPECT_TRUE(r);
        const std::lock_guard l(mu);
        order.push_back(r ? r->value() : ~0ULL);
    };
    fs->close_gate();
    s->append(stream_id(1), payload(1, 0, 100), [&](result<offset> r) {
        record(r);
        fs->close_gate();  // runs before the committer takes group 1: its sync waits too
        pending.done();
    });
    fs->wait_for_gate_waiter();  // group 0 is inside its fdatasync
    for (int i = 1; i <= 20; ++i) {
        if (i == 1) {
            s->append(stream_id(1), payload(1, i, 16 << 10), [&](result<offset> r) {
                record(r);
                std::unique_lock l(mu);
                blocked = true;
                cv.notify_all();
                cv.wait_for(l, std::chrono::seconds(60), [&] { return release; });  // bounded
                l.unlock();
                pending.done();
            });
            continue;
        }
        s->append(stream_id(1), payload(1, i, 16 << 10), [&](result<offset> r) {
            record(r);
            pending.done();
        });
    }
    fs->open_gate();                  // group 0 completes (and closes the gate again)
    for (int i = 0; i < 6000; ++i) {  // bounded: until group 0's completion ran
        {
            const std::lock_guard l(mu);
            if (!order.empty()) {
                break;
            }
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    fs->wait_for_gate_waiter();  // group 1 is inside its fdatasync
    for (int i = 21; i <= 30; ++i) {
        s->append(stream_id(1), payload(1, i, 100), [&](result<offset> r) {
            record(r);
            pending.done();
        });  // group 2, queued behind group 1
    }
    fs->open_gate();
    {
        std::unique_lock l(mu);
        EXPECT_TRUE(cv.wait_for(l, std::chrono::seconds(60), [&] { return blocked; }));
    }
    // Give group 2's write its chance (bounded; it happens at once when pipelined).
    for (int i = 0; i < 6000 && fs->journal_syncs.load() - syncs_before < 3; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(o.pipelined_apply ? 10 : 1));
        if (!o.pipelined_apply && i >= 50) {
            break;  // 50 ms: it stays held back
        }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // room for a wrong completion
    out.journal_syncs = fs->journal_syncs.load() - syncs_before;
    {
        const std::lock_guard l(mu);
        out.completed = order;
    }
    out.end = s->info(stream_id(1))->end.value();
    EXPECT_EQ(read_all(*s, stream_id(1)).size(), out.end);  // reads see what is published
    {
        const std::lock_guard l(mu);
        release = true;
    }
    cv.notify_all();
    pending.wait();
    {
        const std::lock_guard l(mu);
        out.all_order = order;
    }
    out.pipelined_applies = s->stats().pipelined_applies;
    EXPECT_EQ(read_all(*s, stream_id(1)).size(), 31U);
    EXPECT_TRUE(s->close());
    auto again = open_store(fs, "/db");  // and everything is there after a reopen
    EXPECT_NE(again, nullptr);
    if (again != nullptr) {
        EXPECT_EQ(read_all(*again, stream_id(1)).size(), 31U);
    }
    return out;
}

// Group 1 is applied on the applier thread while the committer writes group 2: group 2 reaches
// its durable write although group 1's completion is blocked (with the apply inline, the
// committer would be the blocked thread and it never would); yet none of group 2's completions
// runs, and its records are not published, before group 1's are (receipts stay in order).
TEST(GroupCommit, PipelinedApplyOverlapsTheNextWriteAndKeepsCompletionOrder) {
    const blocked_apply r = run_with_a_blocked_apply(store_options{});
    EXPECT_EQ(r.journal_syncs, 3U);
    EXPECT_EQ(r.completed, (std::vector<std::uint64_t>{0, 1}));
    EXPECT_EQ(r.end, 21U);  // groups 0 and 1
    std::vector<std::uint64_t> want(31);
    std::iota(want.begin(), want.end(), 0);
    EXPECT_EQ(r.all_order, want);
    EXPECT_GE(r.pipelined_applies, 1U);
}

// With pipelined_apply off, the committer applies every group itself: the blocked completion
// holds group 2's write back (the old shape, kept as an operator's choice).
TEST(GroupCommit, WithoutPipelinedApplyTheCommitterAppliesBeforeItsNextWrite) {
    store_options o;
    o.pipelined_apply = false;
    const blocked_apply r = run_with_a_blocked_apply(o);
    EXPECT_EQ(r.journal_syncs, 2U);
    EXPECT_EQ(r.completed, (std::vector<std::uint64_t>{0, 1}));
    EXPECT_EQ(r.end, 21U);
    std::vector<std::uint64_t> want(31);
    std::iota(want.begin(), want.end(), 0);
    EXPECT_EQ(r.all_order, want);
    EXPECT_EQ(r.pipelined_applies, 0U);
}

// Segment writeback in slices (store_options::segment_writeback_bytes): each time a segment
// holds that many bytes not yet handed to the disk, the apply queues their writeback, which
// the store's writeback thread starts (never the committer: it may block on the device). The
// ranges tile the segment from 0 without gaps or overlaps, each at least a slice long; a roll
// starts over at 0 in the new segment; 0 turns it off. The records read back unchanged.
TEST(GroupCommit, SegmentWritebackStartsInSlicesThatTileEachSegment) {
    for (const std::uint64_t slice : {std::uint64_t{4096}, std::uint64_t{0}}) {
        SCOPED_TRACE(slice);
        auto fs = std::make_shared<counting_file_system>(std::make_shared<fault_file_system>());
        store_options o;
        o.segment_writeback_bytes = slice;
        o.segment_max_bytes = 32 << 10;  // rolls within the run
        auto s = open_store(fs, "/db", o);
        ASSERT_NE(s, nullptr);
        ASSERT_TRUE(s->create_stream(stream_id(1)));
        for (int i = 0; i < 100; ++i) {
            ASSERT_TRUE(s->append_sync(stream_id(1), payload(1, i, 1000)));
        }
        EXPECT_EQ(read_all(*s, stream_id(1)).size(), 100U);
        ASSERT_TRUE(s->close());  // every queued slice has been started
        const auto wb = fs->segment_writebacks();
        if (slice == 0) {
            EXPECT_TRUE(wb.empty());
        } else {
            EXPECT_EQ(fs->segment_writeback_threads(), std::set<std::string>{"nereus-wback"});
            // ~101 KB in 32 KiB segments: several slices per segment, and at least one roll.
            ASSERT_GE(wb.size(), 15U);  // 18: each segment's last partial slice stays
            std::uint64_t next = 0;
            int restarts = 0;
            for (const auto& [off, len] : wb) {
                if (off == 0 && next != 0) {
                    ++restarts;  // a new segment
                    next = 0;
                }
                EXPECT_EQ(off, next);
                EXPECT_GE(len, slice);
                EXPECT_LE(off + len, std::uint64_t{32 << 10} + 1100);
                next = off + len;
            }
            EXPECT_GE(restarts, 2);
        }
        auto again = open_store(fs, "/db", o);
        ASSERT_NE(again, nullptr);
        EXPECT_EQ(read_all(*again, stream_id(1)).size(), 100U);
    }
}

TEST(GroupCommit, OneCommitCoversThousandsOfStreamsWithBoundedFiles) {
    constexpr int kStreams = 2000;
    auto fs = std::make_shared<counting_file_system>(std::make_shared<fault_file_system>());
    store_options o;
    o.fd_cache_size = 32;
    auto s = open_store(fs, "/db", o);
    ASSERT_NE(s, nullptr);
    for (int i = 0; i < kStreams; ++i) {
        ASSERT_TRUE(s->create_stream(stream_id(i)));
    }
    EXPECT_LE(fs->open_files.load(), 32 + 2);
    fs->reset_peak();
    const auto syncs_before = fs->journal_syncs.load();
    const auto seg_syncs_before = fs->segment_syncs.load();

    fs->close_gate();
    pending_counter pending;
    std::atomic<int> ok{0};
    pending.add(kStreams + 1);
    auto done = [&](result<offset> r) {
        ok += r ? 1 : 0;
        pending.done();
    };
    s->append(stream_id(0), payload(0, 0, 10), done);
    fs->wait_for_gate_waiter();
    for (int i = 0; i < kStreams; ++i) {
        s->append(stream_id(i), payload(i, 1, 64), done);
    }
    fs->open_gate();
    pending.wait();
    EXPECT_EQ(ok.load(), kStreams + 1);
    EXPECT_EQ(fs->journal_syncs.load() - syncs_before, 2U);
    EXPECT_EQ(fs->segment_syncs.load() - seg_syncs_before, 0U);
    // journal + cache + a file being reopened at the moment of eviction.
    EXPECT_LE(fs->peak_open_files.load(), 32 + 3);

    for (int i = 0; i < kStreams; i += 97) {
        auto all = read_all(*s, stream_id(i));
        ASSERT_EQ(all.size(), i == 0 ? 2U : 1U);
        EXPECT_EQ(all.back(), payload(i, 1, 64));
    }
    EXPECT_LE(fs->peak_open_files.load(), 32 + 3);
    // The clean close syncs every dirty segment once (reopening evicted ones), no more.
    ASSERT_TRUE(s->close());
    EXPECT_LE(fs->segment_syncs.load() - seg_syncs_before, static_cast<std::uint64_t>(kStreams));
    EXPECT_LE(fs->peak_open_files.load(), 32 + 3);
}

TEST(GroupCommit, BackpressureBoundsQueuedBytes) {
    auto fs = std::make_shared<counting_file_system>(std::make_shared<fault_file_system>());
    store_options o;
    o.max_group_bytes = 4096;
    auto s = open_store(fs, "/db", o);
    ASSERT_NE(s, nullptr);
    ASSERT_TRUE(s->create_stream(stream_id(1)));
    pending_counter pending;
    pending.add(200);
    for (int i = 0; i < 200; ++i) {
        s->append(stream_id(1), payload(1, i, 500), [&](result<offset> r) {
            EXPECT_TRUE(r);
            pending.done();
        });
    }
    pending.wait();
    // Groups hold at most ~4 KiB: 200 x 516 B records need at least 200*516/4096 commits.
    EXPECT_GE(s->stats().commits, 200U * 516 / (4096 + 524));
    EXPECT_EQ(read_all(*s, stream_id(1)).size(), 200U);
}

TEST(GroupCommit, CompletionsMayAppendEvenWhenTheQueueIsFull) {
    auto fs = std::make_shared<fault_file_system>();
    store_options o;
    o.max_group_bytes = 1024;
    auto s = open_store(fs, "/db", o);
    ASSERT_NE(s, nullptr);
    ASSERT_TRUE(s->create_stream(stream_id(1)));
    pending_counter pending;
    pending.add(400);
    struct chain {
        stream_store* s;
        pending_counter* pending;
        int left;
        void operator()(result<offset> r) {
            EXPECT_TRUE(r);
            pending->done();
            if (--left > 0) {
                // Appends from the committer thread, with the group buffer possibly full.
                for (int i = 0; i < 3 && left > 0; ++i) {
                    s->append(stream_id(1), payload(1, left, 600), chain{s, pending, 0});
                    --left;
                }
            }
        }
    };
    for (int i = 0; i < 100; ++i) {
        s->append(stream_id(1), payload(1, i, 600), chain{s.get(), &pending, 4});
    }
    pending.wait();
    EXPECT_EQ(s->info(stream_id(1))->end.value(), 400U);
}

// append() folds each record into its block's CRC (from the payload CRC; a shifter once a
// length repeats, crc32c::combine for large ones, the bytes otherwise), so the committer does not
// read the block again. Every block it writes must still carry the CRC of its bytes: mixed sizes,
// in groups of many and of one, checked block by block with the recovery scanner.
TEST(GroupCommit, BlockCrcFoldedByAppendersMatchesTheBlockBytes) {
    auto fs = std::make_shared<counting_file_system>(std::make_shared<fault_file_system>());
    auto s = open_store(fs, "/db");
    ASSERT_NE(s, nullptr);
    ASSERT_TRUE(s->create_stream(stream_id(1)));
    ASSERT_TRUE(s->create_stream(stream_id(2)));
    std::vector<std::size_t> sizes = {0, 1, 100, 255, 256, 257, 1000, 4095, 4096, 70000};
    for (int i = 0; i < 300; ++i) {
        sizes.push_back(1048);  // repeats: gets a shifter after its streak
    }
    for (int i = 0; i < 200; ++i) {
        sizes.push_back(static_cast<std::size_t>((i * 7919) % 9000));  // varying sizes
    }
    std::vector<std::vector<std::byte>> sent;
    std::uint64_t k = 0;
    for (int round = 0; round < 3; ++round) {
        // Round 0: one group (the gate holds the first commit); 1, 2: one append per commit.
        if (round == 0) {
            fs->close_gate();
        }
        pending_counter pending;
        std::atomic<int> ok{0};
        auto done = [&](result<offset> r) {
            ok += r ? 1 : 0;
            pending.done();
        };
        int n = 0;
        for (const std::size_t size : sizes) {
            if (round > 0 && n >= 40) {
                break;
            }
            const stream_id id(1 + (k % 2));
            sent.push_back(payload(id.value(), k, size));
            ++k;
            pending.add(1);
            s->append(id, sent.back(), done);
            if (round == 0 && n == 0) {
                fs->wait_for_gate_waiter();
            }
            if (round > 0) {
                pending.wait();
            }
            ++n;
        }
        if (round == 0) {
            fs->open_gate();
        }
        pending.wait();
        EXPECT_EQ(ok.load(), n);
    }
    std::uint64_t records = 0;
    ASSERT_NO_FATAL_FAILURE(count_journal_records(*fs, records));
    EXPECT_EQ(records, k + 0);  // stream creation writes no journal records
    auto a = read_all(*s, stream_id(1));
    auto b = read_all(*s, stream_id(2));
    EXPECT_EQ(a.size() + b.size(), k);
}

// Short records of one repeated length (a producer of fixed-size 100 B messages) are folded
// from shifters too (from 64 B: the verified tail into the payload CRC, the payload into the
// block's CRC): runs of lengths around that bound, with verified tails, in one group; every
// block checked by the recovery scanner, every record read back (its CRC checked), and again
// after a reopen. Also two lengths that share a shifter slot (120 and 133), alternating.
TEST(GroupCommit, ShortRepeatedLengthsFoldLikeTheirBytes) {
    auto fs = std::make_shared<counting_file_system>(std::make_shared<fault_file_system>());
    std::vector<std::vector<std::byte>> sent;
    {
        auto s = open_store(fs, "/db");
        ASSERT_NE(s, nullptr);
        ASSERT_TRUE(s->create_stream(stream_id(1)));
        std::vector<std::pair<std::size_t, std::size_t>> runs;  // size, tail length
        for (const auto& run : std::vector<std::pair<std::size_t, std::size_t>>{
                 {150, 134}, {100, 80}, {64, 64}, {65, 63}, {63, 63}, {200, 64}, {150, 134}}) {
            for (int i = 0; i < 90; ++i) {  // longer than the shifters' streak (64)
                runs.push_back(run);
            }
        }
        for (int i = 0; i < 200; ++i) {  // two lengths of one shifter slot, alternating
            runs.emplace_back(i % 2 == 0 ? 120 : 133, i % 2 == 0 ? 120 : 133);
        }
        fs->close_gate();  // the first commit waits: the rest queue as one group
        pending_counter pending;
        std::atomic<int> ok{0};
        auto done = [&](result<offset> r) {
            ok += r ? 1 : 0;
            pending.done();
        };
        for (const auto& [size, tail_len] : runs) {
            sent.push_back(payload(1, sent.size(), size));
            const auto& p = sent.back();
            const stream_store::verified_tail tail{
                crc32c::value(p.data() + size - tail_len, tail_len),
                static_cast<std::uint32_t>(tail_len)};
            pending.add(1);
            s->append(stream_id(1), p, tail, done);
            if (sent.size() == 1) {
                fs->wait_for_gate_waiter();
            }
        }
        fs->open_gate();
        pending.wait();
        EXPECT_EQ(ok.load(), static_cast<int>(runs.size()));
        EXPECT_EQ(read_all(*s, stream_id(1)), sent);
        ASSERT_TRUE(s->close());
    }
    std::uint64_t records = 0;
    ASSERT_NO_FATAL_FAILURE(count_journal_records(*fs, records));
    EXPECT_EQ(records, sent.size());
    auto s = open_store(fs, "/db");
    ASSERT_NE(s, nullptr);
    EXPECT_EQ(read_all(*s, stream_id(1)), sent);
}

// append() with a verified tail CRC (a SEND's checksum) stores exactly the record a plain
// append stores: every entry reads back (reads check each record's CRC), also after a reopen
// (recovery checks every block and record), for tails of every kind: short ones (read again),
// long ones with and without a shifter, and combine() ones.
TEST(GroupCommit, VerifiedTailGivesTheSameRecords) {
    auto fs = std::make_shared<fault_file_system>();
    std::vector<std::vector<std::byte>> sent;
    {
        auto s = open_store(fs, "/db");
        ASSERT_NE(s, nullptr);
        ASSERT_TRUE(s->create_stream(stream_id(1)));
        std::vector<std::pair<std::size_t, std::size_t>> cases;  // size, tail length
        for (const std::size_t size : {0, 1, 100, 255, 256, 300, 1048, 5000, 70000}) {
            cases.emplace_back(size, size);
            cases.emplace_back(size, size / 2);
            cases.emplace_back(size, size > 16 ? size - 16 : 0);
        }
        for (int i = 0; i < 150; ++i) {
            cases.emplace_back(1048, 1024);  // repeats: a shifter for 1024 and for 1048
        }
        cases.emplace_back(100, 200);  // longer than the payload: ignored
        pending_counter pending;
        std::atomic<int> ok{0};
        auto done = [&](result<offset> r) {
            ok += r ? 1 : 0;
            pending.done();
        };
        for (const auto& [size, tail_len] : cases) {
            sent.push_back(payload(1, sent.size(), size));
            const auto& p = sent.back();
            stream_store::verified_tail tail;
            tail.len = static_cast<std::uint32_t>(tail_len);
            if (tail_len <= size) {
                tail.crc = crc32c::value(p.data() + size - tail_len, tail_len);
            }
            pending.add(1);
            s->append(stream_id(1), p, tail, done);
        }
        pending.wait();
        EXPECT_EQ(ok.load(), static_cast<int>(cases.size()));
        EXPECT_EQ(read_all(*s, stream_id(1)), sent);
        ASSERT_TRUE(s->close());
    }
    auto s = open_store(fs, "/db");
    ASSERT_NE(s, nullptr);
    EXPECT_EQ(read_all(*s, stream_id(1)), sent);
}

#ifdef NDEBUG
// A tail CRC that does not match its bytes (a caller's bug; debug builds assert) is stored as
// given, so the record's CRC does not match its bytes: the read fails, it does not return them.
TEST(GroupCommit, WrongVerifiedTailFailsClosed) {
    auto fs = std::make_shared<fault_file_system>();
    auto s = open_store(fs, "/db");
    ASSERT_NE(s, nullptr);
    ASSERT_TRUE(s->create_stream(stream_id(1)));
    // Long enough that the store combines (a short tail is read again, which would hide it).
    const auto p = payload(1, 0, 8192);
    pending_counter pending;
    pending.add(1);
    s->append(stream_id(1), p,
              stream_store::verified_tail{crc32c::value(p.data() + 192, 8000) ^ 1, 8000},
              [&](result<offset>) { pending.done(); });
    pending.wait();
    auto b = s->read(stream_id(1), offset(0), 10, 1 << 20);
    EXPECT_FALSE(b && !b->empty()) << "a record with a wrong CRC was returned";
}
#endif

}  // namespace
}  // namespace nereus::storage
