#pragma once

// Value types of the cursor API: offsets, fences, lifecycle states, request targets and the
// outcome of a mutating operation.
//
// Offsets are plain std::uint64_t here (the stream's dense entry numbers). The cursor does not
// depend on storage/, whose strong `storage::offset` the ledger layer converts at its boundary.
// Thread-safety: plain values (thread-compatible).

#include "nereus/meta/types.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>

namespace nereus::cursor {

using offset = std::uint64_t;

// A half-open range [begin, end) of entry offsets.
struct offset_range {
    offset begin = 0;
    offset end = 0;
    friend bool operator==(const offset_range&, const offset_range&) = default;
};

// The lifecycle of one cursor generation (doc/cursor-lifecycle.md). Values are on disk.
enum class lifecycle : std::uint8_t {
    protection_pending = 1,  // created, recreated or reset backwards; the ledger finalizes it
    active = 2,
    deleted = 3,  // tombstone: remembers the generation so a recreate gets a higher one
};
const char* to_string(lifecycle l);

// The fence a request carries: the generation and ackStateEpoch it was issued against (the
// dispatcher stamps every delivery with both). Operations that only need the generation fence
// ignore `epoch`.
struct fence {
    std::uint64_t generation = 0;
    std::uint64_t epoch = 0;
    friend bool operator==(const fence&, const fence&) = default;
};

// How a mutating request ended when it was decided (errors are separate: errc.h).
enum class ack_status : std::uint8_t {
    ok,                // applied and durable (confirmed from the completion on)
    already_acked,     // a duplicate or a cumulative ack at or below MDO: a no-op, nothing written
    stale_generation,  // issued against an older cursor generation: nothing changed
    stale_epoch,       // issued against an older ackStateEpoch: nothing changed
    state_full,        // would take the encoded state over max_state_bytes: nothing changed
};
const char* to_string(ack_status s);

// The outcome of a mutating request.
struct op_result {
    ack_status status = ack_status::ok;
    // The cursor's fence after the request (a reset returns the new epoch here).
    fence current;
    // markDeleteOffset after the request.
    offset mark_delete = 0;
    // reset / clear / skip: the offset the cursor was set to; clear: the end sampled at the CAS.
    offset position = 0;
    // reset to time / to an offset before the first retained one: the target was clamped.
    bool clamped = false;
    // The root record's version after the request (unchanged for a no-op).
    meta::version root_version = 0;
};

// Where a new cursor starts.
struct initial_position {
    enum class kind : std::uint8_t { earliest, latest, at_offset };
    kind where = kind::earliest;
    offset at = 0;  // for at_offset: the first offset to deliver (= the initial MDO)

    static initial_position earliest() { return {kind::earliest, 0}; }
    static initial_position latest() { return {kind::latest, 0}; }
    static initial_position at_offset(offset o) { return {kind::at_offset, o}; }
};

// Where a reset moves the cursor (MDO := the target; ranges, batch maps and redelivery counts
// are cleared; the ackStateEpoch is bumped).
struct reset_target {
    enum class kind : std::uint8_t { to_offset, to_time, earliest, latest };
    kind where = kind::earliest;
    offset at = 0;                  // to_offset: the first offset to deliver again
    std::int64_t publish_time = 0;  // to_time: first entry with publish time >= this

    static reset_target to_offset(offset o) { return {kind::to_offset, o, 0}; }
    static reset_target to_time(std::int64_t t) { return {kind::to_time, 0, t}; }
    static reset_target earliest() { return {kind::earliest, 0, 0}; }
    static reset_target latest() { return {kind::latest, 0, 0}; }
};

// Cursor properties (string -> string).
using property_map = std::map<std::string, std::string>;

// Keys with this prefix are reserved for Nereus; user writes of them are rejected.
inline constexpr std::string_view reserved_property_prefix = "#nereus.internal.";

}  // namespace nereus::cursor
