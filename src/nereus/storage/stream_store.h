#pragma once

// stream_store: the stream log — many streams of opaque entries with dense offsets 0, 1, 2, ...
//
// The embedded backend (open()) is BookKeeper-style: one shared journal takes every append of
// every stream in group-committed blocks (one write + one fdatasync per group, however many
// streams it touches), then each record is copied into its stream's segment file, which is
// synced lazily by checkpoints. Format and recovery rules: doc/format/segment.md.
//
// Ownership: a store owns its directory; open at most one store per directory.
// Thread-safety: thread-safe. Completions run on the store's committer thread and must not
//   block on the store (no append_sync/close inside a completion; append() is fine).
// Durability:
//   - append copies `payload` before it returns: the caller may reuse its buffer at once.
//   - append: DURABLE when its completion reports success, never before; the entry is readable
//     from then on. An error completion does not mean "absent": a failed group may still turn
//     up after recovery (it was never confirmed).
//   - create_stream, delete_stream, trim: durable when they return success.
//   - after any I/O error on the commit path the store is failed: every pending and later
//     append, and every read, fails; reopen to run recovery.

#include "nereus/base/file_system.h"
#include "nereus/base/latency_histogram.h"
#include "nereus/base/result.h"
#include "nereus/storage/append_completion.h"
#include "nereus/storage/errc.h"
#include "nereus/storage/read_batch.h"
#include "nereus/storage/types.h"

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace nereus::storage {

// Counters for tests and metrics (monotonic since open).
struct store_stats {
    std::uint64_t commits = 0;        // journal blocks written (= journal fdatasyncs)
    std::uint64_t appends = 0;        // records committed
    std::uint64_t journal_bytes = 0;  // bytes written to the journal
    std::uint64_t checkpoints = 0;    // checkpoints completed
    std::uint64_t segment_rolls = 0;
    std::uint64_t journal_rolls = 0;
    std::uint64_t prepared_journals = 0;  // journal files that started as a prepared spare
    std::uint64_t spares_skipped = 0;  // journal files filled with no spare asked for (fast writes)
    std::uint64_t leader_commits = 0;  // of `commits`, those written by an appending thread
    std::uint64_t partial_spares = 0;  // of prepared_journals, switched to while being filled
    std::uint64_t fill_stops = 0;  // fills of an active file stopped short (committer caught up,
                                   // fast writes, a roll)
    std::uint64_t partial_spares_passed = 0;  // rolls that left a spare being filled alone
                                              // (fast writes) and created an empty file
    std::uint64_t spares_asked = 0;       // spares asked of the preparer (counted before the commit
                                          // that asked returns)
    std::uint64_t pipelined_applies = 0;  // of `commits`, groups applied by the applier thread
                                          // while the committer wrote the next one
    std::uint64_t paced_commits = 0;      // of `commits`, those that waited for min_sync_interval
    // Where a group's commit latency goes, per journal block: from the group's first append to
    // the start of its journal write (the committer's wake-up and linger), the durable write
    // itself (O_DSYNC write, or write + fdatasync), and from its end to the last completion
    // (segment copies, end offsets, completions). An append's latency in the store is at most
    // the sum of its group's three.
    latency_histogram::counts commit_wait;
    latency_histogram::counts journal_write;
    latency_histogram::counts commit_apply;

    // Field-wise sum (several logs' counters); a new field is added here too.
    store_stats& operator+=(const store_stats& o) {
        commits += o.commits;
        appends += o.appends;
        journal_bytes += o.journal_bytes;
        checkpoints += o.checkpoints;
        segment_rolls += o.segment_rolls;
        journal_rolls += o.journal_rolls;
        prepared_journals += o.prepared_journals;
        spares_skipped += o.spares_skipped;
        leader_commits += o.leader_commits;
        partial_spares += o.partial_spares;
        fill_stops += o.fill_stops;
        partial_spares_passed += o.partial_spares_passed;
        spares_asked += o.spares_asked;
        pipelined_applies += o.pipelined_applies;
        paced_commits += o.paced_commits;
        commit_wait += o.commit_wait;
        journal_write += o.journal_write;
        commit_apply += o.commit_apply;
        return *this;
    }
};

class stream_store {
public:
    // Opens (creating if needed) the store in `dir` and runs recovery: truncates torn tails,
    // replays the journal into the segments, writes a fresh checkpoint. Corruption that is not a
    // torn tail fails with errc::corrupt_journal / corrupt_segment / corrupt_checkpoint; when
    // `corruption` is given it receives the stream, file, byte position and offset concerned.
    [[nodiscard]] static result<std::unique_ptr<stream_store>> open(
        std::shared_ptr<file_system> fs,
        std::string dir,
        store_options options = {},
        corruption_info* corruption = nullptr);

    stream_store() = default;
    stream_store(const stream_store&) = delete;
    stream_store& operator=(const stream_store&) = delete;
    stream_store(stream_store&&) = delete;
    stream_store& operator=(stream_store&&) = delete;
    // Closes (as close()) if still open, ignoring errors.
    virtual ~stream_store() = default;

    // Creates an empty stream starting at offset 0. Durable on success. errc::stream_exists.
    [[nodiscard]] virtual result<void> create_stream(stream_id id) = 0;
    // Deletes a stream and all its entries, after its queued appends complete. Durable on
    // success: the stream never reappears, not even from the journal.
    [[nodiscard]] virtual result<void> delete_stream(stream_id id) = 0;

    // Queues `payload` (copied before return) as the stream's next entry. `done` receives the
    // entry's offset once it is durable, or the error. Errors known at once (unknown stream,
    // closed, failed store, too large) call `done` inline on the caller's thread. Appends to one
    // stream get offsets in call order. May block briefly while max_group_bytes are queued.
    virtual void append(stream_id id, bytes_view payload, append_completion done) = 0;
    // The CRC32C of a payload's last `len` bytes, already verified against exactly those bytes
    // by the caller (a Pulsar SEND's checksum, checked by the frame decoder).
    struct verified_tail {
        std::uint32_t crc = 0;
        std::uint32_t len = 0;  // 0: none
    };
    // append() with the CRC of the payload's tail known: the store checksums only the bytes
    // before it and combines (crc32c::combine), instead of reading the whole payload again.
    // The stored record is identical; a wrong `tail` would store a record whose CRC does not
    // match its bytes, which reads and recovery reject (fail closed). tail.len > payload.size()
    // is ignored. The default implementation ignores `tail`.
    virtual void append(stream_id id,
                        bytes_view payload,
                        verified_tail tail,
                        append_completion done);
    // append() and wait for the completion.
    [[nodiscard]] result<offset> append_sync(stream_id id, bytes_view payload);

    // Reads durable entries starting at `from`: at most `max_entries`, and at most `max_bytes`
    // of payload — except that the first entry is returned even if larger. `from` at or past the
    // end gives an empty batch; below the first retained offset gives errc::trimmed.
    [[nodiscard]] virtual result<read_batch> read(stream_id id,
                                                  offset from,
                                                  std::size_t max_entries,
                                                  std::size_t max_bytes) = 0;
    // read() for a thread that must not wait for a disk (a broker io thread): the same checks,
    // the same CRC verification and corruption reporting, the same batch — or
    // errc::would_block (equal to std::errc::operation_would_block) when serving it needs
    // anything that could wait: a segment file not open yet, an index to build from a
    // segment scan, or bytes not in the page cache (file::read_at_nowait). A would_block read
    // changed nothing; read() it elsewhere. Its mutexes are only tried (a busy one answers
    // would_block too). The default always answers would_block.
    [[nodiscard]] virtual result<read_batch> read_nowait(stream_id id,
                                                         offset from,
                                                         std::size_t max_entries,
                                                         std::size_t max_bytes);
    [[nodiscard]] virtual result<stream_info> info(stream_id id) = 0;
    // Deletes whole segments whose every entry is below `floor` (never the active segment) and
    // returns the first retained offset. Durable on success.
    [[nodiscard]] virtual result<offset> trim(stream_id id, offset floor) = 0;
    [[nodiscard]] virtual std::vector<stream_id> list_streams() = 0;
    // Drains queued appends, writes a final checkpoint and stops the threads. Later calls fail
    // with errc::closed. Returns the store's failure if it failed earlier.
    [[nodiscard]] virtual result<void> close() = 0;

    // Details of the last corruption a read found (the error code names only its kind).
    [[nodiscard]] virtual std::optional<corruption_info> last_corruption() const = 0;
    [[nodiscard]] virtual store_stats stats() const = 0;
    // True once an I/O error on the commit path put the store into its failed state (it then
    // refuses every append and read until reopened; reopening_store.h does that in-process).
    [[nodiscard]] virtual bool failed() const { return false; }
};

}  // namespace nereus::storage
