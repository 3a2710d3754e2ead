#pragma once

// Error codes of the Pulsar wire-format module (style R4).
//
// Two scopes, told apart by where the code shows up:
//  - returned by frame_decoder::decode(): the byte stream itself is broken (sizes, command) and
//    the connection must be closed, as Pulsar does;
//  - stored in frame_view::message_error: the frame boundary is intact but its payload section
//    is bad (checksum, metadata). The stream stays in sync; the broker answers SEND_ERROR and
//    carries on (ChecksumError) or decides to close.
// Encoder codes report a command we refuse to send (strict sending).
// Thread-safety: thread-safe (constants and a stateless category).

#include <system_error>

namespace nereus::proto {

enum class errc {
    success = 0,
    // --- connection-scope decode errors (close the connection) ---
    frame_too_large,       // 4 + totalSize exceeds max_frame_size (also an encoder refusal)
    frame_too_small,       // totalSize < 4: no room for commandSize
    bad_command_size,      // commandSize is 0 or larger than the frame
    bad_command,           // BaseCommand bytes do not parse, or carry no `type`
    missing_command_body,  // a known type without its sub-message (Java asserts on this)
    // --- message-scope errors (frame_view::message_error; the stream is still in sync) ---
    checksum_mismatch,  // CRC32C over metadataSize+metadata+payload differs from the frame's
    bad_magic,          // 0x0eXX where a magic or metadataSize was expected, or 0x0e02 on SEND
    truncated_section,  // a magic section (0x0e01/0x0e02) is cut off by the frame end
    bad_metadata_size,  // metadataSize (or brokerEntryMetadataSize) runs past the frame end
    bad_metadata,       // MessageMetadata (or BrokerEntryMetadata) does not parse
    missing_metadata,   // SEND/MESSAGE without any payload section
    // --- batch payloads and compression ---
    bad_batch,                // a batch entry's size fields run past the payload, or count wrong
    unsupported_compression,  // an unknown codec value
    bad_compressed_payload,   // does not decompress, or not to exactly uncompressed_size bytes
    uncompressed_too_large,   // uncompressed_size above max_uncompressed_size (a bomb guard)
    // --- encoder refusals (strict sending) ---
    missing_required_field,  // a required proto2 field (or the type's sub-message) is unset
    unsupported_by_peer,     // the peer's protocol version does not know this command
    invalid_argument,        // malformed input to a builder (e.g. stored entry starting 0x0e02)
};

const std::error_category& proto_category() noexcept;

inline std::error_code make_error_code(errc e) noexcept {
    return {static_cast<int>(e), proto_category()};
}

}  // namespace nereus::proto

template <>
struct std::is_error_code_enum<nereus::proto::errc> : std::true_type {};
