#pragma once

// Direct scanner for a MESSAGE frame (a consumer's receive hot path): the BaseCommand, the
// 0x0e01 checksum and the MessageMetadata fields a consumer reads, without protobuf.
//
// scan_message_frame() reads only the common shape: a complete MESSAGE frame at the front of
// the input whose command has consumer_id, message_id {ledgerId, entryId, partition,
// batch_index, batch_size} and redelivery_count (no ack_set, epoch or unknown field), with a
// 0x0e01 section whose CRC32C matches (always verified), no broker-entry metadata, and a
// MessageMetadata of scalar and string/bytes fields. On anything else (an incomplete frame, a
// size problem, another command, a checksum mismatch, an unusual field) it returns nullopt and
// the caller runs frame_decoder::decode(), which then decides, reports errors and asks for
// more bytes. So the scanner never accepts a frame the generic decoder would reject or flag,
// and for every frame it accepts it reports the values the generic decoder's protobuf parse
// would (last occurrence wins, int32 truncation); tests/unit/proto/message_scan_test.cc
// compares the two.
//
// Ownership: pure functions over the caller's bytes; the spans view the input.
// Thread-safety: thread-safe. Allocation: none.

#include "nereus/proto/frame_decoder.h"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

namespace nereus::proto {

// CommandMessage fields a consumer reads (defaults as in pulsar_api.proto).
struct message_fields {
    std::uint64_t consumer_id = 0;
    std::uint64_t ledger_id = 0;
    std::uint64_t entry_id = 0;
    std::int32_t partition = -1;
    std::int32_t batch_index = -1;
    std::uint32_t redelivery_count = 0;
};

// MessageMetadata fields a consumer reads.
struct message_metadata_fields {
    std::uint64_t publish_time = 0;
    std::int32_t num_messages_in_batch = 1;
    bool has_num_messages_in_batch = false;
    std::int32_t compression = 0;  // pb::CompressionType (NONE = 0)
};

// One MESSAGE frame read by the scanner.
struct message_frame {
    std::size_t size = 0;  // wire bytes (4 + totalSize): drop these from the buffer
    message_fields message;
    message_metadata_fields metadata;
    std::span<const std::byte> metadata_bytes;  // serialized MessageMetadata
    std::span<const std::byte> payload;         // message or batch payload
};

// A serialized BaseCommand of type MESSAGE of the shape above.
std::optional<message_fields> scan_message_command(std::span<const std::byte> bytes) noexcept;

// A serialized MessageMetadata of scalar and string/bytes fields only (no properties,
// encryption keys or unknown fields; compression a known CompressionType).
std::optional<message_metadata_fields> scan_message_metadata(
    std::span<const std::byte> bytes) noexcept;

// The complete MESSAGE frame at the front of `input`, or nullopt (see above). Frames larger than
// `max_frame_size` (4 + totalSize) are declined.
std::optional<message_frame> scan_message_frame(std::span<const std::byte> input,
                                                std::uint32_t max_frame_size) noexcept;

}  // namespace nereus::proto
