#pragma once

// journaled_store: the embedded stream_store — a shared group-commit journal plus per-stream
// segment files (BookKeeper's journal/ledger split). See stream_store.h for the contract and
// doc/format/segment.md for the format and the recovery rules.
//
// Threads:
//   - callers: append() copies the record into the pending group buffer (one mutex); reads run
//     on the caller's thread against the segment files (read_nowait: only from open files and
//     the page cache, for threads that must not wait for a disk).
//   - committer: swaps the pending group out, writes it as ONE journal block (one write and one
//     fdatasync; into a prepared file, one page-aligned O_DIRECT | O_DSYNC write that is
//     durable when it returns), then copies each record into its stream's segment file (page
//     cache only), publishes the new end offsets and fires the completions.
//   - applier (store_options::pipelined_apply): the committer hands it a synced group when
//     more appends already wait, and goes on to write the next group while the applier copies
//     the records into their segments, publishes the end offsets and fires the completions
//     (see "Apply stage" below).
//   - writeback (store_options::segment_writeback_bytes > 0): starts the writeback of the
//     segment slices the apply queued (sync_file_range, a hint), so that neither the committer
//     nor the applier allocates delayed blocks or waits for the device queue.
//   - checkpointer: fdatasyncs the segment files dirtied before journal position P, durably
//     writes P to the checkpoint file and deletes journal files wholly before P.
//   - preparer: when asked, prepares journal/spare (zero-filled to journal_max_bytes in synced
//     chunks paced to prepare_bytes_per_s, renamed into place, directory synced), so that a
//     journal roll can switch to a file whose blocks are allocated and whose syncs never extend
//     it. An unprepared active file switches to journal/spare.tmp as soon as its first chunk
//     is synced, unless the journal is written fast (then a roll creates an empty file, and a
//     spare's fill pauses until the writer is slow); the preparer then fills it ahead of the
//     committer (at most prepare_lead_bytes ahead), and never writes at or below the durable fill
//     end the committer may write up to. The committer waits for it only when it must write past
//     that end, or rolls, while a chunk is in progress (it stops the fill, and waits for that
//     chunk).
//
// Leader commit (store_options::leader_commits, off by default). The commit path (a group's journal
// write, segment writes, completions, maybe_checkpoint) is run by whoever holds the commit token
// (commit_busy_, taken and given back under mu_): the committer thread, or a "leader". An
// append made inside a flush_batch scope (base/flush_batch.h: a broker io thread's socket read
// batch) registers its thread as the leader when the committer waits idle with no commit in
// flight, the last group was small (<= kLeaderMaxAppends: the low-rate regime) and no forced
// checkpoint or close is pending; it does not wake the committer. At the scope's end the leader
// takes the token and the group (every append of its batch, and any other thread's made
// meanwhile), writes it with the same durable write and runs the completions inline on its own
// thread (so their receipts need no cross-thread wake-up either). If the group grew past
// kLeaderMaxAppends / kLeaderMaxBytes, or the committer is busy, or the store is closing, the
// leader hands the group to the committer instead. Appends made while a leader commits queue
// for the next group; the token's release wakes the committer for them. So at most one
// thread commits at a time, groups are committed in the order they were taken, and each
// group's completions run after its durable write and before the next group's: the same
// ordering and durability as with the committer alone. An io thread blocks for one durable
// write (~0.35 ms) per leader commit; the group bound keeps that to low rates, where the
// committer would have cost two thread wake-ups per group instead.
// Rules for code on the commit path: "committer-only" state below means "commit-token holder
// only"; the token passes through mu_, which orders the holders. A leader never forces a
// checkpoint (maybe_checkpoint never blocks for it). A completion may append (on a leader as on
// the committer, backpressure does not block it) but must not call append_sync or close.
// close() waits for a leader in progress (leader_slot::mu), then the committer drains the rest.
//
// Apply stage. A group's work after its durable write (segment copies, publish, completions)
// is the apply; its "apply state" (each stream_state's segment writer fields, dirty_,
// touched_, iov_, the segment rolls) belongs to whoever applies: the token holder inline, or
// the applier for a handed-off group (apply_busy_, guarded by mu_; the hand-off and its end
// pass through mu_, which orders them). At most one group is being applied at a time, and
// groups are applied in the order they were written, so each group's completions still run
// after its durable write and before any later group's. The committer waits for the applier
// to be free before handing it the next group, before applying one inline, before failing a
// group (its error completions must not overtake the earlier group's), and before a
// checkpoint job (whose journal position P must only cover applied groups). A leader commits
// only while the applier is free. completed_seq_ advances when a group's completions ran,
// whoever ran them. A completion running on the applier may append (backpressure does not
// block it, as on the committer).
// Ownership: owns its threads, the journal file, the spare file and the descriptor cache.
// Thread-safety: thread-safe.

