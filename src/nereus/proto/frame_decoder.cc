#include "nereus/proto/frame_decoder.h"

#include "nereus/base/crc32c.h"
#include "nereus/proto/errc.h"
#include "nereus/proto/pulsar_api.h"

namespace nereus::proto {

using detail::load_be16;
using detail::load_be32;

namespace {

// Reads a base-128 varint; false when truncated or longer than 10 bytes.
bool read_varint(std::span<const std::byte> bytes, std::size_t& pos, std::uint64_t& out) {
    out = 0;
    for (int shift = 0; shift < 70; shift += 7) {
        if (pos >= bytes.size()) {
            return false;
        }
        const auto b = static_cast<std::uint8_t>(bytes[pos++]);
        out |= std::uint64_t(b & 0x7f) << shift;
        if ((b & 0x80) == 0) {
            return true;
        }
    }
    return false;
}

}  // namespace

std::optional<std::uint64_t> find_varint_field(std::span<const std::byte> bytes,
                                               std::uint32_t field_number) noexcept {
    std::optional<std::uint64_t> found;
    std::size_t pos = 0;
    while (pos < bytes.size()) {
        std::uint64_t tag = 0;
        if (!read_varint(bytes, pos, tag)) {
            return found;
        }
        const auto wire_type = static_cast<std::uint32_t>(tag & 7);
        const auto number = tag >> 3;
        std::uint64_t value = 0;
        switch (wire_type) {
            case 0:
                if (!read_varint(bytes, pos, value)) {
                    return found;
                }
                if (number == field_number) {
                    found = value;
                }
                break;
            case 1:
                if (bytes.size() - pos < 8) {
                    return found;
                }
                pos += 8;
                break;
            case 2:
                if (!read_varint(bytes, pos, value) || value > bytes.size() - pos) {
                    return found;
                }
                pos += static_cast<std::size_t>(value);
                break;
            case 5:
                if (bytes.size() - pos < 4) {
                    return found;
                }
                pos += 4;
                break;
            default:  // groups (3, 4) and invalid wire types: stop scanning
                return found;
        }
    }
    return found;
}

frame_decoder::frame_decoder(decoder_options options)
    : options_(options),
      command_(std::make_unique<pb::BaseCommand>()),
      metadata_(std::make_unique<pb::MessageMetadata>()) {}

frame_decoder::~frame_decoder() = default;
frame_decoder::frame_decoder(frame_decoder&&) noexcept = default;
frame_decoder& frame_decoder::operator=(frame_decoder&&) noexcept = default;

result<decode_step> frame_decoder::decode(std::span<const std::byte> input) {
    // Built in place and returned by name on every path (named return value optimisation):
    // a decode_step holds a whole frame_view (~600 bytes), which `return step;` into the
    // result would copy once per frame.
    result<decode_step> out;
    decode_step& step = *out;
    if (input.size() < size_field_bytes) {
        step.bytes_needed = size_field_bytes;
        return out;
    }
    const std::uint32_t total_size = load_be32(input.data());
    const std::uint64_t wire_size = std::uint64_t{total_size} + size_field_bytes;
    if (wire_size > options_.max_frame_size) {
        out = error(errc::frame_too_large);
        return out;
    }
    if (total_size < size_field_bytes) {
        out = error(errc::frame_too_small);
        return out;
    }
    if (input.size() < wire_size) {
        step.bytes_needed = static_cast<std::size_t>(wire_size);
        return out;
    }
    const auto body = input.subspan(size_field_bytes, total_size);
    const std::uint32_t command_size = load_be32(body.data());
    if (command_size == 0 || command_size > total_size - size_field_bytes) {
        out = error(errc::bad_command_size);
        return out;
    }
    frame_view& f = step.frame;
    f.size = static_cast<std::size_t>(wire_size);
    f.command_bytes = body.subspan(size_field_bytes, command_size);
    if (options_.fast_send) {
        if (const auto s = scan_send_command(f.command_bytes)) {
            f.raw_type = static_cast<std::int32_t>(command_type::send);
            f.known_type = true;
            f.send = *s;
            decode_payload_section(body.subspan(size_field_bytes + command_size), f);
            step.complete = true;
            return out;
        }
    }
    if (options_.fast_send_receipt) {
        if (const auto r = scan_send_receipt_command(f.command_bytes)) {
            // A SEND_RECEIPT has no payload section; bytes after its command are ignored, as
            // the generic path ignores them for non-payload commands.
            f.raw_type = static_cast<std::int32_t>(command_type::send_receipt);
            f.known_type = true;
            f.receipt = *r;
            step.complete = true;
            return out;
        }
    }
    if (options_.fast_message) {
        if (const auto m = scan_message_command(f.command_bytes)) {
            f.raw_type = static_cast<std::int32_t>(command_type::message);
            f.known_type = true;
            f.message = *m;
            decode_payload_section(body.subspan(size_field_bytes + command_size), f);
            step.complete = true;
            return out;
        }
    }
    if (options_.fast_ack) {
        if (const auto a = scan_ack_command(f.command_bytes, ack_ids_)) {
            // An ACK has no payload section; bytes after its command are ignored, as the
            // generic path ignores them for non-payload commands.
            f.raw_type = static_cast<std::int32_t>(command_type::ack);
            f.known_type = true;
            f.ack = *a;
            step.complete = true;
            return out;
        }
    }
    if (!command_->ParsePartialFromArray(f.command_bytes.data(),
                                         static_cast<int>(f.command_bytes.size()))) {
        out = error(errc::bad_command);
        return out;
    }
    f.command_ = command_.get();
    if (command_->has_type()) {
        f.raw_type = command_->type();
        f.known_type = true;
    } else {
        // An enum value our .proto does not know lands in unknown fields: report it raw.
        const auto raw = find_varint_field(f.command_bytes, 1);
        if (!raw) {
            out = error(errc::bad_command);
            return out;
        }
        f.raw_type = static_cast<std::int32_t>(*raw);
        f.known_type = false;
        step.complete = true;
        return out;
    }
    const command_type type = f.type();
    if (!has_body(*command_, type) && type != command_type::ping && type != command_type::pong) {
        out = error(errc::missing_command_body);
        return out;
    }
    if (type == command_type::send) {
        const auto& s = command_->send();
        f.send.producer_id = s.producer_id();
        f.send.sequence_id = s.sequence_id();
        f.send.num_messages = s.num_messages();
        f.send.has_highest_sequence_id = s.has_highest_sequence_id();
        f.send.highest_sequence_id = s.highest_sequence_id();
    }
    if (type == command_type::send_receipt) {
        const auto& s = command_->send_receipt();
        f.receipt.producer_id = s.producer_id();
        f.receipt.sequence_id = s.sequence_id();
        f.receipt.highest_sequence_id = s.highest_sequence_id();
        f.receipt.has_message_id = s.has_message_id();
        if (s.has_message_id()) {
            f.receipt.ledger_id = s.message_id().ledgerid();
            f.receipt.entry_id = s.message_id().entryid();
            f.receipt.partition = s.message_id().partition();
            f.receipt.batch_index = s.message_id().batch_index();
        }
    }
    if (type == command_type::message && options_.fast_message) {
        const auto& m = command_->message();
        f.message.consumer_id = m.consumer_id();
        f.message.ledger_id = m.message_id().ledgerid();
        f.message.entry_id = m.message_id().entryid();
        f.message.partition = m.message_id().partition();
        f.message.batch_index = m.message_id().batch_index();
        f.message.redelivery_count = m.redelivery_count();
        f.message.ack_set = {m.ack_set().data(), static_cast<std::size_t>(m.ack_set_size())};
    }
    if (is_payload_command(type)) {
        decode_payload_section(body.subspan(size_field_bytes + command_size), f);
    }
    step.complete = true;
    return out;
}

void frame_decoder::decode_payload_section(std::span<const std::byte> rest, frame_view& f) {
    if (rest.empty()) {
        f.message_error = errc::missing_metadata;
        return;
    }
    f.has_payload_section = true;
    if (rest.size() >= magic_bytes && load_be16(rest.data()) == magic_broker_entry_metadata) {
        // Only a broker adds this, and only in front of MESSAGE.
        if (f.type() != command_type::message) {
            f.message_error = errc::bad_magic;
            return;
        }
        if (rest.size() < magic_bytes + size_field_bytes) {
            f.message_error = errc::truncated_section;
            return;
        }
        const std::uint32_t n = load_be32(rest.data() + magic_bytes);
        rest = rest.subspan(magic_bytes + size_field_bytes);
        if (n > rest.size()) {
            f.message_error = errc::bad_metadata_size;
            return;
        }
        f.broker_entry_metadata = rest.first(n);
        rest = rest.subspan(n);
    }
    f.headers_and_payload = rest;
    bool has_checksum = false;
    if (rest.size() >= magic_bytes && load_be16(rest.data()) == magic_crc32c) {
        if (rest.size() < checksum_section_bytes) {
            f.message_error = errc::truncated_section;
            return;
        }
        has_checksum = true;
        f.checksum_value = load_be32(rest.data() + magic_bytes);
        rest = rest.subspan(checksum_section_bytes);
    } else if (rest.size() >= magic_bytes && rest[0] == std::byte{0x0e} &&
               (rest.size() < size_field_bytes ||
                load_be32(rest.data()) > rest.size() - size_field_bytes)) {
        // 0x0eXX read as metadataSize would be >= 235 MB: an unknown or corrupt magic.
        f.message_error = errc::bad_magic;
        return;
    }
    f.checksummed = rest;
    if (has_checksum) {
        if (options_.verify_checksum) {
            const bool ok = crc32c::value(rest) == f.checksum_value;
            f.checksum = ok ? checksum_state::valid : checksum_state::mismatch;
            if (!ok) {
                // Do not interpret bytes we know to be corrupt.
                f.message_error = errc::checksum_mismatch;
                return;
            }
        } else {
            f.checksum = checksum_state::unchecked;
        }
    }
    if (rest.size() < size_field_bytes) {
        f.message_error = errc::bad_metadata_size;
        return;
    }
    const std::uint32_t metadata_size = load_be32(rest.data());
    rest = rest.subspan(size_field_bytes);
    if (metadata_size > rest.size()) {
        f.message_error = errc::bad_metadata_size;
        return;
    }
    f.metadata_bytes = rest.first(metadata_size);
    f.payload = rest.subspan(metadata_size);
    if (options_.parse_metadata) {
        parse_metadata(f);
    }
}

void frame_decoder::parse_metadata(frame_view& f) {
    if (options_.fast_send && f.type() == command_type::send) {
        if (const auto m = scan_metadata(f.metadata_bytes)) {
            f.metadata_values = *m;
            return;
        }
    }
    const bool consumer = options_.fast_message && f.type() == command_type::message;
    if (consumer) {
        if (const auto c = scan_consumer_metadata(f.metadata_bytes, properties_)) {
            f.consumer_metadata = *c;
            f.metadata_values = metadata_fields{c->publish_time, c->num_messages_in_batch,
                                                c->has_num_messages_in_batch};
            return;
        }
    }
    if (!metadata_->ParsePartialFromArray(f.metadata_bytes.data(),
                                          static_cast<int>(f.metadata_bytes.size()))) {
        f.message_error = errc::bad_metadata;
        return;
    }
    f.metadata_ = metadata_.get();
    metadata_fields m;
    m.publish_time = metadata_->publish_time();
    m.num_messages_in_batch = metadata_->num_messages_in_batch();
    m.has_num_messages_in_batch = metadata_->has_num_messages_in_batch();
    f.metadata_values = m;
    if (consumer) {
        f.consumer_metadata = consumer_fields(*metadata_);
    }
}

consumer_metadata_fields frame_decoder::consumer_fields(const pb::MessageMetadata& md) {
    consumer_metadata_fields c;
    c.producer_name = md.producer_name();
    c.sequence_id = md.sequence_id();
    c.publish_time = md.publish_time();
    c.event_time = md.event_time();
    c.has_event_time = md.has_event_time();
    c.partition_key = md.partition_key();
    c.has_partition_key = md.has_partition_key();
    c.ordering_key = md.ordering_key();
    c.has_ordering_key = md.has_ordering_key();
    c.compression = md.compression();
    c.uncompressed_size = md.uncompressed_size();
    c.num_messages_in_batch = md.num_messages_in_batch();
    c.has_num_messages_in_batch = md.has_num_messages_in_batch();
    properties_.clear();
    for (const auto& kv : md.properties()) {
        properties_.push_back({kv.key(), kv.value()});
    }
    c.properties = properties_;
    return c;
}

}  // namespace nereus::proto
