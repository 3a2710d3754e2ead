#pragma once

// The broker's narrow view of topic storage: open a topic, append an entry with a durable
// completion, open a subscription cursor, read the next entries to dispatch, ack (individual,
// cumulative, batch-index) with a durable completion, seek, delete a subscription, last entry.
//
// The production implementation sits on nereus::ledger (ManagedLedger: topics over streams,
// cursors whose read position skips acked entries); memory_backend.h is an in-memory one for
// unit tests only (it is not durable). The broker never includes ledger/ headers outside the
// ledger-backed implementation, so the dispatcher and the connection code test without disks.
//
// Positions: ledger_id names the topic's stream incarnation, entry_id is the stream offset (one
// entry = one SEND, batches included). A batch index is never an entry id.
//
// Ownership: the broker holds topic_store and subscription_cursor through shared_ptr; a
//   backend outlives every topic_store it opened (the server owns both).
// Thread-safety: every class here is thread-safe. Completion callbacks may run on any thread
//   (inline, or a storage/metadata thread): they must not block and must not call back into
//   blocking backend operations; the broker posts them to its own executors.
// Durability: append's completion means the entry is durable; an ack completion with
//   ack_outcome::applied means the ack is durable; seek/open_subscription/delete_subscription
//   return after their change is durable (for durable subscriptions). Nothing is confirmed to a
//   client before that.

#include "nereus/base/completion.h"
#include "nereus/base/result.h"
#include "nereus/storage/stream_store.h"

#include <compare>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace nereus::broker {

struct position {
    std::uint64_t ledger_id = 0;
    std::uint64_t entry_id = 0;
    friend auto operator<=>(const position&, const position&) = default;
};

// Generation + ackStateEpoch of a cursor: every delivery is stamped with it and acks carry it
// back, so an ack issued before a seek/reset cannot change the state after it.
struct ack_fence {
    std::uint64_t generation = 0;
    std::uint64_t epoch = 0;
    friend bool operator==(const ack_fence&, const ack_fence&) = default;
};

// One entry handed to the dispatcher.
struct dispatch_entry {
    position pos;
    std::int64_t publish_time = 0;
    std::uint32_t batch_size = 1;  // messages in the entry
    // Partly acked batch: Pulsar ack_set words of the messages still to deliver (1 = not yet
    // acked). Empty: deliver the whole entry.
    std::vector<std::int64_t> remaining;
    // The stored headers_and_payload (0x0e01 crc, metadata, payload) exactly as the producer
    // sent it: a view kept alive by `owner`, shared by every delivery of this entry. The ledger
    // backend's owner is the cursor read's buffer (one per read, shared by its entries: no copy
    // or allocation per entry); others own one vector per entry (share()).
    std::span<const std::byte> bytes;
    std::shared_ptr<const void> owner;
    ack_fence fence;
    // Dispatcher scratch (backends leave it): the Key_Shared hash slot, computed once per read.
    std::int32_t key_slot = -1;

    // Points bytes at *v and keeps v alive.
    void share(std::shared_ptr<const std::vector<std::byte>> v) {
        bytes = v ? std::span<const std::byte>(*v) : std::span<const std::byte>();
        owner = std::move(v);
    }

    // Messages this entry will count against a consumer's permits.
    std::uint32_t message_count() const noexcept;
};

// How an ack ended when it did not fail; each is answered success on the wire (stock clients
// park failed acks and retry them forever) and counted in the subscription's stats:
//  applied    the ack changed the cursor, durably;
//  no_effect  already acked, or beyond the end;
//  stale      stamped with an older cursor generation or ackStateEpoch (issued before a seek,
//             clear or recreate): it changed nothing, and the entry is delivered again at the
//             new epoch, so the success claims nothing the client could rely on
//             (doc/cursor-semantics.md §1).
// An ack that could not be persisted is an error, never one of these.
enum class ack_outcome { applied, no_effect, stale };

// Append completions are inline, move-only callables (base/completion.h): the produce path
// allocates nothing per message. append_done is what topic::append takes (a connection's
// capture of up to 48 bytes); append_callback, what a topic_store gets (append_done plus the
// topic's own 24 bytes). Larger captures still work but are boxed on the heap.
using append_done = inline_completion<void(result<position>), 48>;
using append_callback = inline_completion<void(result<position>), 80>;
using ack_callback = std::function<void(result<ack_outcome>)>;

