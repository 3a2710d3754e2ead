#pragma once

// One subscription of a topic and its dispatcher.
//
// Consumers attach with a sub type (Exclusive, Shared, Failover, Key_Shared). Each consumer has
// message-counted permits (FLOW adds them). Dispatch reads entries from the cursor's in-memory read
// position (which skips acked entries) and hands each entry to one consumer with permits: the
// active consumer (Exclusive/Failover: priority, then name) or round-robin (Shared) or the owner of
// the key's hash slot (Key_Shared: Pulsar's selectors — AUTO_SPLIT splits the biggest range for
// each new consumer, STICKY takes the client's ranges; a slot whose unacked entries are still held
// by another consumer, or that no consumer covers, waits, so one key is with one consumer at a
// time and per-key order survives consumer changes; other keys keep flowing past waiting entries
// up to broker_options::key_shared_max_waiting[_bytes]). Delivered-but-unacked entries are
// "pending" on their consumer; when a consumer goes away, or asks for redelivery, its pending
// entries are released, their redelivery count goes up in the cursor (Shared/Key_Shared; it rides
// the cursor's next CAS and survives a restart), and the cursor rewinds to the mark-delete
// position (pending entries of other consumers are skipped on the re-read, so nothing is
// delivered twice at once).
//
// Ownership: owned by its topic (shared_ptr); consumers are shared with their connection.
//   Sinks are held weakly (a closed connection simply stops receiving).
// Thread-safety: thread-safe; one mutex guards the dispatcher state. Sinks are called with the
//   mutex held and must only enqueue (consumer_sink's contract). With options.inline_reads (off
//   by default) a cursor read is first tried inline without waiting (subscription_cursor::
//   try_read: the tail is in the page cache); otherwise, or when that would block, it runs on
//   the blocking pool without the mutex, one in flight per
//   subscription (no inline try while one is), and the entries are handed out when the read
//   completes (posted to the io executor). A rewind or seek while a read is in
//   flight makes its entries stale: they are dropped and the cursor rewound again, so nothing
//   is delivered out of order (see doc/broker.md). Without a pool (tests) reads are inline.
// Durability: ack completions report durable outcomes (topic_backend.h); seek and unsubscribe
//   return after the cursor change is durable.

#include "nereus/base/result.h"
#include "nereus/broker/options.h"
#include "nereus/broker/pending_index.h"
#include "nereus/broker/topic_backend.h"
#include "nereus/broker/topic_compaction.h"

#include <atomic>
#include <boost/asio/any_io_executor.hpp>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace nereus::broker {

class blocking_pool;

enum class sub_type : std::int32_t { exclusive = 0, shared = 1, failover = 2, key_shared = 3 };
const char* to_string(sub_type t) noexcept;

// KeySharedMeta.keySharedMode (Pulsar's numbering).
enum class key_shared_mode : std::int32_t { auto_split = 0, sticky = 1 };

// A Key_Shared hash range, inclusive at both ends, over the slots 0..65535 (Murmur3-32 of the
// key modulo 2^16).
struct hash_range {
    std::int32_t start = 0;
    std::int32_t end = 0;
};

// Where a subscription delivers: implemented by the connection. Every call only enqueues work
// on the connection's strand (or does it at once when already on it); none blocks.
class consumer_sink {
public:
    struct delivery {
        dispatch_entry entry;
        std::uint32_t redelivery_count = 0;
    };
    virtual ~consumer_sink() = default;
    virtual void deliver(std::uint64_t consumer_id,
                         const dispatch_entry& e,
                         std::uint32_t redelivery_count) = 0;
    // One dispatch round's entries for one consumer, in delivery order: the subscription hands
    // them over together, so the connection takes one strand hand-off per round instead of one
    // per entry. The default delivers them one by one.
    virtual void deliver_batch(std::uint64_t consumer_id, std::vector<delivery>&& batch) {
        for (const auto& d : batch) {
            deliver(consumer_id, d.entry, d.redelivery_count);
        }
    }
    // Broker-initiated CLOSE_CONSUMER (seek, unload): the subscription already dropped it.
    virtual void close_consumer_by_broker(std::uint64_t consumer_id) = 0;
    virtual void active_consumer_change(std::uint64_t consumer_id, bool active) = 0;
};

