#pragma once

// state_op — one resolved change to a cursor's ack state, the unit of a delta record
// (doc/format/cursor.md). Every op is deterministic given the state it applies to, so replaying
// the ops of a delta on the snapshot it follows rebuilds exactly the committed state.
// Fence-changing operations (reset, clear backlog, skip, create, delete) are never ops: they
// rewrite the whole state (inline root or new snapshot) and bump the epoch or generation.
//
// Thread-safety: plain values (thread-compatible).

#include "nereus/cursor/batch_bits.h"
#include "nereus/cursor/types.h"

#include <cstdint>
#include <optional>
#include <string>
#include <variant>

namespace nereus::cursor {

// Individual acks of the whole entries [begin, end).
struct ack_range_op {
    offset begin = 0;
    offset end = 0;
    friend bool operator==(const ack_range_op&, const ack_range_op&) = default;
};

// Batch-index ack: the indices set in `acked` of entry `entry` (acked.size() = batch size).
struct ack_batch_op {
    offset entry = 0;
    batch_bits acked;
    friend bool operator==(const ack_batch_op&, const ack_batch_op&) = default;
};

// Cumulative ack: every entry below `entry`, plus entry itself when `prefix_end` is empty,
// else only its indices [0, prefix_end) of a batch of `batch_size`. `props` are put into the
// property map in the same change (attached properties, dedup style).
struct ack_cumulative_op {
    offset entry = 0;
    std::optional<std::uint32_t> prefix_end;
    std::uint32_t batch_size = 0;
    property_map props;
    friend bool operator==(const ack_cumulative_op&, const ack_cumulative_op&) = default;
};

struct put_property_op {
    std::string key;
    std::string value;
    friend bool operator==(const put_property_op&, const put_property_op&) = default;
};

struct remove_property_op {
    std::string key;
    friend bool operator==(const remove_property_op&, const remove_property_op&) = default;
};

// Replaces the whole property map.
struct replace_properties_op {
    property_map props;
    friend bool operator==(const replace_properties_op&, const replace_properties_op&) = default;
};

// Sets the persisted redelivery count of an unacked entry (absolute, not an increment, so a
// replay is idempotent).
struct redelivery_op {
    offset entry = 0;
    std::uint32_t count = 0;
    friend bool operator==(const redelivery_op&, const redelivery_op&) = default;
};

using state_op = std::variant<ack_range_op,
                              ack_batch_op,
                              ack_cumulative_op,
                              put_property_op,
                              remove_property_op,
                              replace_properties_op,
                              redelivery_op>;

}  // namespace nereus::cursor
