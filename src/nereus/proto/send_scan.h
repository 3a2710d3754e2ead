#pragma once

// Direct scanners for the protobuf messages of every produced message: a SEND's BaseCommand
// and its MessageMetadata (the broker's produce hot path), and the SEND_RECEIPT's BaseCommand
// (a producer's, e.g. nereus perf's: decoder_options::fast_send_receipt).
//
// Each scanner reads only the common shapes and the fields the broker uses; on anything else
// (an unknown or nested field, a wire-type mismatch, a duplicated sub-message, a 10-byte varint,
// a truncated field) it returns nullopt and the caller runs the generic protobuf parse, which
// then decides acceptance or rejection. So a scanner never accepts bytes that protobuf would
// reject, and for every input it accepts it reports the values protobuf's ParsePartial would
// (same last-occurrence-wins rule, same int32 truncation); the property tests in
// tests/unit/proto/send_scan_test.cc and fuzz/frame_decoder_fuzz.cc compare the two.
//
// Ownership: pure functions over the caller's bytes. Thread-safety: thread-safe.
// Allocation: none.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

namespace nereus::proto {

// CommandSend fields the broker reads (defaults as in pulsar_api.proto).
struct send_fields {
    std::uint64_t producer_id = 0;
    std::uint64_t sequence_id = 0;
    std::int32_t num_messages = 1;
    std::uint64_t highest_sequence_id = 0;
    bool has_highest_sequence_id = false;
};

// MessageMetadata fields the broker reads.
struct metadata_fields {
    std::uint64_t publish_time = 0;
    std::int32_t num_messages_in_batch = 1;
    bool has_num_messages_in_batch = false;
};

// CommandSendReceipt fields (defaults as in pulsar_api.proto; message_id's batch fields other
// than batch_index are not read: a receipt carrying them is left to the generic parse).
struct send_receipt_fields {
    std::uint64_t producer_id = 0;
    std::uint64_t sequence_id = 0;
    std::uint64_t highest_sequence_id = 0;
    bool has_message_id = false;
    std::uint64_t ledger_id = 0;
    std::uint64_t entry_id = 0;
    std::int32_t partition = -1;
    std::int32_t batch_index = -1;
};

// A serialized BaseCommand of type SEND with one `send` sub-message of scalar fields only.
std::optional<send_fields> scan_send_command(std::span<const std::byte> bytes) noexcept;

// A serialized MessageMetadata made of scalar and string/bytes fields only (no properties,
// encryption keys or unknown fields).
std::optional<metadata_fields> scan_metadata(std::span<const std::byte> bytes) noexcept;

// A serialized BaseCommand of type SEND_RECEIPT with one `send_receipt` sub-message of scalar
// fields and at most one message_id of ledgerId, entryId, partition and batch_index.
std::optional<send_receipt_fields> scan_send_receipt_command(
    std::span<const std::byte> bytes) noexcept;

}  // namespace nereus::proto
