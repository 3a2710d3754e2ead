#pragma once

// Direct scanner for a plain ACK command (the broker's ack hot path: every consumed message is
// acknowledged through one), without protobuf. Not switched on in the broker yet
// (decoder_options::fast_ack): see doc/perf.md, "Consume + ack path, round 5".
//
// scan_ack_command() reads only the common shape: a BaseCommand of type ACK with one `ack`
// sub-message of consumer_id, ack_type (Individual or Cumulative), request_id and message ids
// of ledgerId, entryId and partition only. Anything else (ack_set, batch_index, batch_size or
// first_chunk_message_id in an id; validation_error, properties, transaction ids; an unknown
// field, a wire-type mismatch, an unknown ack_type, a repeated `ack`, a 10-byte varint, a
// truncated field) returns nullopt, and the caller runs the generic protobuf parse, which then
// decides acceptance or rejection. So the scanner never accepts bytes protobuf's ParsePartial
// would reject, and for what it accepts it reports the values protobuf would (last occurrence
// wins, int32 truncation); tests/unit/proto/ack_scan_test.cc compares the two.
//
// Ownership: a pure function over the caller's bytes; the ids are written to the caller's
//   vector (cleared first), which the result views.
// Thread-safety: thread-safe. Allocation: none once the caller's vector has the capacity.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

namespace nereus::proto {

// One acknowledged message id of a plain ACK.
struct ack_entry {
    std::uint64_t ledger_id = 0;
    std::uint64_t entry_id = 0;
    std::int32_t partition = -1;
};

// CommandAck fields of a plain ACK (defaults as in pulsar_api.proto).
struct ack_fields {
    std::uint64_t consumer_id = 0;
    bool cumulative = false;  // ack_type == Cumulative
    bool has_request_id = false;
    std::uint64_t request_id = 0;
    std::span<const ack_entry> ids;
};

// A serialized BaseCommand of type ACK of the shape above.
std::optional<ack_fields> scan_ack_command(std::span<const std::byte> bytes,
                                           std::vector<ack_entry>& ids);

}  // namespace nereus::proto
