#pragma once

// nereus::ledger::managed_cursor — one subscription's cursor handle of a managed_ledger.
//
// Durable cursors delegate every ack and fence operation to the cursor module (one versioned
// CAS root per generation, fenced by the ledger's owner session). Non-durable cursors (Pulsar
// readers) keep the same cursor_state in memory only: they are not protected by the floor, and
// a read that finds their position trimmed skips forward and reports the skipped range.
//
// Reads go through an IN-MEMORY read position (never persisted): it starts at MDO, restarts at
// MDO whenever the fence (generation, epoch) changes or rewind() is called, skips acked ranges
// and fully acked batch entries, and hands partly acked batches over with their remaining-bit
// map. After a restart reading starts again at MDO, so nothing unacked is lost.
//
// Every operation runs managed_ledger::admit first (capability + lifecycle), then the cursor's
// own lifecycle/fence checks; a rejection changes nothing and performs no I/O.
//
// Ownership: holds its ledger alive. Thread-safety: thread-safe. Async completions run on the
//   metadata store's callback thread (or inline when rejected before I/O); blocking calls must
//   not be made from it.
// Durability: as cursor.h for durable cursors; none for non-durable ones.

#include "nereus/base/result.h"
#include "nereus/cursor/cursor.h"
#include "nereus/ledger/types.h"
#include "nereus/storage/read_batch.h"

#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace nereus::ledger {

class managed_ledger;
struct cursor_entry;

struct delivered_entry {
    message_id id;  // batch_index -1
    offset at = 0;
    std::int64_t publish_time = 0;
    std::uint32_t batch_size = 1;
    // Partly acked batch: the indices still to deliver. nullopt: deliver the whole entry.
    std::optional<cursor::batch_bits> remaining;
    bytes_view payload;   // the user payload (without the entry header); valid while the
                          // read_result lives
    cursor::fence fence;  // stamp acks with it
};

struct read_result {
    std::vector<delivered_entry> entries;
    // Non-durable cursors only: [from, to) was trimmed before it was read and is skipped.
    std::optional<cursor::offset_range> skipped;
    std::vector<storage::read_batch> buffers;  // own the payload bytes
};

class managed_cursor {
public:
    using op_callback = std::function<void(result<cursor::op_result>)>;

    struct creation {
        offset requested = 0;
        offset started_at = 0;
        bool clamped = false;  // requested < start(): started at start() instead (reported)
    };

    managed_cursor(std::shared_ptr<managed_ledger> ledger, std::shared_ptr<cursor_entry> e);
    managed_cursor(const managed_cursor&) = delete;
    managed_cursor& operator=(const managed_cursor&) = delete;
    managed_cursor(managed_cursor&&) = delete;
    managed_cursor& operator=(managed_cursor&&) = delete;
    ~managed_cursor();

    [[nodiscard]] const std::string& name() const;
    [[nodiscard]] bool durable() const;
    [[nodiscard]] creation created() const;

    // ---- reads of the confirmed state ----
    [[nodiscard]] cursor::fence current_fence() const;
    [[nodiscard]] cursor::lifecycle life() const;
    [[nodiscard]] offset mark_delete() const;
    [[nodiscard]] bool is_acked(offset entry) const;
    [[nodiscard]] std::optional<cursor::batch_bits> remaining(offset entry) const;
    // Entries in [MDO, end) not fully acked: exact at every step.
    [[nodiscard]] std::uint64_t backlog() const;
    [[nodiscard]] cursor::property_map properties() const;
    [[nodiscard]] cursor::cursor_snapshot snapshot() const;

    // ---- dispatch ----
    // Up to `max_entries` undelivered, not fully acked entries from the read position.
    // Errors: not_admitted, storage errors (a durable cursor never reads trimmed data).
    [[nodiscard]] result<read_result> read(std::size_t max_entries,
                                           std::size_t max_bytes = std::size_t{4} << 20);
    // read() for a thread that must not wait (a broker io thread): the same entries read()
    // would return (or a prefix of them), or std::errc::operation_would_block (storage's
    // errc::would_block) when anything on the way could wait — a storage read that needs the
    // disk (stream_store::read_nowait), a mutex that is busy (the read position's, the cursor
    // state's, which a spilled commit holds across a snapshot write), or a trimmed read
    // position of a non-durable cursor (its skip is reported by read()). A would-block
    // answer changes nothing: the read position stays where it was. Reads no metadata and no
    // snapshot. Other errors as read(), also without moving the read position.
    [[nodiscard]] result<read_result> try_read(std::size_t max_entries,
                                               std::size_t max_bytes = std::size_t{4} << 20);
    // Redeliver: the read position goes back to MDO.
    void rewind();
    [[nodiscard]] offset read_position() const;
    // Where the next read() starts, normalised as read() does (back to MDO after a fence
    // change, never below MDO); and moving the read position forward to at least `to` (the
    // broker's compacted reads deliver entries below `to` from the compacted view). In memory.
    [[nodiscard]] offset next_read_position();
    void skip_read_to(offset to);
    // A consumer is attached (connected cursors are never expired as idle).
    void set_connected(bool connected);