#include "nereus/base/direct_io_buffer.h"
#include "nereus/storage/byte_buffer.h"
#include "nereus/storage/fd_cache.h"
#include "nereus/storage/format.h"
#include "nereus/storage/stream_state.h"
#include "nereus/storage/stream_store.h"

#include <array>
#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

namespace nereus::storage {

class journaled_store final : public stream_store {
public:
    journaled_store(std::shared_ptr<file_system> fs, std::string dir, const store_options& opts);
    journaled_store(const journaled_store&) = delete;
    journaled_store& operator=(const journaled_store&) = delete;
    journaled_store(journaled_store&&) = delete;
    journaled_store& operator=(journaled_store&&) = delete;
    ~journaled_store() override;

    // Recovery (see doc/format/segment.md), then starts the threads. Call once, before use.
    [[nodiscard]] result<void> start();

    result<void> create_stream(stream_id id) override;
    result<void> delete_stream(stream_id id) override;
    void append(stream_id id, bytes_view payload, append_completion done) override;
    void append(stream_id id,
                bytes_view payload,
                verified_tail tail,
                append_completion done) override;
    result<read_batch> read(stream_id id,
                            offset from,
                            std::size_t max_entries,
                            std::size_t max_bytes) override;
    result<read_batch> read_nowait(stream_id id,
                                   offset from,
                                   std::size_t max_entries,
                                   std::size_t max_bytes) override;
    result<stream_info> info(stream_id id) override;
    result<offset> trim(stream_id id, offset floor) override;
    std::vector<stream_id> list_streams() override;
    result<void> close() override;
    std::optional<corruption_info> last_corruption() const override;
    store_stats stats() const override;
    bool failed() const override { return failed_.load(); }

private:
    struct pending_append {
        // A constructor, not an aggregate: emplace_back builds it in place, and clang 14 (the
        // fuzz build) has no parenthesised aggregate initialisation.
        pending_append(stream_state* s,
                       std::uint64_t off,
                       std::uint64_t pos,
                       std::uint64_t len,
                       append_completion d)
            : st(s), offset(off), rec_pos(pos), rec_len(len), done(std::move(d)) {}
        stream_state* st;
        std::uint64_t offset;
        std::uint64_t rec_pos;  // position of the segment record in the group buffer
        std::uint64_t rec_len;
        append_completion done;
    };
    // One commit group: the journal block being built (header space first) and its appends.
    struct group {
        byte_buffer bytes;
        std::vector<pending_append> appends;
        std::uint32_t records_crc =
            0;  // crc32c of bytes [kBlockHeaderSize, size), kept by append()
        std::chrono::steady_clock::time_point first_append{};  // for the commit_wait histogram
        std::chrono::steady_clock::time_point synced{};        // for the commit_apply histogram
        void reset() {
            bytes.resize(format::kBlockHeaderSize);
            appends.clear();
            records_crc = 0;
        }
    };
    struct checkpoint_job {
        format::journal_position pos;
        std::vector<segment_key> dirty;
        std::vector<format::stream_mark> marks;  // every stream's active segment at P
        std::uint64_t covers = 0;                // forced-checkpoint requests this job satisfies
    };
    // Recovery bookkeeping per stream.
    struct recovering {
        std::uint64_t k = 0;  // pass-1 cursor: next offset the stream needs
        bool tail_bad = false;
        std::uint64_t bad_pos = 0;
        std::uint64_t bad_offset = 0;
        format::defect bad_what = format::defect::none;
        bool covered = false;
        bool in_journal = false;  // the journal after P holds records of this stream
    };