// Whole-entry acks of the entries [first, end), stamped with `fence` (subscription_cursor::
// ack_ranges).
struct ack_entry_range {
    ack_fence fence;
    std::uint64_t first = 0;
    std::uint64_t end = 0;
};
// Called once per range i of an ack_ranges call, with that range's outcome.
using ack_ranges_callback = std::function<void(std::size_t, result<ack_outcome>)>;

struct append_info {
    std::int64_t publish_time = 0;  // ms; used by seek-by-time
    std::uint32_t batch_size = 1;   // messages in the entry (num_messages_in_batch or 1)
    // The CRC32C of the entry's last tail_len bytes, verified against them (a SEND's checksum
    // covers metadataSize .. payload end, the entry's tail); 0 = none. Lets the store skip
    // checksumming those bytes again (ledger::append_options::tail_crc).
    std::uint32_t tail_crc = 0;
    std::uint32_t tail_len = 0;
};

struct subscription_start {
    enum class kind { latest, earliest, at_entry };
    kind where = kind::latest;
    std::uint64_t entry_id = 0;  // at_entry: first entry to deliver
    // at_entry, non-durable only: a start id inside a batch. Indexes below it are marked
    // acked in the new cursor, so the entry is delivered with an ack_set that skips them.
    std::int32_t batch_index = -1;
};

struct seek_target {
    // clear_backlog: everything up to the end is acked (admin skip_all); skip: the next `count`
    // unacked entries from the mark-delete position are acked (admin skip/{n}).
    enum class kind { to_entry, to_time, earliest, latest, clear_backlog, skip };
    kind where = kind::earliest;
    std::uint64_t entry_id = 0;     // to_entry: first entry to deliver again
    std::int64_t publish_time = 0;  // to_time: first entry with publish time >= this
    std::uint64_t count = 0;        // skip: entries to skip
};

// A cursor as the admin API shows it (internalStats). Offsets are entry ids of the topic's
// current ledger.
struct cursor_details {
    std::uint64_t mark_delete = 0;    // first entry not yet acked (MDO)
    std::uint64_t read_position = 0;  // next entry dispatch reads (in memory)
    // Individually acked ranges [begin, end) above mark_delete.
    std::vector<std::pair<std::uint64_t, std::uint64_t>> acked_ranges;
    std::size_t partly_acked_batches = 0;
    ack_fence fence;                 // cursorGeneration, ackStateEpoch
    std::string state;               // lifecycle: "ACTIVE", "PROTECTION_PENDING", "DELETED"
    bool spilled = false;            // state kept in a snapshot object (else inline in the root)
    std::uint64_t root_version = 0;  // the CAS root's version (the snapshot reference's record)
    std::uint64_t cas_sent = 0;      // cursor CASes sent since the cursor was opened (durable)
    std::map<std::string, std::string> properties;
};

// A topic's stored range (internalStats).
struct topic_details {
    std::uint64_t ledger_id = 0;
    std::uint64_t first_entry = 0;  // first readable entry (raised by retention trims)
    std::uint64_t end = 0;          // next entry id an append gets
    // First entry still stored: trims delete whole segments, so it may lie below first_entry.
    std::uint64_t first_stored = 0;
};

// One subscription's cursor (durable or not).
class subscription_cursor {
public:
    virtual ~subscription_cursor() = default;

    virtual const std::string& name() const = 0;
    virtual bool durable() const = 0;

    // Up to max_entries undelivered, not fully acked entries from the in-memory read position,
    // which then moves past them. Blocking (storage reads).
    [[nodiscard]] virtual result<std::vector<dispatch_entry>> read(std::size_t max_entries) = 0;
    // read() for a thread that must never wait (an io thread): the same entries read() would
    // return, or a prefix of them, or std::errc::operation_would_block when serving the read
    // could wait for a disk or for a lock held across I/O; that answer leaves the read position
    // where it was (read() on the blocking pool then does the read). Other errors as read().
    // The default always answers would-block.
    [[nodiscard]] virtual result<std::vector<dispatch_entry>> try_read(
        std::size_t /*max_entries*/) {
        return nereus::error(std::errc::operation_would_block);
    }
    // The read position goes back to the mark-delete position (redelivery).
    virtual void rewind() = 0;

