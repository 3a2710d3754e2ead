#include "nereus/proto/send_encoder.h"

#include "nereus/base/crc32c.h"
#include "nereus/proto/detail/wire.h"
#include "nereus/proto/errc.h"
#include "nereus/proto/frame_format.h"
#include "nereus/proto/protocol_version.h"

#include <cstring>

namespace nereus::proto {

using detail::int32_wire;
using detail::max_varint_bytes;
using detail::put_varint;
using detail::varint_size;

void send_encoder::set_producer_name(std::string_view producer_name) {
    name_field_.resize(1 + varint_size(producer_name.size()) + producer_name.size());
    std::byte* p = name_field_.data();
    *p++ = std::byte{0x0a};  // MessageMetadata.producer_name (1, length-delimited)
    p = put_varint(p, producer_name.size());
    if (!producer_name.empty()) {
        std::memcpy(p, producer_name.data(), producer_name.size());
    }
}

result<std::size_t> send_encoder::append(frame_buffer& out,
                                         const send_args& command,
                                         const send_metadata& metadata,
                                         std::span<const std::byte> payload,
                                         const encode_options& options) const {
    if (!peer_knows(command_type::send, options.peer_protocol_version)) {
        return error(errc::unsupported_by_peer);
    }
    // CommandSend, in field order (as protobuf serialises it).
    std::byte body[4 * (1 + max_varint_bytes)];
    std::byte* b = body;
    *b++ = std::byte{0x08};  // producer_id
    b = put_varint(b, command.producer_id);
    *b++ = std::byte{0x10};  // sequence_id
    b = put_varint(b, command.sequence_id);
    *b++ = std::byte{0x18};  // num_messages (int32)
    b = put_varint(b, int32_wire(command.num_messages));
    if (command.highest_sequence_id) {
        *b++ = std::byte{0x30};  // highest_sequence_id (6)
        b = put_varint(b, *command.highest_sequence_id);
    }
    const auto body_size = static_cast<std::size_t>(b - body);  // <= 44: one length byte
    const std::size_t command_size = 4 + body_size;  // type tag + SEND + send tag + length

    // MessageMetadata after the producer name, in field order.
    std::byte tail[3 * (1 + max_varint_bytes) + 2 + max_varint_bytes];
    std::byte* t = tail;
    *t++ = std::byte{0x10};  // sequence_id (2)
    t = put_varint(t, metadata.sequence_id);
    *t++ = std::byte{0x18};  // publish_time (3)
    t = put_varint(t, metadata.publish_time_ms);
    if (metadata.num_messages_in_batch) {
        *t++ = std::byte{0x58};  // num_messages_in_batch (11, int32)
        t = put_varint(t, int32_wire(*metadata.num_messages_in_batch));
    }
    if (metadata.highest_sequence_id) {
        *t++ = std::byte{0xc0};  // highest_sequence_id (24): a two-byte tag
        *t++ = std::byte{0x01};
        t = put_varint(t, *metadata.highest_sequence_id);
    }
    const auto tail_size = static_cast<std::size_t>(t - tail);
    const std::size_t metadata_size = name_field_.size() + tail_size;

    const bool with_checksum = peer_supports_checksum(options.peer_protocol_version);
    const std::uint64_t total = size_field_bytes + std::uint64_t{command_size} +
                                (with_checksum ? checksum_section_bytes : 0) + size_field_bytes +
                                metadata_size + payload.size();
    if (total + size_field_bytes > options.max_frame_size) {
        return error(errc::frame_too_large);
    }
    const std::size_t old = out.size();
    out.resize(old + size_field_bytes + static_cast<std::size_t>(total));
    std::byte* p = out.data() + old;
    detail::store_be32(p, static_cast<std::uint32_t>(total));
    detail::store_be32(p + size_field_bytes, static_cast<std::uint32_t>(command_size));
    p += simple_frame_overhead;
    *p++ = std::byte{0x08};  // BaseCommand.type
    *p++ = static_cast<std::byte>(command_type::send);
    *p++ = std::byte{0x32};  // BaseCommand.send (6, length-delimited)
    *p++ = static_cast<std::byte>(body_size);
    std::memcpy(p, body, body_size);
    p += body_size;
    std::byte* crc_field = nullptr;
    if (with_checksum) {
        detail::store_be16(p, magic_crc32c);
        crc_field = p + magic_bytes;
        p += checksum_section_bytes;
    }
    std::byte* const covered = p;
    detail::store_be32(p, static_cast<std::uint32_t>(metadata_size));
    p += size_field_bytes;
    std::memcpy(p, name_field_.data(), name_field_.size());
    p += name_field_.size();
    std::memcpy(p, tail, tail_size);
    p += tail_size;
    if (!payload.empty()) {
        std::memcpy(p, payload.data(), payload.size());
        p += payload.size();
    }
    if (crc_field != nullptr) {
        detail::store_be32(crc_field,
                           crc32c::value(covered, static_cast<std::size_t>(p - covered)));
    }
    return size_field_bytes + static_cast<std::size_t>(total);
}

}  // namespace nereus::proto