    // --- commit path (commit-token holder: committer thread or a leader) ---
    void committer_loop();
    // mu_ held: the committer thread should take the token now.
    [[nodiscard]] bool committer_has_work() const;
    // mu_ held: the pending group is small enough for a leader.
    [[nodiscard]] bool leader_may_take() const;
    // mu_ held, token holder: gives the token back after the group that ended at `group_seq`.
    void release_commit(std::uint64_t group_seq);
    // At the end of the registering thread's flush_batch scope: commit the pending group on
    // this thread, or hand it to the committer (see "Leader commit" above).
    void lead_commit();
    static void run_leader(void* slot);
    // Requires: mu_ held via `lock`; committer thread, commit_busy_ set. Waits until
    // store_options::min_sync_interval after the last journal write started.
    void pace(std::unique_lock<std::mutex>& lock);
    // mu_ held, token holder or deciding to take it: a journal write started less than
    // store_options::min_sync_interval ago (always false when the interval is 0).
    [[nodiscard]] bool inside_sync_interval() const;
    // Requires: mu_ held via `lock`; committer thread.
    void linger(std::unique_lock<std::mutex>& lock);
    // The group's durable journal write, then its apply inline (write_group + apply_group).
    void commit_group(group& g);
    // Token holder: writes `g` as one journal block, durable when it returns true. On false
    // the group failed: its completions ran with the error (after the applier's group).
    [[nodiscard]] bool write_group(group& g);
    // Applies a durably written group (see "Apply stage") and resets it.
    void apply_group(group& g);
    // Committer thread, after write_group: applies `g` inline when nothing waits behind it (or
    // pipelining is off), else hands it to the applier (swapping it with applying_).
    void apply_or_hand_off(group& g, std::uint64_t group_seq);
    // Waits until the applier holds no group. Token holder; mu_ not held.
    void wait_applied();
    void apply_loop();
    void maybe_checkpoint(std::uint64_t requests);
    // Requires: committer-only. `take_partial`: see open_journal_file.
    result<void> roll_journal(bool take_partial);
    // Writes `block` at journal_pos_ of a direct journal file (journal_direct_): the pages from
    // the one holding journal_pos_ to the block's end, in one aligned write, that page's
    // earlier bytes taken from direct_buf_ and the rest of the last page zero (as the prepared
    // file holds there). Durable when it returns success. Committer thread.
    result<void> write_direct(std::span<const std::byte> block);
    result<void> write_records(stream_state& st, std::span<const bytes_view> records);
    result<void> flush_records(file& f, std::uint64_t& pos);
    result<void> roll_segment(stream_state& st, std::shared_ptr<file>& f);
    // The active segment holds segment_max_entries and is segment_min_age old. `aged` caches
    // the age test (one clock read) for the caller's batch of records; reset it after a roll.
    enum class age_test : std::uint8_t { unknown, young, old };
    [[nodiscard]] bool entry_roll_due(const stream_state& st, age_test& aged) const;
    void publish(stream_state& st);
    void mark_dirty(stream_state& st);
    void fail_store(std::error_code ec);
    [[nodiscard]] std::error_code failure() const;

    // --- checkpoints (journaled_store_checkpoint.cc; checkpointer thread, recovery, close) ---
    void checkpoint_loop();
    result<void> run_checkpoint(const checkpoint_job& job);
    result<void> write_checkpoint_file(const format::journal_position& pos,
                                       std::span<const format::stream_mark> marks);
    // Each stream's active segment position (committer thread, or with it stopped).
    std::vector<format::stream_mark> stream_marks();
    checkpoint_job make_job(std::uint64_t covers);
    void delete_journals_before(std::uint64_t file_seq);
    result<void> checkpoint_now();

