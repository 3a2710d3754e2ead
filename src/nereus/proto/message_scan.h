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
// scan_consumer_metadata() is the client library's counterpart (decoder_options::fast_message):
// it reads every MessageMetadata field a received message exposes (producer name, sequence id,
// publish and event time, partition and ordering key, properties, compression, uncompressed
// size, batch count) and declines the rest (encryption keys, unknown fields, a wire-type
// mismatch, a KeyValue with other fields) to the protobuf parse, by the same rules.
//
// Ownership: pure functions over the caller's bytes; the spans and string_views view the
//   input (scan_consumer_metadata's properties: the caller's vector).
// Thread-safety: thread-safe. Allocation: none (scan_consumer_metadata: none once the caller's
//   property vector has the capacity).

#include "nereus/proto/frame_format.h"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

namespace nereus::proto {

// CommandMessage fields a consumer reads (defaults as in pulsar_api.proto).
struct message_fields {
    std::uint64_t consumer_id = 0;
    std::uint64_t ledger_id = 0;
    std::uint64_t entry_id = 0;
    std::int32_t partition = -1;
    std::int32_t batch_index = -1;
    std::uint32_t redelivery_count = 0;
    // CommandMessage.ack_set (a partly acknowledged batch: 1 = still to deliver). Only the
    // generic parse fills it (the scanner declines ack_set); views the decoder's command.
    std::span<const std::int64_t> ack_set = {};
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

// One MessageMetadata.properties entry (KeyValue), viewing the metadata bytes or the decoder's
// parsed message.
struct property_view {
    std::string_view key;
    std::string_view value;
};

// MessageMetadata fields a client's received message exposes (defaults as in
// pulsar_api.proto). Filled by scan_consumer_metadata or, on the generic path, from protobuf's
// parse (frame_decoder with fast_message); either way the same values.
struct consumer_metadata_fields {
    std::string_view producer_name;
    std::uint64_t sequence_id = 0;
    std::uint64_t publish_time = 0;
    std::uint64_t event_time = 0;
    bool has_event_time = false;
    std::string_view partition_key;
    bool has_partition_key = false;
    std::string_view ordering_key;
    bool has_ordering_key = false;
    std::int32_t compression = 0;  // pb::CompressionType (NONE = 0)
    std::uint32_t uncompressed_size = 0;
    std::int32_t num_messages_in_batch = 1;
    bool has_num_messages_in_batch = false;
    std::span<const property_view> properties;
};

// A serialized BaseCommand of type MESSAGE of the shape above.
std::optional<message_fields> scan_message_command(std::span<const std::byte> bytes) noexcept;

// A serialized MessageMetadata of scalar and string/bytes fields only (no properties,
// encryption keys or unknown fields; compression a known CompressionType).
std::optional<message_metadata_fields> scan_message_metadata(
    std::span<const std::byte> bytes) noexcept;

// A serialized MessageMetadata of the fields consumer_metadata_fields holds plus the skippable
// scalar and string/bytes fields, properties being KeyValues of key (1) and value (2) only.
// The properties are appended to `properties` (cleared first); the result views it.
std::optional<consumer_metadata_fields> scan_consumer_metadata(
    std::span<const std::byte> bytes, std::vector<property_view>& properties);

// The complete MESSAGE frame at the front of `input`, or nullopt (see above). Frames larger than
// `max_frame_size` (4 + totalSize) are declined.
std::optional<message_frame> scan_message_frame(std::span<const std::byte> input,
                                                std::uint32_t max_frame_size) noexcept;

}  // namespace nereus::proto