struct consumer {
    std::uint64_t id = 0;
    std::string name;
    std::int32_t priority = 0;
    sub_type type = sub_type::exclusive;
    std::weak_ptr<consumer_sink> sink;
    // Key_Shared: the mode from SUBSCRIBE's keySharedMeta (absent: AUTO_SPLIT) and, STICKY,
    // the client's hash ranges.
    key_shared_mode ks_mode = key_shared_mode::auto_split;
    std::vector<hash_range> ks_ranges;
    // Guarded by the subscription's mutex.
    std::int64_t permits = 0;
    std::uint64_t unacked = 0;  // messages delivered and not acked
    bool active = false;        // Exclusive/Failover: the one that receives
    bool told_active = false;   // ACTIVE_CONSUMER_CHANGE sent at least once
};

// One id of an ACK.
struct ack_id {
    std::uint64_t entry_id = 0;
    std::vector<std::int64_t> ack_set;  // empty: the whole entry; else 1 = still unacked
    std::int32_t batch_size = 0;        // from MessageIdData.batch_size, 0 if absent
};

struct subscription_stats {
    std::uint64_t ack_requests = 0;  // ACK commands received (one may carry many ids)
    std::uint64_t acks_applied = 0;
    std::uint64_t acks_no_effect = 0;       // already acked / beyond the end / ignored cumulative
    std::uint64_t acks_stale = 0;           // stale generation or ackStateEpoch (answered success)
    std::uint64_t messages_dispatched = 0;  // messages (not entries) sent to consumers
    std::uint64_t bytes_dispatched = 0;     // stored entry bytes sent (each delivery counted)
    std::uint64_t redeliveries = 0;
    // Cursor reads that returned entries on the dispatching io thread (subscription_cursor::
    // try_read; one that found nothing new is not counted), and reads handed to the blocking
    // pool (the try would have blocked, or inline reads are off).
    std::uint64_t reads_inline = 0;
    std::uint64_t reads_pool = 0;
};

class subscription : public std::enable_shared_from_this<subscription> {
public:
    subscription(std::string name,
                 std::shared_ptr<subscription_cursor> cursor,
                 boost::asio::any_io_executor ex,
                 const broker_options& options,
                 blocking_pool* pool = nullptr);
    subscription(const subscription&) = delete;
    subscription& operator=(const subscription&) = delete;

    const std::string& name() const { return name_; }
    bool durable() const { return cursor_->durable(); }

    // Attaches a consumer. Errors: consumer_busy (Exclusive taken, or another sub type or
    // Key_Shared mode attached); consumer_assign_failed (Key_Shared: STICKY ranges empty,
    // inverted or overlapping another consumer's, or AUTO_SPLIT has no range left to split).
    [[nodiscard]] result<void> add_consumer(const std::shared_ptr<consumer>& c);
    // Detaches; its unacked messages become available to the others. Returns the number of
    // consumers left.
    std::size_t remove_consumer(const consumer& c);
    std::size_t consumer_count() const;

    void add_permits(const consumer& c, std::uint32_t n);
    // New entries were appended (any thread): schedules a dispatch round on the executor.
    void notify_new_entries();

    // Individual or cumulative ack; `done` gets success once every id's outcome is durable (or
    // decided without effect), or the first persistence error. Runs on any thread.
    void ack(const consumer& c,
             bool cumulative,
             std::vector<ack_id> ids,
             std::function<void(result<void>)> done);
    // REDELIVER_UNACKNOWLEDGED_MESSAGES: the listed entries (Shared), or all of the consumer's.
    void redeliver(const consumer& c, std::span<const std::uint64_t> entry_ids);
    // Disconnects every consumer (CLOSE_CONSUMER first, as Pulsar does), then resets the cursor.
    // Blocking; the same as begin_seek() then reset_cursor().
    [[nodiscard]] result<void> seek(const seek_target& target);
    // The two halves of seek: begin_seek() disconnects every consumer (non-blocking; on the
    // seeking consumer's strand its CLOSE_CONSUMER is written at once), reset_cursor() resets
    // the cursor durably (blocking: run it on the blocking pool).
    void begin_seek();
    [[nodiscard]] result<void> reset_cursor(const seek_target& target);
    // Errors: consumer_busy when other consumers are attached.
    [[nodiscard]] result<void> check_unsubscribe(const consumer& c) const;

