#pragma once

// Incremental decoder of Pulsar frames over a connection's receive buffer (style R7).
//
// Feed decode() the unconsumed bytes of the receive buffer. It either asks for more bytes,
// returns one complete frame as views into that buffer (plus the parsed BaseCommand and
// MessageMetadata, owned by the decoder), or fails with a connection-scope errc (see errc.h).
// The caller then drops frame_view::size bytes from the front of its buffer and calls again.
//
// Parsing is lenient: unknown fields and unknown enum values are tolerated, missing required
// fields get their defaults (ParsePartial, as pulsar-flex omits some), an unknown command type is
// returned as a frame with known_type == false, and bytes after a non-payload command are
// ignored. Problems inside the payload section of SEND/MESSAGE (checksum, metadata) are reported
// per message in frame_view::message_error; the stream stays in sync.
//
// Ownership: views point into the caller's buffer; command()/metadata() point into the decoder.
//   Both stay valid until the next decode() call or until the buffer changes.
// Thread-safety: thread-compatible; one decoder per connection (strand-confined in the broker).
// Allocation: the protobuf messages are allocated once per decoder and reused; protobuf keeps
//   their sub-messages and string capacity across Clear(), so steady-state decoding of
//   recurring command shapes does not allocate.

#include "nereus/base/result.h"
#include "nereus/proto/ack_scan.h"
#include "nereus/proto/command_type.h"
#include "nereus/proto/frame_format.h"
#include "nereus/proto/message_scan.h"
#include "nereus/proto/send_scan.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <system_error>
#include <vector>

namespace nereus::proto {

namespace pb {
class BaseCommand;
class MessageMetadata;
}  // namespace pb

struct decoder_options {
    // Largest frame accepted on the wire, counting the totalSize field (4 + totalSize).
    std::uint32_t max_frame_size = default_max_frame_size;
    // Verify the CRC32C of payload frames that carry one (0x0e01). Off: checksum_state::unchecked.
    bool verify_checksum = true;
    // Parse MessageMetadata of SEND/MESSAGE (the broker needs num_messages_in_batch, keys and
    // publish_time). Off: metadata() is null, the views are still set.
    bool parse_metadata = true;
    // SEND frames (the broker's produce path): read the command and the metadata with the
    // direct scanners of send_scan.h, falling back to the generic parse for any shape they do
    // not read. A SEND so decoded has no command() / metadata() objects: read
    // frame_view::send and frame_view::metadata_values instead. Off: the generic parse only.
    bool fast_send = false;
    // SEND_RECEIPT frames (a producer's hot path): read with scan_send_receipt_command,
    // falling back to the generic parse for any other shape. A receipt so decoded has no
    // command() object: read frame_view::receipt (set on either path). Off: generic only.
    bool fast_send_receipt = false;
    // MESSAGE frames (a client consumer's receive path): read the command with
    // scan_message_command and the metadata with scan_consumer_metadata, falling back to the
    // generic parse for any shape they do not read. Either way frame_view::message and
    // frame_view::consumer_metadata are set (the payload section is checked by the same code
    // on both paths); command() / metadata() exist only when the generic parse ran.
    bool fast_message = false;
    // ACK frames (a broker's ack path; the broker does not switch it on: its A/B showed no
    // win, doc/perf.md "Consume + ack path, round 5"): plain ACKs (message ids of ledgerId, entryId
    // and partition only; no properties, transaction or validation fields) are read with
    // scan_ack_command into frame_view::ack, without command(). Other ACKs: the generic parse
    // (frame_view::ack unset, command() available). Off: generic only.
    bool fast_ack = false;
};

enum class checksum_state : std::uint8_t {
    absent,     // no 0x0e01 section (old producers, or a simple command)
    valid,      // present and verified
    mismatch,   // present and wrong: message_error == errc::checksum_mismatch
    unchecked,  // present, not verified (decoder_options::verify_checksum == false)
};

// One decoded frame. Spans view the input buffer (see Ownership above).
struct frame_view {
    // Bytes the frame occupies on the wire (4 + totalSize): drop these from the buffer.
    std::size_t size = 0;
    // Raw BaseCommand.type; meaningful as command_type when known_type.
    std::int32_t raw_type = 0;
    bool known_type = false;
    std::span<const std::byte> command_bytes;