    // ---- redelivery counts ----
    // Records that `entry` was redelivered (a nack / REDELIVER, or returned by a consumer that
    // closed or disconnected); call it only then, never per dispatch. Durable cursors keep the
    // count in memory and write it with the cursor's next CAS (an ack, a flush, close) — no
    // metadata write of its own — so after a crash a count may lag, never run ahead.
    // Non-durable cursors keep it in memory. Ignored for acked entries. A reset clears counts.
    void record_redelivery(offset entry);
    // The entry's redelivery count: persisted plus recorded in this process (including counts
    // whose CAS is still in flight). 0 for acked entries.
    [[nodiscard]] std::uint32_t redelivery_count(offset entry) const;

    // ---- acks (async; fence: generation + epoch) ----
    void ack(cursor::fence f, offset entry, op_callback done);
    // Whole-entry ranges [first, end) (the ids of one ACK command) in one submission, so a
    // durable cursor commits them in one CAS; done(i, r) once per range, as ack() would.
    void ack_ranges(std::span<const cursor::cursor::fenced_range> ranges,
                    cursor::cursor::range_callback done);
    void ack_batch_index(cursor::fence f, offset entry, cursor::batch_bits acked, op_callback done);
    void ack_cumulative(cursor::fence f,
                        offset entry,
                        std::optional<std::uint32_t> batch_index,
                        std::uint32_t batch_size,
                        cursor::property_map props,
                        op_callback done);
    [[nodiscard]] result<cursor::op_result> ack_sync(cursor::fence f, offset entry);
    [[nodiscard]] result<cursor::op_result> ack_batch_index_sync(cursor::fence f,
                                                                 offset entry,
                                                                 cursor::batch_bits acked);
    [[nodiscard]] result<cursor::op_result> ack_cumulative_sync(
        cursor::fence f,
        offset entry,
        std::optional<std::uint32_t> batch_index = {},
        std::uint32_t batch_size = 0,
        cursor::property_map props = {});
    // Transactional acks are unsupported: always errc::unsupported, nothing written.
    [[nodiscard]] result<cursor::op_result> ack_in_transaction(std::uint64_t txn_id,
                                                               cursor::fence f,
                                                               offset entry);

    // ---- epoch-publishing operations (blocking) ----
    // A backward reset is protected from before its CAS and finalized (floor, activate) before
    // this returns. A target below start() is clamped and reported (op_result::clamped).
    [[nodiscard]] result<cursor::op_result> reset(cursor::reset_target target);
    [[nodiscard]] result<cursor::op_result> clear_backlog();
    [[nodiscard]] result<cursor::op_result> skip(std::uint64_t n);

    // ---- properties (blocking) ----
    [[nodiscard]] result<cursor::op_result> set_properties(cursor::property_map props);
    [[nodiscard]] result<cursor::op_result> put_property(std::string key, std::string value);
    [[nodiscard]] result<cursor::op_result> remove_property(std::string key);

private:
    friend class managed_ledger;
    using nd_op = std::function<result<cursor::op_result>(cursor::fence)>;
    void submit(
        operation op, cursor::fence f, cursor::state_op sop, bool epoch_fenced, op_callback done);
    result<cursor::op_result> nd_apply(cursor::fence f,
                                       const cursor::state_op& sop,
                                       bool epoch_fenced);
    result<cursor::op_result> fence_op(
        operation op,
        std::function<void(cursor::cursor&, cursor::fence, cursor::cursor::op_callback)> durable,
        const nd_op& non_durable);
    op_callback wrap(op_callback done) const;

    std::shared_ptr<managed_ledger> ledger_;
    std::shared_ptr<cursor_entry> e_;
};

}  // namespace nereus::ledger