    // Acks (async). `done` runs once the outcome is durable (applied) or decided (no_effect).
    virtual void ack(ack_fence f, std::uint64_t entry_id, ack_callback done) = 0;
    // Whole-entry acks of several ranges (the ids of one ACK command) in one submission: the
    // ledger cursor commits them in one CAS instead of one request per id. `done(i, r)` runs
    // once per range i, when its outcome is durable (applied: the range changed the cursor) or
    // decided (no_effect, stale); any thread. The default issues one ack() per entry and
    // reports a range applied if any entry was, else stale if any was, else no_effect, or the
    // first error.
    virtual void ack_ranges(std::span<const ack_entry_range> ranges, ack_ranges_callback done);
    // Batch-index ack: `remaining` = Pulsar ack_set words (1 = still unacked) of a batch of
    // `batch_size` messages; the 0 bits are acked.
    virtual void ack_batch_index(ack_fence f,
                                 std::uint64_t entry_id,
                                 std::uint32_t batch_size,
                                 std::span<const std::int64_t> remaining,
                                 ack_callback done) = 0;
    // Everything up to and including entry_id.
    virtual void ack_cumulative(ack_fence f, std::uint64_t entry_id, ack_callback done) = 0;

    // Resets the cursor (blocking, durable before it returns); the epoch moves on, so acks
    // stamped with the old fence have no effect. Returns the new fence.
    [[nodiscard]] virtual result<ack_fence> seek(const seek_target& target) = 0;

    virtual ack_fence current_fence() const = 0;
    // Pulsar's mark-delete position (the last entry of the acked prefix), nullopt if none.
    virtual std::optional<position> mark_delete_position() const = 0;
    // Entries not yet fully acked.
    virtual std::uint64_t backlog() const = 0;
    // A consumer is attached (idle expiry must not remove the subscription).
    virtual void set_connected(bool connected) = 0;

    // Redelivery counts, kept by the cursor: record_redelivery when an entry is actually
    // redelivered (nack/REDELIVER, or returned by a closed/disconnected consumer), never per
    // dispatch. A durable cursor writes the count with its next ack CAS (no write of its own),
    // so after a crash a count may lag, never run ahead. A seek clears them.
    virtual void record_redelivery(std::uint64_t entry_id) = 0;
    virtual std::uint32_t redelivery_count(std::uint64_t entry_id) const = 0;

    // Compacted reads (read_compacted subscriptions, compaction.md): where the next read()
    // starts (the in-memory read position, back at the mark-delete position after a rewind or
    // a fence change), whether an entry is fully acked, and moving the read position forward
    // past entries delivered from the compacted view (never backward). In memory only.
    virtual std::uint64_t next_read_position() = 0;
    virtual bool is_acked(std::uint64_t entry_id) const = 0;
    virtual void skip_read_to(std::uint64_t entry_id) = 0;

    // Admin: the cursor's confirmed state (internalStats) and its properties. set_properties
    // replaces them; durable before it returns. Errors: not_allowed for reserved keys, storage.
    virtual cursor_details details() const = 0;
    [[nodiscard]] virtual result<void> set_properties(std::map<std::string, std::string> p) = 0;
};

struct last_entry_info {
    position pos;
    std::uint32_t batch_size = 1;
};

class topic_store {
public:
    virtual ~topic_store() = default;

    virtual const std::string& name() const = 0;
    virtual std::uint64_t ledger_id() const = 0;

    // Appends one entry (headers_and_payload as received). The bytes are copied before this
    // returns. `done` gets the entry's position once it is durable, in append order.
    virtual void append(std::span<const std::byte> entry,
                        const append_info& info,
                        append_callback done) = 0;

    // Opens (creating if missing) a subscription's cursor. A durable subscription is durable
    // before this returns. `start` is used only when the subscription is created.
    [[nodiscard]] virtual result<std::shared_ptr<subscription_cursor>> open_subscription(
        const std::string& name, const subscription_start& start, bool durable) = 0;
    // Deletes a durable subscription (durable before it returns).
    [[nodiscard]] virtual result<void> delete_subscription(const std::string& name) = 0;
    virtual std::vector<std::string> subscription_names() const = 0;

    // The newest entry, nullopt on an empty topic.
    virtual std::optional<last_entry_info> last_entry() const = 0;
    // Admin: the stored range (internalStats).
    virtual topic_details details() const = 0;

    // Retention (doc/ledger.md "Retention"): one trim pass now — data below the protection
    // floor (the slowest durable cursor's mark-delete position, cursors being created and
    // backward resets included) and outside the retention policy goes; whole stored segments
    // below it are deleted. Durable when it returns. Returns the first readable entry after it.
    // The in-memory test backend keeps everything: std::errc::operation_not_supported.
    [[nodiscard]] virtual result<std::uint64_t> trim() {
        return nereus::error(std::errc::operation_not_supported);
    }

    // Flushes and releases the topic (graceful stop).
    [[nodiscard]] virtual result<void> close() = 0;

