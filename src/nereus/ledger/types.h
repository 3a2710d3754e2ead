#pragma once

// Value types of the ledger API: message ids, options, capabilities, retention policy, the
// ledger's lifecycle state and the operations the admission check knows.
//
// Thread-safety: plain values (thread-compatible).

#include "nereus/cursor/batch_bits.h"
#include "nereus/cursor/options.h"
#include "nereus/cursor/types.h"
#include "nereus/meta/types.h"

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace nereus::meta {
class store;
}
namespace nereus::objects {
class object_store;
}
namespace nereus::storage {
class stream_store;
}

namespace nereus::ledger {

using offset = cursor::offset;

// Pulsar's MessageIdData: ledgerId names the stream incarnation, entryId is the stream offset,
// batch_index the message inside a batch entry (-1: the whole entry). A batch index is never a
// stream offset.
struct message_id {
    std::uint64_t ledger_id = 0;
    std::uint64_t entry_id = 0;
    std::int32_t batch_index = -1;
    friend bool operator==(const message_id&, const message_id&) = default;
};

// What the ledger works with. Every pointer must outlive the ledger and its cursors. `owner` is
// the broker's owner session (one per process, kept alive by the caller; a restarted process
// opens a new one — with the embedded store the old one is expired when the store is opened).
struct ledger_env {
    meta::store* meta = nullptr;
    objects::object_store* objects = nullptr;
    storage::stream_store* streams = nullptr;
    meta::session_id owner = meta::no_session;
};

// Retention of CONSUMED data, i.e. only below the protection floor (doc/ledger.md).
// An entry below the floor is removed by a trim when it is past `time_ms` (its publish time is
// older than now - time_ms) OR outside `size_bytes` (the newest size_bytes of the stream are
// kept). -1 = unlimited for that rule. A slow cursor is never passed unless
// `backlog_limit_entries` > 0: then a trim first evicts every durable cursor whose MDO lies more
// than that many entries behind the end (a fenced reset, epoch + 1, the skipped range recorded
// durably in the retention root and reported).
struct retention_policy {
    std::int64_t time_ms = 0;
    std::int64_t size_bytes = 0;
    std::uint64_t backlog_limit_entries = 0;
    friend bool operator==(const retention_policy&, const retention_policy&) = default;
};

// Switches for the advanced operations (doc/ledger.md, admission). Everything Nereus supports is
// on by default; a broker may switch features off per namespace. Transactions, replicated
// subscriptions and delayed delivery are not capabilities: they are always `unsupported`.
struct capabilities {
    bool reset = true;  // reset / seek (to offset, time, earliest, latest)
    bool clear_backlog = true;
    bool skip = true;
    bool delete_cursor = true;  // delete and recreate
    bool property_writes = true;
    bool non_durable_cursors = true;
    bool batch_index_ack = true;
    bool retention_changes = true;
};

// The lifecycle of one managed_ledger handle (doc/ledger.md).
enum class ledger_state : std::uint8_t {
    opening,   // open_writable is running its recovery steps
    writable,  // serving
    fenced,    // the owner session failed a check: nothing is confirmed any more
    crashed,   // tests: the fault hook stopped an operation; drop the handle and reopen
    closed,
};
const char* to_string(ledger_state s);

// The operations the admission check (managed_ledger::admit) knows.
enum class operation : std::uint8_t {
    append,
    read,
    open_durable_cursor,
    open_non_durable_cursor,
    ack,
    ack_cumulative,
    ack_batch_index,
    reset,
    clear_backlog,
    skip,
    property_write,
    delete_cursor,
    trim,
    set_retention,
    expire_idle,
    close,
};
const char* to_string(operation op);

// Options of one append. Delayed delivery and transactions are unsupported: setting either
// fails the append with errc::unsupported before anything is written.
struct append_options {
    std::int64_t publish_time = 0;           // broker timestamp (ms); reset-by-time searches it
    std::uint32_t batch_size = 1;            // messages in this entry (a Pulsar batch), >= 1
    std::optional<std::int64_t> deliver_at;  // delayed delivery: unsupported
    std::optional<std::uint64_t> txn_id;     // transactional publish: unsupported
    // The CRC32C of the payload's last tail_len bytes, verified against them by the caller (a
    // SEND's checksum): the store combines it instead of checksumming those bytes again
    // (storage::stream_store::verified_tail). 0 = none.
    std::uint32_t tail_crc = 0;
    std::uint32_t tail_len = 0;
};

// Options of one subscription's cursor.
struct subscription_options {
    // Non-durable (a Pulsar Reader): state in memory only, NOT protected by the floor (a trim
    // may pass it; its next read then skips forward and reports the skipped range).
    bool durable = true;
    bool replicated = false;        // replicated subscriptions: unsupported
    bool transactional = false;     // transactional acks: unsupported
    bool delayed_delivery = false;  // delayed delivery tracker: unsupported
};

struct ledger_options {
    bool create_if_missing = true;
    cursor::cursor_options cursor;  // spill threshold, state bound, key prefix
    retention_policy retention;     // used when the topic is created
    capabilities caps;
    // Entries per block of the in-memory sparse publish-time index (doc/ledger.md).
    std::uint32_t time_index_block = 64;
    // Milliseconds since the epoch; tests inject a clock (retention age, idle expiry).
    std::function<std::int64_t()> clock;
    // Idle expiry counts activity from no earlier than this long after the ledger was opened,
    // so a new owner never expires a subscription from a stale persisted activity time.
    std::chrono::milliseconds idle_grace{std::chrono::minutes(5)};
    // Tests: called at every persistence step with its name (doc/ledger.md lists them);
    // returning true "crashes" there: the operation stops and returns errc::injected_crash.
    std::function<bool(std::string_view step)> fault_hook;
};

// One forced advance of a cursor by retention: an eviction of a slow cursor by the backlog
// policy, or a cursor found below a trim target / the logical start (recorded durably in the
// retention root before the cursor is touched, reported, kept in the history).
struct eviction {
    std::string cursor;
    std::uint64_t generation = 0;
    offset from = 0;  // MDO before
    offset to = 0;    // MDO after: [from, to) was skipped without being acked
    // The cursor's ackStateEpoch when the eviction was recorded. The eviction publishes a later
    // one, so an ack stamped with this epoch (issued before the eviction) never lands; a cursor
    // still at this epoch after its advance has not had its epoch bump yet (the open finishes it).
    std::uint64_t epoch = 0;
    friend bool operator==(const eviction&, const eviction&) = default;
};

struct trim_report {
    offset start_before = 0;    // logical start before the pass
    offset start_after = 0;     // logical start after the pass (= the trim target)
    offset physical_first = 0;  // first offset still stored (whole segments only are removed)
    offset floor = 0;           // the finalized protection floor the pass used
    std::vector<eviction> evicted;
};

struct ledger_info {
    std::uint64_t ledger_id = 0;
    std::uint64_t stream_id = 0;
    offset start = 0;           // logical first offset: nothing below is readable by cursors
    offset physical_first = 0;  // first offset the stream log still stores
    offset end = 0;             // next offset an append gets
    offset floor = 0;           // finalized protection floor
    std::uint64_t claim_epoch = 0;
    retention_policy retention;
    std::vector<eviction> eviction_history;  // the most recent evictions (bounded)
};

}  // namespace nereus::ledger
