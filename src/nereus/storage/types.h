#pragma once

// Value types of the stream log API: strong ids, options, stream info, corruption details.
//
// Thread-safety: thread-compatible values.

#include <chrono>
#include <compare>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

namespace nereus::storage {

// A distinct integer type per meaning (style R3), so an offset cannot be passed for a stream id.
template <class T, class Tag>
class strong_id {
public:
    using value_type = T;
    constexpr strong_id() = default;
    constexpr explicit strong_id(T v) : v_(v) {}
    [[nodiscard]] constexpr T value() const { return v_; }
    constexpr auto operator<=>(const strong_id&) const = default;

private:
    T v_{};
};

// Identifies a stream; the ledger layer maps topics to ids.
using stream_id = strong_id<std::uint64_t, struct stream_id_tag>;
// A stream's dense entry number: 0, 1, 2, ...
using offset = strong_id<std::uint64_t, struct offset_tag>;

struct stream_info {
    offset first;  // first retained offset (everything below was trimmed)
    offset end;    // one past the last durable entry (= next offset an append gets)
};

struct store_options {
    // A stream's active segment rolls before a record would make it exceed this size.
    std::uint64_t segment_max_bytes = 64ULL << 20;
    // It also rolls once it holds this many entries and is at least segment_min_age old
    // (Pulsar's managedLedgerMaxEntriesPerLedger / managedLedgerMinLedgerRolloverTimeMinutes):
    // whole sealed segments are what a trim can delete, so small topics need this to free
    // acked data. 0: no roll by entry count. The age counts from the roll (or the open).
    std::uint64_t segment_max_entries = 0;
    std::chrono::milliseconds segment_min_age{0};
    // A journal file rolls (new file + directory sync) once it reaches this size.
    std::uint64_t journal_max_bytes = 64ULL << 20;
    // A background thread prepares the next journal file ahead of need (journal/spare: this
    // size, zero-filled with real writes, synced), so that commits overwrite allocated space
    // instead of extending the file: an extending fdatasync also writes the inode and extent
    // metadata (measured on ext4: p50 0.41 vs 0.20 ms per 4 KiB commit). Costs one spare file
    // of disk and journal_max_bytes of background writes per journal file. Commits never wait
    // for it: without a spare, a roll creates an empty file as before. false: no spare.
    bool prepare_journal_files = true;
    // Ask for the first spare when the store opens on an unprepared journal file (a fresh
    // directory, or a file a max-rate writer left without a spare), not once 1 MiB was written
    // into it: a store that takes a write load from its start (the broker's) then commits into
    // a prepared file as soon as that spare is complete (journal_max_bytes at
    // prepare_bytes_per_s: 2 s with the defaults), instead of into the unprepared file for its
    // first journal_max_bytes (100 B produce on a fresh broker: +10-25 %, doc/perf.md, session
    // 21). Costs a spare file of disk at every such open. Off by default (stores that may
    // never be written much: tests, tools).
    bool prepare_journal_at_open = false;
    // A prepared journal file is written with direct, synchronous writes
    // (file_system::open_direct: O_DIRECT | O_DSYNC), one page-aligned write per commit that
    // is durable when it returns, instead of a buffered write and an fdatasync (measured on
    // this machine's virtio disk: doc/perf.md, "Publish latency at 5,000 msg/s, round 2").
    // The file's layout is unchanged. Falls back to buffered writes where the file system has
    // no direct I/O. false: always write + fdatasync.
    bool direct_journal_writes = true;
    // A spare is asked for only while the journal is written slower than this (bytes per second
    // over the journal's commits of the last 100 ms, at most 32 and at least the last two,
    // across files). The zero-fill doubles the journal's disk writes: above this rate it would
    // compete with the writer for the disk, so a spare's fill waits while such a writer
    // commits, and goes on once it is slow or idle. Below it, a writer gains from prepared
    // files even at max rate (one O_DIRECT write per commit instead of a write, an fdatasync
    // and an inode update: 100 B produce +6-24 %, doc/perf.md, "Prepared files for fast
    // writers"); 100 B records at max rate are ~100 MB/s here, 1 KiB ones ~350 MB/s. The same
    // measure decides whether a spare still being filled is taken (only below this rate, and
    // not by the first commit after an idle gap: a fast writer would catch up with the fill at
    // once and wait for it). 0: no limit.
    std::uint64_t prepare_max_bytes_per_s = 256ULL << 20;
    // The clock of that rate measure (tests: a manual clock, so that "fast" and "slow" do not
    // depend on the machine's speed). nullptr: the committer's steady_clock readings.
    std::chrono::steady_clock::time_point (*rate_clock)() = nullptr;
    // The zero-fill is paced, so that it never queues much writeback in front of a commit's
    // fdatasync: it is written in chunks of this size, each fdatasync'ed before the next
    // (0: one chunk), ...
    std::uint64_t prepare_chunk_bytes = 1ULL << 20;
    // ... at most this many bytes per second (0: as fast as the disk takes them). A spare is
    // asked for at half of a prepared file (or 1 MiB into an unprepared one) while the journal
    // is written slower than prepare_max_bytes_per_s. A writer slower than half this pace
    // (16 MiB/s) rolls to a complete spare; a faster one reaches the roll while its spare is
    // still being filled, takes it as it is, and the fill then follows it unpaced (below). The
    // pace keeps a spare's fill from queueing writeback in front of a slow writer's syncs
    // (measured, in doc/perf.md: with the paced fill, commit syncs over 5 ms during a fill
    // 12 -> 6.5 per 4 s window, and a 5,000 msg/s run's p999 just after a max-rate run
    // 17.5 -> 10.6 ms).
    std::uint64_t prepare_bytes_per_s = 32ULL << 20;
    // A spare is usable while it is still being zero-filled: once its first chunk is synced,
    // an unprepared active file (after a max-rate phase, or an open without a spare) switches
    // to it, and the preparer goes on filling ahead of the committer's write position
    // (doc/format/segment.md, "Prepared journal files"). After that switch the fill stays at
    // most this many bytes ahead of the committer, unpaced (so it writes about as fast as the
    // commits, not prepare_bytes_per_s beside them, and keeps ahead of a writer faster than
    // prepare_bytes_per_s). 0: fill the rest at prepare_bytes_per_s.
    std::uint64_t prepare_lead_bytes = 4ULL << 20;
    // A checkpoint starts once this many journal bytes were written since the last one.
    std::uint64_t checkpoint_bytes = 32ULL << 20;
    // Bound on open segment files kept by the LRU descriptor cache.
    std::size_t fd_cache_size = 256;
    // Appenders wait (backpressure) while this many bytes are queued for the next commit.
    std::size_t max_group_bytes = 8ULL << 20;
    // A sparse index entry is kept per this many segment bytes.
    std::uint32_t index_interval_bytes = 32U << 10;
    // Group-commit linger: when the previous group held more appends than are queued now (a
    // closed-loop writer whose completions are still re-appending), the committer waits up to
    // min(this, half the last journal sync) for the queue to refill before the next sync.
    // Costs at most that much latency; 0 disables. A single sequential appender never waits.
    std::chrono::microseconds max_commit_delay{500};
    // Leader commits (journaled_store.h, "Leader commit"): at low rates, a thread that appends
    // inside a flush_batch scope (a broker io thread's read batch) and finds the committer idle
    // writes the group itself at the scope's end and runs its completions inline, instead of
    // waking the committer. Same durability. Off by default: at 5,000 msg/s it cut the broker's
    // CPU and context switches per message but raised publish p50/p99 on a loaded 2-core
    // machine (doc/perf.md, "round 3"); false: every group goes to the committer thread.
    bool leader_commits = false;
    // Durable-write pacing: the next journal write starts no sooner than this long after the
    // previous one started; appends made meanwhile join its group. A cap on the journal's
    // write+sync rate (1 / interval) that trades publish p50 (up to one interval more at low
    // rates) for fewer syncs. On the 2-core VMs measured, the host stalls a thread for 5-20 ms
    // when fdatasyncs and thread wake-ups run at several thousand per second, and that set the
    // publish p99 at 5,000 msg/s (doc/perf.md, "Pacing durable writes"). 0 (the default): a
    // group is written as soon as the committer is free. Same durability either way.
    std::chrono::microseconds min_sync_interval{0};
    // Pipelined apply (journaled_store.h, "Apply stage"): while the committer writes and syncs
    // group k+1, the applier thread copies group k into its segments and fires its
    // completions. Only when more appends wait (a high rate); a group with nothing queued
    // behind it is applied inline on the committer, as when this is false. Same durability
    // and order; false: the committer applies every group itself before its next write.
    bool pipelined_apply = true;
    // Groups of fewer bytes are applied inline even then. At 5,000 msg/s a group is one append,
    // and a hand-off would add a thread wake-up to its latency for an apply of microseconds; at
    // max rate on a 2-core machine, groups of 100 B records (~40 KiB) were no faster applied
    // beside the next write (the extra wake-ups), groups of 1 KiB records (~500 KiB) were
    // (doc/perf.md, "Pipelined apply and segment writeback"). 0: every group with appends
    // queued behind it (the storage tests' tiny_options, to exercise the applier).
    std::size_t pipelined_apply_min_bytes = 256U << 10;
    // Segment writeback in slices: once a stream's active segment holds this many bytes not yet
    // handed to the disk, the apply starts their writeback (file::start_writeback) without
    // waiting for it. A checkpoint's segment syncs then find little left to write, instead of
    // up to checkpoint_bytes of dirty pages whose flush stalls the journal's syncs behind it.
    // Durability is unchanged (checkpoints still sync). 0: leave writeback to the kernel.
    std::uint64_t segment_writeback_bytes = 1ULL << 20;
};

// Where and why recovery or a read found corruption (the error_code says only that it did).
struct corruption_info {
    std::optional<stream_id> stream;
    std::string file;                 // path of the damaged file
    std::uint64_t byte_position = 0;  // position of the damaged record or block in `file`
    std::optional<offset> at;         // the stream offset concerned, when known
    std::string reason;

    [[nodiscard]] std::string to_string() const;
};

}  // namespace nereus::storage

template <class T, class Tag>
struct std::hash<nereus::storage::strong_id<T, Tag>> {
    std::size_t operator()(const nereus::storage::strong_id<T, Tag>& v) const noexcept {
        return std::hash<T>{}(v.value());
    }
};
