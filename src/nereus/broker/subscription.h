#pragma once

// One subscription of a topic and its dispatcher.
//
// Consumers attach with a sub type (Exclusive, Shared, Failover, Key_Shared). Each consumer has
// message-counted permits (FLOW adds them). Dispatch reads entries from the cursor's in-memory read
// position (which skips acked entries) and hands each entry to one consumer with permits: the
// active consumer (Exclusive/Failover: priority, then name) or round-robin (Shared) or the owner of
// the key's hash slot (Key_Shared: the 2^16 slots are split evenly over the consumers in attach
// order; a slot whose unacked entries are still held by another consumer waits until they are acked
// or released, so one key is with one consumer at a time and per-key order survives consumer
// changes). Delivered-but-unacked entries are "pending" on their consumer; when a consumer goes
// away, or asks for redelivery, its pending entries are released, their redelivery count goes up,
// and the cursor rewinds to the mark-delete position (pending entries of other consumers are
// skipped on the re-read, so nothing is delivered twice at once).
//
// Ownership: owned by its topic (shared_ptr); consumers are shared with their connection.
//   Sinks are held weakly (a closed connection simply stops receiving).
// Thread-safety: thread-safe; one mutex guards the dispatcher state. Sinks are called with the
//   mutex held and must only enqueue (consumer_sink's contract). Cursor reads happen under the
//   mutex on an io thread (blocking storage reads; see doc/broker.md).
// Durability: ack completions report durable outcomes (topic_backend.h); seek and unsubscribe
//   return after the cursor change is durable.

#include "nereus/base/result.h"
#include "nereus/broker/options.h"
#include "nereus/broker/topic_backend.h"

#include <atomic>
#include <boost/asio/any_io_executor.hpp>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

namespace nereus::broker {

enum class sub_type : std::int32_t { exclusive = 0, shared = 1, failover = 2, key_shared = 3 };
const char* to_string(sub_type t) noexcept;

// Where a subscription delivers: implemented by the connection. Every call only enqueues work
// on the connection's strand (or does it at once when already on it); none blocks.
class consumer_sink {
public:
    virtual ~consumer_sink() = default;
    virtual void deliver(std::uint64_t consumer_id,
                         const dispatch_entry& e,
                         std::uint32_t redelivery_count) = 0;
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
    std::uint64_t acks_applied = 0;
    std::uint64_t acks_no_effect = 0;  // already acked / stale / beyond the end
    std::uint64_t messages_dispatched = 0;
    std::uint64_t redeliveries = 0;
};

class subscription : public std::enable_shared_from_this<subscription> {
public:
    subscription(std::string name,
                 std::shared_ptr<subscription_cursor> cursor,
                 boost::asio::any_io_executor ex,
                 const broker_options& options);
    subscription(const subscription&) = delete;
    subscription& operator=(const subscription&) = delete;

    const std::string& name() const { return name_; }
    bool durable() const { return cursor_->durable(); }

    // Attaches a consumer. Errors: consumer_busy (Exclusive taken, or another sub type
    // attached).
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
    [[nodiscard]] result<void> seek(const seek_target& target);
    // Errors: consumer_busy when other consumers are attached.
    [[nodiscard]] result<void> check_unsubscribe(const consumer& c) const;

    std::optional<position> mark_delete_position() const { return cursor_->mark_delete_position(); }
    std::uint64_t backlog() const { return cursor_->backlog(); }
    subscription_stats stats() const;
    std::int64_t permits_of(const consumer& c) const;

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
    // Requires: mu_ held.
    void dispatch_locked();
    consumer* pick_consumer_locked();
    void elect_active_locked();
    void release_pending_locked(const consumer* owner, std::span<const std::uint64_t> only);
    void rewind_locked();
    void dispatch_key_shared_locked();
    void add_pending_locked(std::uint64_t entry, const pending& p);
    std::map<std::uint64_t, pending>::iterator erase_pending_locked(
        std::map<std::uint64_t, pending>::iterator it);
    void deliver_locked(consumer& c, const dispatch_entry& e, std::int32_t slot);
    const std::string name_;
    const std::shared_ptr<subscription_cursor> cursor_;
    boost::asio::any_io_executor ex_;
    const broker_options& options_;
    std::atomic<bool> dispatch_scheduled_{false};

    mutable std::mutex mu_;
    sub_type type_ = sub_type::exclusive;                // guarded by mu_
    std::vector<std::shared_ptr<consumer>> consumers_;   // guarded by mu_, attach order
    std::size_t round_robin_ = 0;                        // guarded by mu_
    std::vector<dispatch_entry> buffer_;                 // read, not yet handed out
    std::size_t buffer_pos_ = 0;                         // guarded by mu_
    std::map<std::uint64_t, pending> pending_;           // guarded by mu_
    std::map<std::uint64_t, std::uint32_t> redelivery_;  // guarded by mu_ (memory only)
    // Key_Shared: which consumer holds unacked entries of a hash slot (per-key order).
    std::map<std::int32_t, slot_hold> slots_;  // guarded by mu_
    // Counters are atomics: ack completions update them on storage threads without the mutex
    // (an io thread may hold mu_ while it waits for storage).
    std::atomic<std::uint64_t> acks_applied_{0};
    std::atomic<std::uint64_t> acks_no_effect_{0};
    std::atomic<std::uint64_t> dispatched_{0};
    std::atomic<std::uint64_t> redeliveries_{0};
};

}  // namespace nereus::broker
