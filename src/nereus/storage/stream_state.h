#pragma once

// stream_state: everything the journaled store keeps in memory about one stream — the segment
// list readers see, and the active segment's write position used by the committer.
//
// Ownership: owned by journaled_store (shared with in-flight reads).
// Thread-safety: mixed, per field group as annotated below:
//   - `next_offset`: guarded by the store's queue mutex (offset assignment).
//   - `segments`, `first`, `end`, `deleted`: guarded by `view_mu` (readers, committer
//     publishes, trim, delete).
//   - `trim_unsynced`: guarded by the store's admin mutex.
//   - the "writer" fields: whoever applies the current group, one at a time: the commit-token
//     holder inline or the applier thread (journaled_store.h, "Apply stage"), or recovery
//     before the threads start.

#include "nereus/base/file_system.h"
#include "nereus/storage/segment_index.h"

#include <chrono>
#include <cstdint>
#include <deque>
#include <mutex>
#include <vector>

namespace nereus::storage {

// segment_view::bytes and unindexed_pos of a sealed segment found at open, until its first read.
inline constexpr std::uint64_t kUnknownSize = UINT64_MAX;

struct segment_view {
    std::uint64_t base = 0;   // offset of its first record (also its file name)
    std::uint64_t end = 0;    // one past its last durable record
    std::uint64_t bytes = 0;  // bytes of durable records
    // Bytes [0, unindexed_pos) — offsets [base, unindexed_end) — have no index entries yet:
    // a sealed segment found at open (all of it: kUnknownSize) or the checkpointed part of an
    // active one. The first read there scans that prefix, checking every record, and indexes it.
    std::uint64_t unindexed_pos = 0;
    std::uint64_t unindexed_end = 0;
    sparse_index index;
};

struct stream_state {
    stream_state(std::uint64_t id_, std::uint64_t incarnation_)
        : id(id_), incarnation(incarnation_) {}

    const std::uint64_t id;
    const std::uint64_t incarnation;  // distinguishes a re-created stream from its predecessor

    // Guarded by the store's queue mutex.
    std::uint64_t next_offset = 0;

    // Guarded by view_mu. `segments` is never empty; the last one is active.
    std::mutex view_mu;
    std::deque<segment_view> segments;
    std::uint64_t first = 0;
    std::uint64_t end = 0;
    // Set by delete_stream once the stream's removal is durable (its tombstone), before its
    // files are cut: a reader holding one open that reads it short answers unknown_stream.
    bool deleted = false;

    // Guarded by the store's admin mutex: a trim removed a segment file but the directory sync
    // that makes the removal durable failed; the next trim syncs before it reports success.
    bool trim_unsynced = false;

    // Writer fields (the applying thread only; see above).
    std::uint64_t active_base = 0;
    std::uint64_t active_bytes = 0;
    // When the active segment was started (rolled to) or the store opened: its age for
    // store_options::segment_min_age.
    std::chrono::steady_clock::time_point active_since = std::chrono::steady_clock::now();
    std::uint64_t write_offset = 0;    // offset the next written record must have
    std::uint64_t writeback_from = 0;  // active segment bytes below this had start_writeback
    bool index_any = false;            // the active segment has an index entry
    std::uint64_t index_last_pos = 0;
    std::vector<index_entry> staged_index;   // index entries not yet published
    std::uint64_t dirty_epoch = UINT64_MAX;  // checkpoint epoch the active segment was marked in
    std::uint64_t dirty_base = UINT64_MAX;
    std::vector<bytes_view> group_records;  // this group's records for this stream
    bool in_group = false;
};

}  // namespace nereus::storage