    // --- prepared journal files (journaled_store_spare.cc) ---
    void preparer_loop();
    // Writes journal/spare.tmp (zeros in paced chunks, each synced), renames it to
    // journal/spare, syncs journal/: durable when it returns. Preparer thread. Gives up
    // (removing the tmp file) when close() stops the preparer, between chunks or in a pace wait.
    // Returns false if the committer took the file while it was being filled (it is then
    // a journal file: filled ahead of the committer until complete or stopped).
    result<bool> prepare_spare();
    // Asks the preparer for a spare (committer thread, recovery). Cheap; no I/O.
    void request_spare();
    // Recovery, before threads start: removes spare.tmp and a spare that does not fit.
    result<void> inspect_spare();
    // Makes journal file `seq` the active one: the ready spare renamed into place (or, with
    // `take_partial`, a spare still being filled), else a new empty file; then syncs journal/.
    // Committer thread, or recovery.
    result<void> open_journal_file(std::uint64_t seq, bool take_partial);
    // Committer thread, before writing a block that ends at `end` into an active file that is
    // still being filled (fill_watch_): when the write's pages reach past the durable fill end,
    // or the writer is fast, stops the fill (waiting for a chunk in progress only when it must
    // write past the fill end); otherwise lets the fill run prepare_lead_bytes past `end`.
    void watch_fill(std::uint64_t end);
    // Committer thread: stops the fill of the active file and waits for the chunk in progress.
    void stop_fill();
    // Committer-only: the journal's recent write rate (rate_fast_, set after each commit) is
    // above prepare_max_bytes_per_s.
    [[nodiscard]] bool writing_fast() const { return rate_fast_; }
    // Committer-only, before a commit at `now`: below prepare_max_bytes_per_s, and neither this
    // commit nor the last one follows an idle gap (over kRateWindow: a burst's first commit
    // tells nothing of its rate). A spare still being filled is taken only then.
    [[nodiscard]] bool writing_slow(std::chrono::steady_clock::time_point now) const;
    // Committer-only: records a commit of `bytes` that ended at `at` and sets rate_fast_ from
    // the commits of the last kRateWindow (at most kRateCommits of them, at least the last two),
    // and writer_fast_ when it changes.
    void record_commit_rate(std::chrono::steady_clock::time_point at, std::uint64_t bytes);
    [[nodiscard]] bool commit_rate_fast() const;
    // Preparer (prep_mu_ held): a spare not taken waits, for a fast writer that is committing.
    [[nodiscard]] bool fill_held_for_writer() const;

    // --- recovery (journaled_store_recovery.cc) ---
    result<void> recover();
    result<void> load_streams(std::unordered_map<std::uint64_t, recovering>& rec,
                              const std::vector<format::stream_mark>& marks);
    result<void> remove_stream_dir(const std::string& d);

    // --- reads (journaled_store_read.cc) ---
    result<void> load_index(stream_state& st, std::uint64_t base);
    // A reader found segment `base` shorter than its records: errc::trimmed if a trim removed
    // it meanwhile, errc::unknown_stream if the stream was deleted meanwhile (the reader held
    // it open while it was cut: remove_in_steps.h), not corruption; errc::would_block if
    // `nowait` and view_mu is busy; nullopt otherwise (the segment is damaged).
    [[nodiscard]] static std::optional<errc> removed_since(stream_state& st,
                                                           std::uint64_t base,
                                                           bool nowait);
    // read() and read_nowait(): with `nowait`, errc::would_block instead of opening a file,
    // building an index or a pread that would wait for the disk.
    result<read_batch> read_impl(
        stream_id id, offset from, std::size_t max_entries, std::size_t max_bytes, bool nowait);
    tl::unexpected<std::error_code> corruption(errc code, corruption_info info);
    std::shared_ptr<stream_state> find_stream(std::uint64_t id);
    static bool is_not_found(const std::error_code& ec) {
        return ec == std::errc::no_such_file_or_directory;
    }
    [[nodiscard]] segment_key key(const stream_state& st, std::uint64_t base) const {
        return {st.id, base, st.incarnation};
    }

    const std::shared_ptr<file_system> fs_;
    const std::string dir_;
    const std::string journal_dir_;
    const std::string streams_dir_;
    const store_options opts_;
    fd_cache fds_;

    // Serialises create/delete/trim against each other.
    std::mutex admin_mu_;