    // True once this broker no longer owns the topic (shared metadata, doc/ownership.md):
    // nothing more is confirmed on it. Always false for the single-process backends.
    virtual bool ownership_lost() const { return false; }
};

// Who serves a topic, for LOOKUP and the HTTP lookup (doc/ownership.md).
struct topic_owner {
    // True when this broker owns the topic, or nobody does (a PRODUCER or SUBSCRIBE here then
    // claims it). The embedded single-process backends always answer true.
    bool here = true;
    std::string broker_url;  // the owner's pulsar://host:port when !here
    std::string http_url;    // the owner's http://host:port when !here
};

class topic_backend {
public:
    virtual ~topic_backend() = default;

    // The stream log's counters (journal syncs, appends, checkpoints, rolls, spares), summed
    // over this backend's logs: the embedded one, or with shared metadata the open topics' own
    // logs. nullopt: a backend without a stream log (the in-memory one). A snapshot for
    // /metrics: monotonic per log, but not atomic across fields or logs.
    virtual std::optional<storage::store_stats> log_stats() const { return std::nullopt; }

    // ---- ownership (shared metadata store; defaults: this process owns every topic) ----
    // Where LOOKUP sends a client for `name`. Reads the topic's ownership node; never claims.
    [[nodiscard]] virtual result<topic_owner> owner_of(const std::string& /*name*/) {
        return topic_owner{};
    }
    // This broker's advertised addresses, written into the ownership nodes it creates. Called
    // once, after the listeners are bound and before clients can open topics.
    virtual void set_advertised(std::string /*broker_url*/, std::string /*http_url*/) {}
    // `lost(name)` runs (on a backend thread) when the backend lost a topic it had opened
    // (session expired, ownership superseded): the topic's store has confirmed its last append
    // and ack, fails every later one, and the server must drop it and disconnect its clients.
    virtual void set_lost_handler(std::function<void(const std::string&)> /*lost*/) {}

    // Opens a topic by its full name (persistent://tenant/ns/topic), creating it if `create`.
    // Errors: proto::error_kind::topic_not_found when missing and !create, storage errors.
    [[nodiscard]] virtual result<std::shared_ptr<topic_store>> open_topic(const std::string& name,
                                                                          bool create) = 0;
    // Full names of every known topic.
    virtual std::vector<std::string> topic_names() const = 0;

    // Admin: deletes a topic — its subscriptions, its registry record and its stored entries —
    // durable before it returns (a crash part-way leaves at most unreferenced storage). The
    // caller (topic_registry::remove) makes sure nothing serves the topic any more; a store
    // still held elsewhere refuses further appends. Errors: topic_not_found, storage errors.
    [[nodiscard]] virtual result<void> delete_topic(const std::string& name) = 0;

    // Admin records (tenants, namespaces, partitioned-topic metadata; doc/format/admin.md):
    // small values under relative keys, which the ledger backend keeps in the metadata store
    // under "admin/". Every change is durable before it returns.
    [[nodiscard]] virtual result<std::optional<std::string>> get_admin_record(
        const std::string& key) const = 0;
    // Creates the record if absent: true when created, false when the key already existed.
    [[nodiscard]] virtual result<bool> create_admin_record(const std::string& key,
                                                           const std::string& value) = 0;
    // Replaces the record's value with `value` only if it currently holds `expected` (a
    // compare-and-set): true when replaced, false when absent or holding something else.
    [[nodiscard]] virtual result<bool> replace_admin_record(const std::string& key,
                                                            const std::string& expected,
                                                            const std::string& value) = 0;
    // True when removed, false when it did not exist.
    [[nodiscard]] virtual result<bool> remove_admin_record(const std::string& key) = 0;
    // Every record whose key starts with `prefix`, in key order.
    [[nodiscard]] virtual result<std::vector<std::pair<std::string, std::string>>>
    list_admin_records(const std::string& prefix) const = 0;

    // Immutable objects (compacted-topic snapshots; objects/object_store.h names): written
    // once, never changed. put_object is durable when it returns; a name that already holds
    // other bytes is an error (proto::error_kind::metadata_failure) and changes nothing.
    // get_object: errors metadata_failure when the object is absent or fails verification.
    [[nodiscard]] virtual result<void> put_object(const std::string& name,
                                                  std::span<const std::byte> bytes) = 0;
    [[nodiscard]] virtual result<std::vector<std::byte>> get_object(const std::string& name) = 0;
    // Durable when it returns; removing an absent object succeeds.
    [[nodiscard]] virtual result<void> remove_object(const std::string& name) = 0;
};

}  // namespace nereus::broker
