#pragma once

// A client's SEND frame written straight into the frame buffer, without building protobuf
// objects per message (issue 7, produce round 6): BaseCommand{SEND{producer_id, sequence_id,
// num_messages, highest_sequence_id?}} and MessageMetadata{producer_name, sequence_id,
// publish_time, num_messages_in_batch?, highest_sequence_id?}, the producer name's field
// precomputed once per producer, the varints written per message, the 0x0e01 CRC32C over
// metadataSize + metadata + payload.
//
// The bytes are exactly what command_writer::send writes for the same fields through the
// generic protobuf path (a rapidcheck property in tests/unit/proto compares both), including
// its checks: a peer that does not know SEND (unsupported_by_peer), a frame above
// max_frame_size (frame_too_large), and the checksum only for peers that support it (v6+).
// Messages with any other metadata (keys, properties, compression, event time, ...) take the
// generic path; this encoder has no fields for them.
//
// Ownership: owns a copy of the producer name's bytes; borrows the payload for the call only.
// Thread-safety: const member functions are thread-safe; set_producer_name is not.

#include "nereus/base/result.h"
#include "nereus/proto/commands.h"
#include "nereus/proto/frame_encoder.h"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

namespace nereus::proto {

// The MessageMetadata fields the direct path writes (besides the producer name).
struct send_metadata {
    std::uint64_t sequence_id = 0;
    std::uint64_t publish_time_ms = 0;
    std::optional<std::int32_t> num_messages_in_batch;
    std::optional<std::uint64_t> highest_sequence_id;
};

class send_encoder {
public:
    send_encoder() { set_producer_name({}); }
    explicit send_encoder(std::string_view producer_name) { set_producer_name(producer_name); }

    // The name every later SEND carries (MessageMetadata.producer_name).
    void set_producer_name(std::string_view producer_name);

    // Appends one SEND frame to `out` (unchanged on error) and returns its size. `options`
    // gives the peer's protocol version and the frame size limit (its checksum policy is not
    // read: as command_writer::send, a checksum exactly when the peer supports one).
    [[nodiscard]] result<std::size_t> append(frame_buffer& out,
                                             const send_args& command,
                                             const send_metadata& metadata,
                                             std::span<const std::byte> payload,
                                             const encode_options& options) const;

private:
    std::vector<std::byte> name_field_;  // 0x0a, varint length, the name's bytes
};

}  // namespace nereus::proto