    // The queue: guards streams_, pending_, the flags and counters below.
    mutable std::mutex mu_;
    std::condition_variable work_cv_;   // committer waits for work
    std::condition_variable space_cv_;  // appenders wait for group space
    std::condition_variable drain_cv_;  // waiters for completed_seq_
    std::unordered_map<std::uint64_t, std::shared_ptr<stream_state>> streams_;
    group pending_;
    std::uint64_t enqueued_seq_ = 0;
    std::uint64_t completed_seq_ = 0;
    std::uint64_t ckpt_requests_ = 0;
    std::uint64_t next_incarnation_ = 1;
    std::thread::id committer_id_;
    std::thread::id applier_id_;
    // The apply stage (guarded by mu_): the applier holds applying_ (whose appends end at
    // applying_seq_) until it clears apply_busy_; apply_cv_ wakes it, apply_done_cv_ wakes
    // whoever waits for it to be free.
    group applying_;
    bool apply_busy_ = false;
    bool apply_stop_ = false;
    std::uint64_t applying_seq_ = 0;
    std::condition_variable apply_cv_;
    std::condition_variable apply_done_cv_;
    // The committer waits for appends (idle, or lingering) and no appender has notified it
    // yet: the appender that completes what it waits for notifies and clears it.
    bool committer_idle_ = false;
    // Leader commit state (guarded by mu_): the token is held; the committer waits in its idle
    // wait (not lingering); a leader is registered with some thread's flush_batch; the last
    // group was small enough for leaders.
    bool commit_busy_ = false;
    bool committer_waiting_ = false;
    bool lead_registered_ = false;
    bool leader_mode_ = false;
    static constexpr std::size_t kLeaderMaxAppends = 16;
    static constexpr std::size_t kLeaderMaxBytes = 64 << 10;
    // A registered leader whose scope has not ended this long after it registered (its thread
    // blocked inside the scope, e.g. waiting for a commit) is taken over by the committer: a
    // safety net that turns a wait on oneself into a delay. The committer's idle wait is timed
    // to it while a leader is registered: a registration wakes an untimed committer once, which
    // then wakes at most once per kLeaderLate while leaders keep registering.
    static constexpr std::chrono::milliseconds kLeaderLate{5};
    std::chrono::steady_clock::time_point lead_since_;
    bool committer_timed_ = false;  // the committer's idle wait is the timed one (guarded by mu_)
    // What a flush_batch entry points to: outlives the store (shared), so a scope that ends
    // after close() finds store == nullptr. mu is held for the whole leader commit; close()
    // takes it to wait for one in progress.
    struct leader_slot {
        std::mutex mu;
        journaled_store* store = nullptr;
    };
    std::shared_ptr<leader_slot> leader_slot_ = std::make_shared<leader_slot>();
    // While the committer waits: the pending append count at which an appender wakes it (1 when
    // idle; the linger target while lingering, so a lingering group costs one wake-up, not one
    // per append). Guarded by mu_.
    std::size_t wake_at_appends_ = 1;
    // Record CRC shifters by payload length (guarded by mu_). append() folds each record into
    // its group's records_crc from the payload CRC it already computed, so the committer does
    // not read the block again (format::finish_block with records_crc). A length gets its
    // tables (4 KiB, ~50 us to build) after kShiftStreak appends of that length in a row in its
    // slot, so random sizes build none; lengths without tables fold their bytes (or, from
    // kCombineMinBytes, use crc32c::combine).
    struct shift_slot {
        std::unique_ptr<crc32c::shifter> shifter;
        std::size_t candidate = 0;  // length seen last in this slot
        std::uint32_t streak = 0;   // appends of `candidate` in a row
    };
    static constexpr std::size_t kShiftSlots = 8;
    static constexpr std::uint32_t kShiftStreak = 64;
    // From 64 B: a table combine (4 lookups) costs less than reading the bytes again, so a
    // producer of fixed-size 100 B messages has its tail and record folded without a CRC pass.
    static constexpr std::size_t kShiftMinBytes = 64;
    static constexpr std::size_t kCombineMinBytes = 4096;
    std::array<shift_slot, kShiftSlots> shifters_;
    const crc32c::shifter* shifter_for(std::size_t len);  // mu_ held; nullptr: none yet
    // Committer-only: size of the last group and duration of its journal write + sync, for
    // the group-commit linger (store_options::max_commit_delay).
    std::size_t last_group_appends_ = 0;
    std::chrono::nanoseconds last_sync_{0};
    // Token holder (written at a journal write's start, read by the next holder): for pace().
    std::chrono::steady_clock::time_point last_sync_start_{};
    bool stop_ = false;
    bool closing_ = false;
    bool closed_ = false;
    bool started_ = false;
    std::atomic<bool> failed_{false};
    std::error_code failure_;  // guarded by mu_