    // Non-durable: parked by a seek (kept without consumers for the reader's reconnect); the
    // topic clears it when a consumer comes back, and drops parked ones left without one.
    void set_parked(bool parked) { parked_.store(parked); }
    bool parked() const { return parked_.load(); }

    std::optional<position> mark_delete_position() const { return cursor_->mark_delete_position(); }
    std::uint64_t backlog() const { return cursor_->backlog(); }
    subscription_stats stats() const;
    std::int64_t permits_of(const consumer& c) const;

    // Admin API (src/nereus/admin): the cursor (internalStats, properties), a copy of the
    // consumers' state taken under the mutex (stats), and disconnecting every consumer
    // (CLOSE_CONSUMER first, as seek does) without touching the cursor (delete with force).
    struct consumer_view {
        std::uint64_t id = 0;
        std::string name;
        std::int32_t priority = 0;
        std::int64_t permits = 0;
        std::uint64_t unacked = 0;
    };
    subscription_cursor& cursor() const { return *cursor_; }

    // read_compacted (SUBSCRIBE.read_compacted, Exclusive/Failover/readers): from now on reads
    // deliver the topic's compacted view up to its horizon, then the log after it
    // (topic_compaction.h, doc/compaction.md). Set by the first consumer asking for it.
    void set_compacted(std::shared_ptr<topic_compaction> c);
    bool read_compacted() const;
    // The compaction a read_compacted subscription reads through (nullptr otherwise).
    std::shared_ptr<topic_compaction> compaction() const;
    // Pulsar's first compacted read from earliest (CompactedTopicImpl.asyncReadEntriesOrWait):
    // the subscription's first compacted read starts at the view's first entry with id >=
    // `entry_id` instead of at the cursor's read position, so a subscriber starting at earliest
    // gets the view entries that retention trimmed from the log (they sit below the cursor's
    // start, are delivered unfiltered and count as acked for the cursor). The connection arms
    // it at SUBSCRIBE for a subscription created by that SUBSCRIBE (or a reader) starting at
    // earliest, and for a reader resuming below the log's first readable entry. No effect once
    // a compacted read has run (a rewind does not re-arm it, as in Pulsar); a seek to earliest
    // re-arms it, any other seek clears it. In memory only (applied).
    void read_view_from(std::uint64_t entry_id);
    sub_type type() const;
    std::vector<consumer_view> consumer_views() const;
    void disconnect_consumers();

private:
    struct pending {
        const consumer* owner = nullptr;
        ack_fence fence;
        std::uint32_t batch_size = 1;
        std::uint32_t messages = 1;
        std::int32_t slot = -1;  // Key_Shared: the key's hash slot (0..65535), else -1
    };
    struct slot_hold {
        const consumer* holder = nullptr;
        std::uint32_t entries = 0;
    };

