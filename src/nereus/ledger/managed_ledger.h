#pragma once

// nereus::ledger::managed_ledger — Pulsar's ManagedLedger over one stream of the stream log:
// appends with durable completion and per-entry publish time, durable and non-durable cursors
// (the cursor module's CursorStateRecord engine), a conservative protection floor with
// PROTECTION_PENDING, crash-safe trimming, backlog eviction as a fenced CAS, and an explicit
// capability + lifecycle admission check in front of every operation. Design, admission table
// and persistence steps: doc/ledger.md; records: doc/format/ledger.md.
//
// Writable open, in this order, each step crash-safe (a crash anywhere leaves a state the next
// open completes):
//   1. registry: find (or create: id counter + registry "creating" + retention root, then the
//      stream, then registry "live") the topic's stream id and ledger id;
//   2. claim the stream-level cursor-retention root under the owner session: one multi of
//      check_session, create the ephemeral owner key (must be absent) and CAS the root with the
//      new claim epoch. Exactly one of two concurrent openers wins (the loser gets
//      errc::owned_elsewhere and has changed nothing);
//   3. stabilize every cursor root (cursor::open: snapshot + deltas verified, orphans collected);
//   4. finish or roll back the pending trim and the PROTECTION_PENDING cursors recorded there;
//   5. revalidate ownership (check_session + owner key + root + registry versions unchanged).
//
// Ownership: open_writable returns a shared_ptr; cursor handles and in-flight cursor completions
//   keep the ledger alive, in-flight appends do not (see append). Dropping every reference
//   WITHOUT close() is a crash of this owner: nothing is flushed or released (the owner key
//   stays until the session ends).
// Thread-safety: thread-safe. append/acks are asynchronous: their completions run on the stream
//   log's committer thread / the metadata store's callback thread. Every other call is blocking
//   and must not be made from either of those threads.
// Durability: append completes after the entry is durable (SEND_RECEIPT may follow); an ack
//   completes with ack_status::ok only after its cursor CAS is durable; admin operations return
//   after their last CAS / storage call is durable.

#include "nereus/base/completion.h"
#include "nereus/base/result.h"
#include "nereus/cursor/cursor.h"
#include "nereus/ledger/ledger_stream.h"
#include "nereus/ledger/records.h"
#include "nereus/ledger/types.h"

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

namespace nereus::ledger {

class managed_cursor;
struct cursor_entry;

class managed_ledger : public std::enable_shared_from_this<managed_ledger> {
public:
    // Inline, move-only (base/completion.h): captures up to 104 bytes (the broker's append
    // callback plus a confirm gate) are stored without allocating.
    using append_callback = inline_completion<void(result<message_id>), 104>;

    // Opens the topic's ledger for writing (steps above). Errors: invalid_argument,
    // topic_not_found, owned_elsewhere, owner_fenced, stream_missing, corrupt_record,
    // injected_crash, and cursor / meta / storage errors (a corrupt cursor fails the open
    // closed).
    [[nodiscard]] static result<std::shared_ptr<managed_ledger>> open_writable(
        ledger_env env, std::string topic, ledger_options options = {});

    managed_ledger(const managed_ledger&) = delete;
    managed_ledger& operator=(const managed_ledger&) = delete;
    managed_ledger(managed_ledger&&) = delete;
    managed_ledger& operator=(managed_ledger&&) = delete;
    ~managed_ledger();

    // The admission check every operation runs first: capability switch, then the ledger's
    // lifecycle state (doc/ledger.md). Cheap; no I/O.
    [[nodiscard]] result<void> admit(operation op) const;
    [[nodiscard]] ledger_state state() const { return state_.load(); }
    [[nodiscard]] const std::string& topic() const { return topic_; }
    [[nodiscard]] std::uint64_t ledger_id() const { return registry_.ledger_id; }

    // ---- appends ----
    // Appends one entry; `done` gets its message id once it is durable, or the error. Delayed
    // delivery and transactions fail with errc::unsupported (inline, nothing written).
    // Requires: the caller keeps this ledger alive until `done` has run (the broker's topic
    // holds its ledger; its producers hold the topic). The completion holds no reference: one
    // taken per message and released on the committer thread cost a cache-line transfer each.
    void append(bytes_view payload, const append_options& options, append_callback done);
    [[nodiscard]] result<message_id> append_sync(bytes_view payload, const append_options& options);

    // ---- cursors ----
    // Creates a subscription cursor. Durable: created PROTECTION_PENDING (protected by an
    // in-memory reservation from before its creation CAS), then the floor is finalized and the
    // cursor activated before this returns. at_offset below start() is clamped to start() and
    // reported (managed_cursor::creation). Non-durable: in memory only, not protected.
    // Errors: unsupported, not_admitted, invalid_argument, cursor_exists, offset_beyond_end.
    [[nodiscard]] result<std::shared_ptr<managed_cursor>> open_cursor(
        const std::string& name,
        cursor::initial_position where,
        const subscription_options& options = {});
    // A handle to an existing durable cursor (recovered at open or created since).
    [[nodiscard]] result<std::shared_ptr<managed_cursor>> find_cursor(const std::string& name);
    [[nodiscard]] std::vector<std::string> cursor_names() const;
    // Deletes a durable cursor (fenced CAS to DELETED; the floor moves forward at the next
    // trim). Errors: not_admitted, cursor_not_found, cursor errors.
    [[nodiscard]] result<void> delete_cursor(const std::string& name);