    // Committer-only state.
    group committing_;
    std::unique_ptr<file> journal_;
    // The active journal file was opened with open_direct() (a prepared file and
    // store_options::direct_journal_writes): each commit is one aligned, durable write, no
    // fdatasync. direct_buf_ (kDirectIoAlign-aligned, grown to the largest block + 1 page,
    // never shrunk) starts with the bytes of the last, partial page written so far.
    bool journal_direct_ = false;
    direct_io_buffer direct_buf_;
    std::size_t direct_cap_ = 0;
    std::uint64_t journal_file_seq_ = 0;
    std::uint64_t journal_pos_ = 0;
    std::uint64_t next_block_seq_ = 1;
    std::uint64_t bytes_since_ckpt_ = 0;
    std::uint64_t ckpt_epoch_ = 0;
    std::uint64_t ckpt_taken_ = 0;
    // Apply state (see "Apply stage"): whoever applies; make_job reads dirty_ with the
    // applier free.
    std::vector<segment_key> dirty_;
    std::vector<stream_state*> touched_;
    std::vector<bytes_view> iov_;

    // Checkpointer hand-off.
    std::mutex ckpt_mu_;
    std::condition_variable ckpt_cv_;
    std::condition_variable ckpt_done_cv_;
    std::optional<checkpoint_job> ckpt_job_;
    bool ckpt_busy_ = false;
    bool ckpt_stop_ = false;
    bool ckpt_exited_ = false;
    std::uint64_t ckpt_done_covers_ = 0;

    // Preparer hand-off. spare_ready_ mirrors spare_ == ready for the committer's lock-free check.
    // filling: spare.tmp is being prepared and its first chunk is durable, so a roll may take
    // it (renamed to the new journal file) and the preparer fills on ahead of the committer.
    enum class spare_state { none, preparing, filling, ready, taking };
    std::mutex prep_mu_;
    std::condition_variable prep_cv_;
    spare_state spare_ = spare_state::none;    // guarded by prep_mu_
    bool prep_wanted_ = false;                 // guarded by prep_mu_
    bool prep_stop_ = false;                   // guarded by prep_mu_
    std::atomic<bool> spare_ready_{false};     // ready or filling
    std::atomic<bool> spare_complete_{false};  // ready (a complete spare)
    std::condition_variable fill_cv_;          // the committer waits for fill_running_ == false
    // The file the preparer fills (guarded by prep_mu_): its durable zero-filled end F (the
    // preparer writes only at F and above, the committer only in pages below F while the fill
    // runs); the committer took it as its journal file; the fill still runs on it; the committer
    // asks it to stop; how far the fill may go (prepare_lead_bytes past the committer).
    std::uint64_t fill_end_ = 0;
    bool fill_taken_ = false;
    bool fill_running_ = false;
    bool fill_stop_ = false;
    std::uint64_t fill_want_end_ = 0;
    std::uint64_t fill_done_end_ = 0;  // fill_end_ of the taken file when its fill ended
    // The committer's rate verdict (rate_fast_, written on each change) and the end of its
    // last commit (on the rate clock, relaxed): a spare not taken is not filled beside a fast
    // writer. Its fill waits after the chunk in progress while the writer is fast and its last
    // commit ended less than kRateWindow ago, and goes on once the writer is slow or idle.
    bool writer_fast_ = false;  // guarded by prep_mu_
    std::atomic<std::int64_t> last_commit_ns_{0};
    // Committer-only: the active file is being filled (its pages past fill_safe_ are not
    // zeroed yet); its fill end as last seen; journal_pos_ at which to let the fill go on.
    bool fill_watch_ = false;
    std::uint64_t fill_safe_ = 0;
    std::uint64_t fill_kick_at_ = 0;
    // Committer-only: the active journal file started as a prepared spare; a spare was asked
    // for since the active file was opened.
    bool journal_prepared_ = false;
    bool spare_requested_ = false;
    // Committer-only: commits since the open, journal bytes written since the open, and the
    // time and byte count after each of the last kRateCommits commits (the write rate that
    // decides whether a spare is wanted, and whether one still being filled is taken). Across
    // files: a file just rolled to has too few commits of its own to tell a max-rate writer.
    // Bounded in time too (kRateWindow): an idle gap before a burst is part of at most the
    // burst's first interval, so a short max-rate burst is seen as fast from its second commit
    // (with a window of commits only, it looked slow for 31 commits, and took and stopped
    // spares still being filled: doc/perf.md, "Short bursts, partial spares and the unlink
    // stall").
    static constexpr std::size_t kRateCommits = 32;
    static constexpr std::chrono::milliseconds kRateWindow{100};
    struct rate_point {
        std::chrono::steady_clock::time_point at;
        std::uint64_t bytes = 0;
    };
    std::uint64_t rate_commits_ = 0;
    std::uint64_t rate_bytes_ = 0;
    std::array<rate_point, kRateCommits> rate_ring_{};
    bool rate_fast_ = false;

