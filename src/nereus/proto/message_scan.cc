#include "nereus/proto/message_scan.h"

#include "nereus/base/crc32c.h"
#include "nereus/proto/detail/wire.h"
#include "nereus/proto/frame_format.h"

namespace nereus::proto {

using detail::as_int32;
using detail::load_be16;
using detail::load_be32;
using detail::read_len;
using detail::varint9;

namespace {

// MessageIdData: ledgerId (1), entryId (2), partition (3), batch_index (4), batch_size (6), all
// varints; ack_set (5), first_chunk_message_id (7) and anything else decline.
bool scan_message_id(std::span<const std::byte> b, message_fields& m) noexcept {
    std::size_t pos = 0;
    while (pos < b.size()) {
        const auto tag = static_cast<std::uint8_t>(b[pos++]);
        if (tag != 0x08 && tag != 0x10 && tag != 0x18 && tag != 0x20 && tag != 0x30) {
            return false;
        }
        std::uint64_t v = 0;
        if (!varint9(b, pos, v)) {
            return false;
        }
        switch (tag >> 3) {
            case 1:
                m.ledger_id = v;
                break;
            case 2:
                m.entry_id = v;
                break;
            case 3:
                m.partition = as_int32(v);
                break;
            case 4:
                m.batch_index = as_int32(v);
                break;
            default:  // batch_size: not read
                break;
        }
    }
    return true;
}

// CommandMessage: consumer_id (1), message_id (2, once), redelivery_count (3), consumer_epoch
// (5, not read); ack_set (4) and anything else decline.
bool scan_message_body(std::span<const std::byte> b, message_fields& m) noexcept {
    bool have_id = false;
    std::size_t pos = 0;
    while (pos < b.size()) {
        const auto tag = static_cast<std::uint8_t>(b[pos++]);
        std::uint64_t v = 0;
        if (tag == 0x12) {
            if (have_id || !varint9(b, pos, v) || v > b.size() - pos) {
                return false;  // a second message_id would be merged: left to protobuf
            }
            if (!scan_message_id(b.subspan(pos, static_cast<std::size_t>(v)), m)) {
                return false;
            }
            pos += static_cast<std::size_t>(v);
            have_id = true;
        } else if (tag == 0x08 || tag == 0x18 || tag == 0x28) {
            if (!varint9(b, pos, v)) {
                return false;
            }
            if (tag == 0x08) {
                m.consumer_id = v;
            } else if (tag == 0x18) {
                m.redelivery_count = static_cast<std::uint32_t>(v);
            }
        } else {
            return false;
        }
    }
    return true;
}

}  // namespace

std::optional<message_fields> scan_message_command(std::span<const std::byte> b) noexcept {
    bool have_type = false;
    bool have_body = false;
    message_fields m;
    std::size_t pos = 0;
    while (pos < b.size()) {
        const auto tag = static_cast<std::uint8_t>(b[pos++]);
        if (tag == 0x08 && !have_type) {  // type = MESSAGE (9), one byte
            if (pos >= b.size() || static_cast<std::uint8_t>(b[pos]) != 9) {
                return std::nullopt;
            }
            ++pos;
            have_type = true;
        } else if (tag == 0x4a && !have_body) {  // message (field 9, length-delimited), once
            std::uint64_t n = 0;
            if (!varint9(b, pos, n) || n > b.size() - pos ||
                !scan_message_body(b.subspan(pos, static_cast<std::size_t>(n)), m)) {
                return std::nullopt;
            }
            pos += static_cast<std::size_t>(n);
            have_body = true;
        } else {
            return std::nullopt;  // any other field, or a repeated type / message
        }
    }
    if (!have_type || !have_body) {
        return std::nullopt;
    }
    return m;
}

std::optional<message_metadata_fields> scan_message_metadata(
    std::span<const std::byte> b) noexcept {
    message_metadata_fields m;
    // properties (4), encryption_keys (13) and unknown fields are left to protobuf.
    const bool taken = detail::walk_metadata(
        b, detail::metadata_varint_fields, detail::metadata_bytes_fields,
        [&m](std::uint32_t field, std::uint64_t v) {
            if (field == 3) {
                m.publish_time = v;
            } else if (field == 11) {
                m.num_messages_in_batch = as_int32(v);
                m.has_num_messages_in_batch = true;
            } else if (field == 8) {
                const auto c = as_int32(v);
                if (c < 0 || c > 4) {
                    return false;  // not a known CompressionType: an unknown field
                }
                m.compression = c;
            }
            return true;
        },
        detail::skip_bytes_field);
    if (!taken) {
        return std::nullopt;
    }
    return m;
}

namespace {

std::string_view as_view(std::span<const std::byte> b) noexcept {
    return {reinterpret_cast<const char*>(b.data()), b.size()};
}

// KeyValue: key (1) and value (2), strings, last occurrence wins; anything else declines.
bool scan_key_value(std::span<const std::byte> b, property_view& kv) noexcept {
    std::size_t pos = 0;
    while (pos < b.size()) {
        std::uint64_t tag = 0;
        std::span<const std::byte> v;
        if (!varint9(b, pos, tag) || (tag != 0x0a && tag != 0x12) || !read_len(b, pos, v)) {
            return false;
        }
        (tag == 0x0a ? kv.key : kv.value) = as_view(v);
    }
    return true;
}

}  // namespace

std::optional<consumer_metadata_fields> scan_consumer_metadata(
    std::span<const std::byte> b, std::vector<property_view>& properties) {
    properties.clear();
    consumer_metadata_fields m;
    // encryption_keys (13) and unknown fields are left to protobuf.
    const bool taken = detail::walk_metadata(
        b, detail::metadata_varint_fields, detail::metadata_bytes_fields | (1U << 4),
        [&m](std::uint32_t field, std::uint64_t v) {
            switch (field) {
                case 2:
                    m.sequence_id = v;
                    break;
                case 3:
                    m.publish_time = v;
                    break;
                case 8: {
                    const auto c = as_int32(v);
                    if (c < 0 || c > 4) {
                        return false;  // not a known CompressionType: an unknown field
                    }
                    m.compression = c;
                    break;
                }
                case 9:
                    m.uncompressed_size = static_cast<std::uint32_t>(v);
                    break;
                case 11:
                    m.num_messages_in_batch = as_int32(v);
                    m.has_num_messages_in_batch = true;
                    break;
                case 12:
                    m.event_time = v;
                    m.has_event_time = true;
                    break;
                default:  // read by no consumer: skipped
                    break;
            }
            return true;
        },
        [&m, &properties](std::uint32_t field, std::span<const std::byte> v) {
            switch (field) {
                case 1:
                    m.producer_name = as_view(v);
                    break;
                case 4: {
                    property_view kv;
                    if (!scan_key_value(v, kv)) {
                        return false;
                    }
                    properties.push_back(kv);
                    break;
                }
                case 6:
                    m.partition_key = as_view(v);
                    m.has_partition_key = true;
                    break;
                case 18:
                    m.ordering_key = as_view(v);
                    m.has_ordering_key = true;
                    break;
                default:  // read by no consumer: skipped
                    break;
            }
            return true;
        });
    if (!taken) {
        return std::nullopt;
    }
    m.properties = properties;
    return m;
}

std::optional<message_frame> scan_message_frame(std::span<const std::byte> input,
                                                std::uint32_t max_frame_size) noexcept {
    if (input.size() < simple_frame_overhead) {
        return std::nullopt;
    }
    const std::uint32_t total_size = load_be32(input.data());
    const std::uint64_t wire_size = std::uint64_t{total_size} + size_field_bytes;
    if (wire_size > max_frame_size || total_size < size_field_bytes || input.size() < wire_size) {
        return std::nullopt;
    }
    const auto body = input.subspan(size_field_bytes, total_size);
    const std::uint32_t command_size = load_be32(body.data());
    if (command_size == 0 || command_size > total_size - size_field_bytes) {
        return std::nullopt;
    }
    message_frame f;
    f.size = static_cast<std::size_t>(wire_size);
    const auto m = scan_message_command(body.subspan(size_field_bytes, command_size));
    if (!m) {
        return std::nullopt;
    }
    f.message = *m;
    auto rest = body.subspan(size_field_bytes + command_size);
    // The 0x0e01 section first (no broker-entry metadata), its CRC32C matching.
    if (rest.size() < checksum_section_bytes || load_be16(rest.data()) != magic_crc32c) {
        return std::nullopt;
    }
    const std::uint32_t crc = load_be32(rest.data() + magic_bytes);
    rest = rest.subspan(checksum_section_bytes);
    if (crc32c::value(rest) != crc || rest.size() < size_field_bytes) {
        return std::nullopt;
    }
    const std::uint32_t metadata_size = load_be32(rest.data());
    rest = rest.subspan(size_field_bytes);
    if (metadata_size > rest.size()) {
        return std::nullopt;
    }
    f.metadata_bytes = rest.first(metadata_size);
    f.payload = rest.subspan(metadata_size);
    const auto md = scan_message_metadata(f.metadata_bytes);
    if (!md) {
        return std::nullopt;
    }
    f.metadata = *md;
    return f;
}

}  // namespace nereus::proto