    // ---- retention ----
    // One retention pass: finalize the floor, evict cursors beyond the backlog limit (fenced
    // CAS each, recorded), record the pending trim, advance cursors below it durably, trim whole
    // segments below the target, finalize. Crash-safe at every step (the next open completes it).
    [[nodiscard]] result<trim_report> trim();
    [[nodiscard]] result<void> set_retention(const retention_policy& policy);
    // The floor a trim would use now: min over durable cursors' MDO and in-flight protections,
    // or end() without cursors.
    [[nodiscard]] offset protection_floor() const;
    [[nodiscard]] ledger_info info() const;

    // ---- idle subscriptions ----
    // Deletes durable cursors without a connected consumer that were idle for longer than
    // `idle_timeout`, counting activity from max(persisted activity, in-memory activity, the
    // time this ledger was opened) and never within options.idle_grace of the open.
    [[nodiscard]] result<std::vector<std::string>> expire_idle_cursors(
        std::chrono::milliseconds idle_timeout);
    // Writes every cursor's last activity time (fenced).
    [[nodiscard]] result<void> persist_activity();

    // Flushes and closes the cursors, persists activity and releases the owner key.
    [[nodiscard]] result<void> close();

    [[nodiscard]] const ledger_env& env() const { return env_; }
    [[nodiscard]] ledger_stream& stream() { return *stream_; }
    [[nodiscard]] const ledger_options& options() const { return options_; }

private:
    friend class managed_cursor;
    struct token {};

public:
    managed_ledger(token, ledger_env env, std::string topic, ledger_options options);

private:
    result<void> open_steps();
    result<void> load_registry();
    result<void> claim();
    result<void> stabilize();
    result<void> recover_pending();
    result<void> revalidate();

    // Requires: rmu_ held (or opening).
    result<void> write_root(const format::retention_root& next);
    result<void> finalize_floor_locked();
    // Completes the pending trim `p`: records every cursor below the target it does not name,
    // settles each named eviction, trims storage, then clears the record and appends the
    // evictions to the history (one CAS). Idempotent: a crash anywhere is completed by the open.
    result<void> complete_trim_locked(format::pending_trim p, trim_report* report);
    result<offset> retention_boundary_locked();
    // A fenced eviction: cumulative ack through to - 1 (acks above `to` kept), then the epoch
    // bump (skip(0)). Never a reset.
    result<void> evict(cursor::cursor& c, offset to);
    // Publishes a new ackStateEpoch (skip(0)); nothing else changes.
    result<void> bump_epoch(cursor::cursor& c);
    // Brings a recorded eviction to its end state: evict() when the cursor is below `to`;
    // otherwise the epoch bump alone when the cursor is still at `recorded_epoch` (a crash
    // between the two CASes); otherwise nothing.
    result<void> settle_eviction(cursor::cursor& c, offset to, std::uint64_t recorded_epoch);
    [[nodiscard]] offset floor_locked() const;
    // Activates `e` after the floor including it is written (rmu_ taken inside).
    result<void> finalize_protection(const std::shared_ptr<cursor_entry>& e);

    // True (and the ledger is "crashed") when the fault hook says crash at `step`.
    bool crash_at(std::string_view step);
    void note_error(const std::error_code& ec);
    std::int64_t now() const;
    void touch(const std::string& name);
    // touch() if mu_ is free now, else nothing (mu_ may be held while a cursor's mutex is
    // waited for, e.g. by trim; managed_cursor::try_read must not wait).
    void try_touch(const std::string& name);
    cursor::cursor_env cursor_env() const;
    cursor::cursor_id cursor_id(const std::string& name) const;

    const ledger_env env_;
    const std::string topic_;
    const ledger_options options_;
    const format::ledger_keys keys_;
    std::atomic<ledger_state> state_{ledger_state::opening};

    format::registry_record registry_;
    meta::version registry_version_ = 0;
    meta::version owner_version_ = 0;
    std::shared_ptr<ledger_stream> stream_;
    std::int64_t opened_at_ = 0;

    // Serialises the retention state machine and admin operations (create, delete, finalize,
    // trim, retention changes). Never held across an async completion.
    mutable std::mutex rmu_;
    format::retention_root root_;     // guarded by rmu_
    meta::version root_version_ = 0;  // guarded by rmu_

    // Guards the maps below (short sections only).
    mutable std::mutex mu_;
    std::map<std::string, std::shared_ptr<cursor_entry>> cursors_;  // durable, live
    std::multiset<offset> reservations_;  // in-flight creations and backward resets
    std::map<std::string, std::int64_t> persisted_activity_;
    std::map<std::string, std::int64_t> activity_;
    meta::version activity_version_ = 0;
};

}  // namespace nereus::ledger