    void dispatch();
    // Requires: mu_ held. A dispatch round, then its deliveries handed to the sinks.
    void dispatch_locked();
    void dispatch_round_locked();
    // Hands outbox_ to the sinks: one deliver_batch per consumer, in delivery order.
    void flush_outbox_locked();
    consumer* pick_consumer_locked();
    void elect_active_locked();
    void release_pending_locked(const consumer* owner, std::span<const std::uint64_t> only);
    void rewind_locked();
    // Reads up to `want` entries into buffer_. Inline (no pool, or with a pool when
    // options_.inline_reads and try_read does not block): true when the cursor returned
    // entries. Otherwise with a pool: starts the read there (unless one is in flight) and
    // returns false; the completion continues the dispatch.
    bool read_locked(std::size_t want);
    void add_read_locked(std::vector<dispatch_entry>& entries);
    // What a compacted read took of view_from_ (given back when its entries are dropped).
    struct view_claim {
        std::optional<std::uint64_t> from;
        std::uint64_t gen = 0;
    };
    // The cursor read, through the compacted view when read_compacted (blocking).
    result<std::vector<dispatch_entry>> read_cursor(std::size_t want, view_claim* claim = nullptr);
    // A read's entries were dropped (stale or failed): its view_from_ comes back unless a seek
    // set it meanwhile.
    void give_back_view_claim(const view_claim& claim);
    // A failed read: logged, and dispatch runs again in 1 s. Requires: mu_ held.
    void retry_read_later_locked(const std::error_code& ec);
    void on_read_done(std::uint64_t epoch,
                      result<std::vector<dispatch_entry>> r,
                      const view_claim& claim);
    void dispatch_key_shared_locked();
    // Key_Shared consumer selection (Pulsar's selectors; see doc/broker.md).
    result<void> ks_attach_locked(consumer& c);
    void ks_detach_locked(const consumer& c);
    consumer* ks_select_locked(std::int32_t slot) const;
    void add_pending_locked(std::uint64_t entry, const pending& p);
    // Delivered-but-unacked entries by entry id: a sorted ring (pending_index.h), so an
    // in-order delivery appends and an in-order ack pops, without a tree node, rebalancing or
    // allocation per message.
    using pending_map = pending_index<pending>;
    pending_map::iterator erase_pending_locked(pending_map::iterator it);
    void deliver_locked(consumer& c, const dispatch_entry& e, std::int32_t slot);
    const std::string name_;
    const std::shared_ptr<subscription_cursor> cursor_;
    boost::asio::any_io_executor ex_;
    const broker_options& options_;
    blocking_pool* const pool_;
    std::atomic<bool> dispatch_scheduled_{false};
    std::atomic<bool> parked_{false};
    mutable std::mutex compacted_mu_;
    std::shared_ptr<topic_compaction> compacted_;  // guarded by compacted_mu_
    // read_view_from (guarded by compacted_mu_): where the next compacted read starts in the
    // view when below the cursor's read position; compacted_read_ once a compacted read ran;
    // view_gen_ moves on with every seek (a dropped read's claim is then not given back).
    std::optional<std::uint64_t> view_from_;
    bool compacted_read_ = false;
    std::uint64_t view_gen_ = 0;

    mutable std::mutex mu_;
    sub_type type_ = sub_type::exclusive;               // guarded by mu_
    std::vector<std::shared_ptr<consumer>> consumers_;  // guarded by mu_, attach order
    std::size_t round_robin_ = 0;                       // guarded by mu_
    std::vector<dispatch_entry> buffer_;                // read, not yet handed out
    std::size_t buffer_pos_ = 0;                        // guarded by mu_
    pending_map pending_;                               // guarded by mu_
    // Deliveries of the current dispatch round, not yet handed to the sinks (guarded by mu_;
    // flushed before dispatch_locked returns, so consumers outlive their entries here).
    std::vector<std::pair<consumer*, consumer_sink::delivery>> outbox_;
    // The pool read (guarded by mu_): one in flight; read_again_ when a dispatch wanted to read
    // meanwhile; read_epoch_ moves on with every rewind/seek (an older read's entries are stale).
    bool reading_ = false;
    bool read_again_ = false;
    std::uint64_t read_epoch_ = 0;
    // Key_Shared: which consumer holds unacked entries of a hash slot (per-key order).
    std::map<std::int32_t, slot_hold> slots_;  // guarded by mu_
    // Key_Shared selector, guarded by mu_. AUTO_SPLIT: range upper bound -> owner, a range
    // covering (previous bound, bound] (the first from 0); bounds go up to 65536 as in Pulsar.
    // STICKY: range start -> (inclusive end, owner).
    key_shared_mode ks_mode_ = key_shared_mode::auto_split;
    std::map<std::int32_t, consumer*> split_ranges_;
    std::map<std::int32_t, std::pair<std::int32_t, consumer*>> sticky_ranges_;
    // Key_Shared: bytes of the entries waiting in buffer_ (guarded by mu_).
    std::size_t waiting_bytes_ = 0;
    // Counters are atomics: ack completions update them on storage threads without the mutex
    // (an io thread may hold mu_ while it waits for storage).
    std::atomic<std::uint64_t> ack_requests_{0};
    std::atomic<std::uint64_t> acks_applied_{0};
    std::atomic<std::uint64_t> acks_no_effect_{0};
    std::atomic<std::uint64_t> acks_stale_{0};
    std::atomic<std::uint64_t> dispatched_{0};
    std::atomic<std::uint64_t> bytes_dispatched_{0};
    std::atomic<std::uint64_t> redeliveries_{0};
    std::atomic<std::uint64_t> reads_inline_{0};
    std::atomic<std::uint64_t> reads_pool_{0};
};

}  // namespace nereus::broker