    // --- payload section (SEND, MESSAGE) ---
    // Serialized BrokerEntryMetadata (without magic and size); MESSAGE only, else empty.
    std::span<const std::byte> broker_entry_metadata;
    // From the 0x0e01 magic (or metadataSize when absent) to the frame end: what the broker
    // stores verbatim as the entry and later re-sends after a MESSAGE command.
    std::span<const std::byte> headers_and_payload;
    // metadataSize + MessageMetadata + payload: the CRC32C coverage.
    std::span<const std::byte> checksummed;
    std::span<const std::byte> metadata_bytes;  // serialized MessageMetadata
    std::span<const std::byte> payload;         // message or batch payload (maybe compressed)
    checksum_state checksum = checksum_state::absent;
    std::uint32_t checksum_value = 0;  // as carried in the frame (when not absent)
    // Per-message problem in the payload section; the frame boundary is intact.
    std::error_code message_error;

    // True when bytes follow the command of a SEND/MESSAGE (the payload section).
    bool has_payload_section = false;

    command_type type() const noexcept { return static_cast<command_type>(raw_type); }

    // SEND only: the command's fields the broker reads (either path).
    send_fields send;
    // SEND_RECEIPT only: its fields (either path).
    send_receipt_fields receipt;
    // Set when the metadata was parsed (parse_metadata on, no message_error): the fields the
    // broker reads, on either path.
    std::optional<metadata_fields> metadata_values;
    // MESSAGE with fast_message on: the command's fields (either path).
    message_fields message;
    // MESSAGE with fast_message on, when the metadata was parsed (no message_error): what a
    // received message exposes (either path). Views the frame or the decoder: valid until the
    // next decode().
    std::optional<consumer_metadata_fields> consumer_metadata;
    // ACK read by the fast_ack scanner (has_command() false); ids view the decoder.
    std::optional<ack_fields> ack;

    // True when the generic parse ran, so command() is available; false for a SEND read by the
    // fast_send scanners, a SEND_RECEIPT read by the fast_send_receipt one, a MESSAGE read by
    // the fast_message one or an ACK read by the fast_ack one.
    bool has_command() const noexcept { return command_ != nullptr; }
    // The parsed command. Valid until the next decode(). Requires has_command().
    const pb::BaseCommand& command() const noexcept { return *command_; }
    // Parsed MessageMetadata, or null (not a payload command, parse_metadata off, message_error
    // set, or a SEND read by the fast_send scanners). Valid until the next decode().
    const pb::MessageMetadata* metadata() const noexcept { return metadata_; }

private:
    friend class frame_decoder;
    const pb::BaseCommand* command_ = nullptr;
    const pb::MessageMetadata* metadata_ = nullptr;
};

// Outcome of one decode() call that did not fail.
struct decode_step {
    // True: `frame` holds a complete frame. False: more bytes are needed.
    bool complete = false;
    // When !complete: the input size at which decode() can make progress (> input.size()).
    std::size_t bytes_needed = 0;
    frame_view frame;
};

class frame_decoder {
public:
    explicit frame_decoder(decoder_options options = {});
    ~frame_decoder();
    frame_decoder(frame_decoder&&) noexcept;
    frame_decoder& operator=(frame_decoder&&) noexcept;
    frame_decoder(const frame_decoder&) = delete;
    frame_decoder& operator=(const frame_decoder&) = delete;

    // Decodes the frame at the front of `input`. Errors are connection-scope (close it):
    // frame_too_large, frame_too_small, bad_command_size, bad_command, missing_command_body.
    // frame_too_large is reported as soon as the 4-byte size is readable.
    [[nodiscard]] result<decode_step> decode(std::span<const std::byte> input);

    const decoder_options& options() const noexcept { return options_; }
    void set_max_frame_size(std::uint32_t n) noexcept { options_.max_frame_size = n; }

private:
    void decode_payload_section(std::span<const std::byte> rest, frame_view& f);
    void parse_metadata(frame_view& f);
    consumer_metadata_fields consumer_fields(const pb::MessageMetadata& md);

    decoder_options options_;
    std::unique_ptr<pb::BaseCommand> command_;
    std::unique_ptr<pb::MessageMetadata> metadata_;
    std::vector<property_view> properties_;  // consumer_metadata's, reused
    std::vector<ack_entry> ack_ids_;         // a fast ACK's ids, reused
};

// Reads the raw value of top-level varint field `field_number` from serialized protobuf bytes
// (last occurrence wins). Used to report command types our .proto does not know.
std::optional<std::uint64_t> find_varint_field(std::span<const std::byte> bytes,
                                               std::uint32_t field_number) noexcept;

}  // namespace nereus::proto
