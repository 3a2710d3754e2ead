#pragma once

// nereus::cursor::cursor — one durable cursor generation: the CursorStateRecord engine of seed
// 000 (doc/format/cursor.md gives the persistence design, doc/cursor-lifecycle.md the
// admission table, doc/cursor-semantics.md the semantics it implements).
//
// Every mutation goes through one versioned CAS of the cursor's root record in the metadata
// store; every CAS is a meta multi that starts with check_session(owner), so a delayed CAS of a
// superseded owner is rejected even when the root's version still matches. Requests that arrive
// while a CAS is in flight are grouped and share the next CAS (group commit; at most one CAS in
// flight per handle). A request completes with ack_status::ok only after its CAS is durable.
// When a CAS completes, its requests' callbacks run first and the next group is formed after
// them (so requests re-issued from those callbacks join it); and when fewer requests are queued
// than the previous group took, the next CAS lingers briefly (cursor_options::max_commit_linger,
// at most half the last CAS latency) for the queue to refill, ended by the process-wide
// commit_timer thread, never by blocking the metadata store's callback thread.
//
// Requests carry a `fence` (generation, ackStateEpoch). Acks check both; property writes,
// resets, clear, skip, activate and delete check the generation. A stale fence completes with
// ack_status::stale_generation / stale_epoch and changes nothing.
//
// Losing a CAS race (another handle wrote the root) re-reads the root and the whole state, then
// rebases the group only when generation and epoch are unchanged; otherwise its requests
// complete with the fence's status. An unknown outcome is resolved by re-reading the root: our
// exact root bytes mean applied, the old version means not applied (retry), anything else a
// lost race. The owner session failing its check fences the handle (errc::owner_fenced) for
// good: it confirms nothing after.
//
// Ownership: created by create()/open() as std::shared_ptr; in-flight store callbacks keep it
//   alive. Dropping the last reference without close() is a "crash" of this handle: nothing is
//   flushed (pending redelivery counts are lost; durable state is unaffected).
// Thread-safety: thread-safe. Completions run on the metadata store's callback thread, or
//   inline on the caller's thread when a request is rejected before any I/O, or on the cursor's
//   commit_timer thread when a lingering group is started by the timer and rejects a request;
//   never with an internal lock held. Snapshot writes and object-store reads block the thread
//   that starts the commit (caller, store callback thread, or the commit_timer thread).
// Durability: `ok` means durable (for a durable meta backend) and applied: every read
//   accessor reflects only durable, confirmed state. record_redelivery() is in memory until the
//   next CAS.

