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

#include "nereus/base/result.h"

#include <compare>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
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
    // sent it; shared by every delivery of this entry.
    std::shared_ptr<const std::vector<std::byte>> data;
    ack_fence fence;

    // Messages this entry will count against a consumer's permits.
    std::uint32_t message_count() const noexcept;
};

// How an ack ended when it did not fail. no_effect: already acked or beyond the end — the
// client is told success and the subscription counts it. An ack stamped with a stale cursor
// generation or ackStateEpoch (issued before a seek, clear or recreate) is not an outcome but
// an error: the client must not be told it counted (doc/cursor-semantics.md §1).
enum class ack_outcome { applied, no_effect };

using append_callback = std::function<void(result<position>)>;
using ack_callback = std::function<void(result<ack_outcome>)>;

struct append_info {
    std::int64_t publish_time = 0;  // ms; used by seek-by-time
    std::uint32_t batch_size = 1;   // messages in the entry (num_messages_in_batch or 1)
};

struct subscription_start {
    enum class kind { latest, earliest, at_entry };
    kind where = kind::latest;
    std::uint64_t entry_id = 0;  // at_entry: first entry to deliver
};

struct seek_target {
    enum class kind { to_entry, to_time, earliest, latest };
    kind where = kind::earliest;
    std::uint64_t entry_id = 0;     // to_entry: first entry to deliver again
    std::int64_t publish_time = 0;  // to_time: first entry with publish time >= this
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
    // The read position goes back to the mark-delete position (redelivery).
    virtual void rewind() = 0;

    // Acks (async). `done` runs once the outcome is durable (applied) or decided (no_effect).
    virtual void ack(ack_fence f, std::uint64_t entry_id, ack_callback done) = 0;
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

    // Flushes and releases the topic (graceful stop).
    [[nodiscard]] virtual result<void> close() = 0;
};

class topic_backend {
public:
    virtual ~topic_backend() = default;
    // Opens a topic by its full name (persistent://tenant/ns/topic), creating it if `create`.
    // Errors: proto::error_kind::topic_not_found when missing and !create, storage errors.
    [[nodiscard]] virtual result<std::shared_ptr<topic_store>> open_topic(const std::string& name,
                                                                          bool create) = 0;
    // Full names of every known topic.
    virtual std::vector<std::string> topic_names() const = 0;
};

}  // namespace nereus::broker