    std::thread committer_;
    std::thread applier_;
    std::thread checkpointer_;
    std::thread preparer_;

    // Segment writeback slices (store_options::segment_writeback_bytes) are started on their
    // own thread: write_records queues each one and writeback_loop hands it to the disk
    // (file::start_writeback, i.e. sync_file_range: it allocates the slice's delayed blocks
    // and submits its I/O, which took ~6 % of the committer's time at 100 B max rate when the
    // apply did it inline, and sometimes blocked it on the device queue). A hint: close()
    // stops the thread after the appliers (every queued slice is started first).
    struct writeback_slice {
        std::shared_ptr<file> f;
        std::uint64_t from = 0;
        std::uint64_t len = 0;
    };
    void queue_writeback(std::shared_ptr<file> f, std::uint64_t from, std::uint64_t len);
    void writeback_loop();
    std::mutex wb_mu_;
    std::condition_variable wb_cv_;
    std::vector<writeback_slice> wb_queue_;  // guarded by wb_mu_
    bool wb_running_ = false;                // guarded by wb_mu_: the thread takes slices
    bool wb_stop_ = false;                   // guarded by wb_mu_
    std::thread writeback_;

    mutable std::mutex corruption_mu_;
    std::optional<corruption_info> last_corruption_;

    std::atomic<std::uint64_t> stat_commits_{0};
    std::atomic<std::uint64_t> stat_appends_{0};
    std::atomic<std::uint64_t> stat_journal_bytes_{0};
    std::atomic<std::uint64_t> stat_checkpoints_{0};
    std::atomic<std::uint64_t> stat_segment_rolls_{0};
    std::atomic<std::uint64_t> stat_journal_rolls_{0};
    std::atomic<std::uint64_t> stat_prepared_journals_{0};
    std::atomic<std::uint64_t> stat_spares_skipped_{0};
    std::atomic<std::uint64_t> stat_leader_commits_{0};
    std::atomic<std::uint64_t> stat_pipelined_applies_{0};
    std::atomic<std::uint64_t> stat_paced_commits_{0};
    std::atomic<std::uint64_t> stat_partial_spares_{0};
    std::atomic<std::uint64_t> stat_fill_stops_{0};
    std::atomic<std::uint64_t> stat_partial_spares_passed_{0};
    std::atomic<std::uint64_t> stat_spares_asked_{0};
    latency_histogram hist_commit_wait_;
    latency_histogram hist_journal_write_;
    latency_histogram hist_commit_apply_;
};

}  // namespace nereus::storage