#include "nereus/base/result.h"
#include "nereus/cursor/batch_bits.h"
#include "nereus/cursor/cursor_keys.h"
#include "nereus/cursor/cursor_state.h"
#include "nereus/cursor/options.h"
#include "nereus/cursor/record_format.h"
#include "nereus/cursor/types.h"
#include "nereus/meta/op.h"

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace nereus::cursor {

// A read-only copy of a cursor's observable state (for tests and admin tools; O(state)).
struct cursor_snapshot {
    std::uint64_t generation = 0;
    std::uint64_t epoch = 0;
    lifecycle life = lifecycle::protection_pending;
    offset mark_delete = 0;
    std::vector<offset_range> ranges;
    std::map<offset, batch_bits> batches;
    property_map properties;
    // Persisted counts plus redeliveries recorded since the last CAS.
    std::map<offset, std::uint32_t> redeliveries;
    bool spilled = false;
    meta::version root_version = 0;
    // CASes (meta multis) this handle has sent since it was opened, retries included.
    std::uint64_t cas_sent = 0;
};

class cursor : public std::enable_shared_from_this<cursor> {
public:
    template <class T>
    using callback = std::function<void(result<T>)>;
    using op_callback = callback<op_result>;

    // Creates the cursor (or recreates a DELETED one with generation + 1) in PROTECTION_PENDING
    // at `where`: earliest = stream start, latest = stream end sampled immediately before the
    // creation CAS, at_offset (start <= at <= end). Errors: cursor_exists, invalid_argument,
    // offset_beyond_end, owner_fenced, meta and objects errors.
    static void create(cursor_env env,
                       cursor_id id,
                       initial_position where,
                       cursor_options options,
                       callback<std::shared_ptr<cursor>> done);
    // Opens and recovers the cursor: follows exactly the root's snapshot reference (verifying
    // size, checksum, generation and sequence), applies the deltas in order, and collects
    // orphan snapshots and stale deltas. Errors: cursor_not_found, cursor_deleted,
    // corrupt_root/snapshot/delta, snapshot_missing, delta_missing, snapshot_mismatch,
    // unsupported_format, meta and objects errors.
    static void open(cursor_env env,
                     cursor_id id,
                     cursor_options options,
                     callback<std::shared_ptr<cursor>> done);

    cursor(const cursor&) = delete;
    cursor& operator=(const cursor&) = delete;
    cursor(cursor&&) = delete;
    cursor& operator=(cursor&&) = delete;
    ~cursor();

    // ---- acks (fence: generation and epoch) ----
    // Acks entry `entry` whole. Errors: offset_beyond_end.
    void ack(fence f, offset entry, op_callback done);
    // Acks several ranges [first, end) whole (the entries of one ACK command), each with its
    // own fence: queued under one lock acquisition and pumped once, so they share one CAS (two
    // when a CAS is in flight with room left in the group). `done(i, r)` runs once per range i,
    // exactly as ack() would for that range (a range is one request: its outcome is the
    // range's — applied when it changes any entry). Errors per range: offset_beyond_end (end - 1
    // at or beyond the stream end), invalid_argument (first >= end).
    struct fenced_range {
        fence f;
        offset first = 0;
        offset end = 0;
    };
    using range_callback = std::function<void(std::size_t, result<op_result>)>;
    void ack_ranges(std::span<const fenced_range> ranges, range_callback done);
    // Acks the indices set in `acked` (acked.size() = the batch size) of entry `entry`; when no
    // index remains the entry is acked whole. Errors: offset_beyond_end, invalid_argument.
    void ack_batch_index(fence f, offset entry, batch_bits acked, op_callback done);
    // Cumulative ack through `entry` inclusive (MDO := entry + 1), or, with `batch_index`, of
    // every entry below `entry` and indices 0..batch_index of it (a batch of `batch_size`).
    // `props` are put into the property map atomically with the ack (only if the ack changes
    // state). A cumulative ack at or below MDO is already_acked.
    void ack_cumulative(fence f,
                        offset entry,
                        std::optional<std::uint32_t> batch_index,
                        std::uint32_t batch_size,
                        property_map props,
                        op_callback done);

    // ---- epoch-publishing operations (fence: generation) ----
    // MDO := the target; ranges, batch maps and redelivery counts cleared; epoch + 1. A
    // backward reset of an ACTIVE cursor makes it PROTECTION_PENDING.
    void reset(fence f, reset_target target, op_callback done);
    // MDO := the stream end sampled on the commit path immediately before the CAS; epoch + 1.
    void clear_backlog(fence f, op_callback done);
    // MDO moves past `n` not-fully-acked entries (at most to the end); epoch + 1.
    void skip(fence f, std::uint64_t n, op_callback done);

    // ---- properties (fence: generation) ----
    void set_properties(fence f, property_map props, op_callback done);
    void put_property(fence f, std::string key, std::string value, op_callback done);
    void remove_property(fence f, std::string key, op_callback done);

    // ---- lifecycle (fence: generation) ----
    // PROTECTION_PENDING -> ACTIVE (the ledger calls it once the protection floor is final).
    void activate(fence f, op_callback done);
    // -> DELETED (a tombstone that keeps the generation); the handle is closed afterwards.
    void remove(fence f, op_callback done);

    // Records that `entry` was redelivered (nack, consumer closed). In memory only; written
    // with the next CAS. Ignored for acked entries.
    void record_redelivery(offset entry);
    // Forces a CAS when recorded redeliveries are pending; completes after earlier requests.
    void flush(op_callback done);
    // Flushes, then closes the handle: later requests fail with errc::closed.
    void close(op_callback done);

    // ---- reads of the confirmed state ----
    [[nodiscard]] fence current_fence() const;
    [[nodiscard]] lifecycle life() const;
    [[nodiscard]] offset mark_delete() const;
    [[nodiscard]] bool is_acked(offset entry) const;
    // Remaining (unacked) indices of a partly acked batch entry.
    [[nodiscard]] std::optional<batch_bits> remaining(offset entry) const;
    // The first offset at or after `from` that is not fully acked (dispatch skips acked ranges).
    [[nodiscard]] offset next_unacked(offset from) const;
    // Entries in [MDO, stream end) not fully acked (partly acked batches count).
    [[nodiscard]] std::uint64_t backlog() const;
    [[nodiscard]] std::uint32_t redelivery_count(offset entry) const;
    [[nodiscard]] cursor_snapshot snapshot() const;
    // Calls f(state, fence) with the confirmed state and fence (what the accessors above read)
    // under the handle's mutex if that mutex is free now, and returns true; returns false
    // without calling f when another thread holds it, which may be for as long as a snapshot
    // write (a spilled state's commit holds it across the object-store put). For callers that
    // must not wait (ledger::managed_cursor::try_read on a broker io thread). f must not call
    // into this cursor.
    template <class F>
    bool try_inspect(F&& f) const {
        const std::unique_lock lock(mu_, std::try_to_lock);
        if (!lock.owns_lock()) {
            return false;
        }
        f(static_cast<const cursor_state&>(state_), fence{root_.generation, root_.epoch});
        return true;
    }
    [[nodiscard]] std::size_t resident_bytes() const;
    [[nodiscard]] const cursor_id& id() const { return id_; }
    [[nodiscard]] const cursor_keys& keys() const { return keys_; }
    [[nodiscard]] const cursor_env& env() const { return env_; }

    // Removes every snapshot object of this cursor that the root does not reference and that is
    // not protected. Blocking (object store calls). Returns how many were removed.
    result<std::size_t> collect_garbage();

    struct request;
    struct commit;

private:
    struct token {};

public:
    cursor(token, cursor_env env, cursor_id id, cursor_keys keys, cursor_options options);

private:
    struct loaded {
        format::root_record root;  // the state is in root.state
        meta::version version = 0;
        std::vector<std::uint64_t> stale_deltas;
    };
    using completion = std::function<void()>;

    static void load(const cursor_env& env,
                     const cursor_keys& keys,
                     std::string root_bytes,
                     meta::version version,
                     callback<loaded> done);
    void install(loaded l);

    void submit(request r);
    // Several requests under one lock acquisition, then one pump.
    void submit_all(std::vector<request>& rs);
    std::optional<result<op_result>> pre_check(const request& r) const;
    void pump(std::vector<completion>& out);
    // True (and a timer armed) when the next group should wait for the queue to refill.
    bool linger();
    void on_linger_timer(std::uint64_t token);
    // Runs `out` (the completions of a finished CAS) without the lock, then forms the next
    // group, then runs what that produced. Requires: `lock` holds mu_; returns unlocked.
    void complete_then_pump(std::unique_lock<std::mutex>& lock, std::vector<completion>& out);
    bool start_group(std::vector<completion>& out);
    void start_fence_op(request r, std::vector<completion>& out);
    // Chooses inline root or snapshot + root for a whole new state, then sends the CAS.
    void start_full_commit(std::shared_ptr<commit> c,
                           cursor_state next,
                           std::vector<completion>& out);
    void send(std::shared_ptr<commit> c);
    void on_multi(const std::shared_ptr<commit>& c, result<meta::multi_result> r);
    void resolve_unknown(std::shared_ptr<commit> c);
    void on_applied(const std::shared_ptr<commit>& c,
                    meta::version v,
                    std::vector<completion>& out);
    void on_lost_race(std::shared_ptr<commit> c);
    void fail_commit(const std::shared_ptr<commit>& c,
                     std::error_code ec,
                     std::vector<completion>& out);
    void break_handle(std::error_code ec, std::vector<completion>& out);
    void append_gc_erases(commit& c, std::size_t limit);
    std::size_t inline_limit() const;
    op_result result_with(ack_status s) const;
    static void run(std::vector<completion>& out);

    cursor_env env_;
    cursor_id id_;
    cursor_keys keys_;
    cursor_options options_;

    mutable std::mutex mu_;
    // Confirmed state and the root that holds it (root_.state is unused; state_ is the state).
    cursor_state state_;
    format::root_record root_;
    meta::version root_version_ = 0;
    std::uint64_t cas_sent_ = 0;  // guarded by mu_ (snapshot().cas_sent)
    std::deque<request> queue_;
    bool in_flight_ = false;
    bool closed_ = false;
    std::error_code broken_;  // set: every later request fails with it
    std::map<offset, std::uint32_t> pending_redeliveries_;
    // Stale delta seqs still to erase (GC), as sorted, disjoint, merged ranges: a compaction
    // makes one contiguous range stale, so this stays small however many deltas it replaced.
    std::vector<offset_range> stale_deltas_;
    // Group commit: callbacks of a finished CAS are running (pump waits for them).
    bool holding_ = false;
    std::size_t last_group_ = 0;  // requests the last group took from the queue
    std::chrono::steady_clock::time_point sent_at_;
    std::chrono::steady_clock::duration last_cas_latency_{};
    bool linger_armed_ = false;    // a commit_timer wake-up is pending for linger_token_
    bool linger_expired_ = false;  // the linger ended: start the next group now
    std::uint64_t linger_token_ = 0;
};

}  // namespace nereus::cursor
