#pragma once

// Builds Pulsar frames into a caller-provided, reusable byte buffer (style R7).
//
// Every append_* function appends exactly one frame to `out` (the buffer grows only when its
// capacity is exceeded, so a per-connection buffer that is cleared after each write stops
// allocating in steady state) and returns the frame's size. On error `out` is left unchanged.
//
// Sending is strict: a command whose required fields (proto2 `required`) or whose type's
// sub-message are missing is refused (missing_required_field), so is a command the peer's
// protocol version does not know (unsupported_by_peer, see protocol_version.h), and a frame
// above max_frame_size (frame_too_large).
//
// Ownership: borrows every argument for the duration of the call only.
// Thread-safety: thread-safe functions (no shared state); `out` is the caller's.

#include "nereus/base/result.h"
#include "nereus/proto/frame_format.h"
#include "nereus/proto/protocol_version.h"

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace nereus::proto {

namespace pb {
class BaseCommand;
class BrokerEntryMetadata;
class MessageMetadata;
}  // namespace pb

using frame_buffer = std::vector<std::byte>;

// What to do with the 0x0e01 checksum section of a payload frame.
enum class checksum_policy : std::uint8_t {
    keep,    // stored entries: send as stored; new payloads: add a checksum
    ensure,  // always send 0x0e01 + CRC32C (computing one if the entry has none) — pulsar-flex
             // needs it on MESSAGE
    strip,   // never send it (consumers below protocol v11, producers to brokers below v6)
};

struct encode_options {
    // The peer's protocol version; commands it does not know are refused.
    std::int32_t peer_protocol_version = latest_protocol_version;
    // Largest frame (4 + totalSize) we may send.
    std::uint32_t max_frame_size = default_max_frame_size;
    checksum_policy checksum = checksum_policy::ensure;
    // Optional broker-entry metadata (0x0e02) in front of a MESSAGE payload. Only set it when
    // send_broker_entry_metadata() allows it for this client.
    const pb::BrokerEntryMetadata* broker_entry_metadata = nullptr;
};

// [totalSize][commandSize][BaseCommand]
[[nodiscard]] result<std::size_t> append_simple_frame(frame_buffer& out,
                                                      const pb::BaseCommand& command,
                                                      const encode_options& options = {});

// [totalSize][commandSize][BaseCommand][0x0e01 crc]?[metadataSize][MessageMetadata][payload]
// (client SEND, or a MESSAGE built from parts). checksum_policy::strip omits the checksum.
[[nodiscard]] result<std::size_t> append_payload_frame(frame_buffer& out,
                                                       const pb::BaseCommand& command,
                                                       const pb::MessageMetadata& metadata,
                                                       std::span<const std::byte> payload,
                                                       const encode_options& options = {});

// [totalSize][commandSize][BaseCommand][0x0e02 bem]?[0x0e01 crc]?[stored headers_and_payload]
// `stored` is a frame_view::headers_and_payload kept verbatim (with or without its own 0x0e01
// section): the broker's MESSAGE dispatch. The checksum policy adds, keeps or strips 0x0e01;
// an added CRC is computed over the stored bytes. A `stored` starting with 0x0e02 is refused
// (invalid_argument).
[[nodiscard]] result<std::size_t> append_stored_payload_frame(frame_buffer& out,
                                                              const pb::BaseCommand& command,
                                                              std::span<const std::byte> stored,
                                                              const encode_options& options = {});

// The bytes a SEND's payload section stores: [0x0e01 crc]?[metadataSize][metadata][payload].
// Appended to `out` (e.g. an entry being prepared without a network frame).
[[nodiscard]] result<std::size_t> append_headers_and_payload(frame_buffer& out,
                                                             const pb::MessageMetadata& metadata,
                                                             std::span<const std::byte> payload,
                                                             bool with_checksum = true);

}  // namespace nereus::proto
