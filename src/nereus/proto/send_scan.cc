#include "nereus/proto/send_scan.h"

#include "nereus/proto/detail/wire.h"

namespace nereus::proto {

using detail::as_int32;
using detail::varint9;

namespace {

std::optional<send_fields> scan_send_body(std::span<const std::byte> b) noexcept {
    send_fields s;
    std::size_t pos = 0;
    while (pos < b.size()) {
        const auto tag = static_cast<std::uint8_t>(b[pos++]);
        // Fields 1..8, all varints (wire type 0): tags 0x08..0x40, one byte each.
        if ((tag & 7) != 0 || tag < 0x08 || tag > 0x40) {
            return std::nullopt;  // message_id (9), unknown fields, other wire types
        }
        std::uint64_t v = 0;
        if (!varint9(b, pos, v)) {
            return std::nullopt;
        }
        switch (tag >> 3) {
            case 1:
                s.producer_id = v;
                break;
            case 2:
                s.sequence_id = v;
                break;
            case 3:
                s.num_messages = as_int32(v);
                break;
            case 6:
                s.highest_sequence_id = v;
                s.has_highest_sequence_id = true;
                break;
            default:  // txnid_least_bits, txnid_most_bits, is_chunk, marker: not read
                break;
        }
    }
    return s;
}

// MessageIdData of varint fields 1..4 only (ledgerId, entryId, partition, batch_index).
bool scan_plain_id(std::span<const std::byte> b, send_receipt_fields& r) noexcept {
    std::size_t pos = 0;
    while (pos < b.size()) {
        const auto tag = static_cast<std::uint8_t>(b[pos++]);
        if ((tag & 7) != 0 || tag < 0x08 || tag > 0x20) {
            return false;  // ack_set, batch_size, first_chunk_message_id, unknown, mismatched
        }
        std::uint64_t v = 0;
        if (!varint9(b, pos, v)) {
            return false;
        }
        switch (tag >> 3) {
            case 1:
                r.ledger_id = v;
                break;
            case 2:
                r.entry_id = v;
                break;
            case 3:
                r.partition = as_int32(v);
                break;
            default:
                r.batch_index = as_int32(v);
                break;
        }
    }
    return true;
}

// CommandSendReceipt: fields 1, 2, 4 (varints) and message_id (3) once.
bool scan_send_receipt_body(std::span<const std::byte> b, send_receipt_fields& r) noexcept {
    std::size_t pos = 0;
    while (pos < b.size()) {
        const auto tag = static_cast<std::uint8_t>(b[pos++]);
        if (tag == 0x1a && !r.has_message_id) {
            std::uint64_t n = 0;
            if (!varint9(b, pos, n) || n > b.size() - pos ||
                !scan_plain_id(b.subspan(pos, static_cast<std::size_t>(n)), r)) {
                return false;
            }
            r.has_message_id = true;
            pos += static_cast<std::size_t>(n);
            continue;
        }
        if (tag != 0x08 && tag != 0x10 && tag != 0x20) {
            return false;  // a second message_id (protobuf merges), unknown, mismatched
        }
        std::uint64_t v = 0;
        if (!varint9(b, pos, v)) {
            return false;
        }
        if (tag == 0x08) {
            r.producer_id = v;
        } else if (tag == 0x10) {
            r.sequence_id = v;
        } else {
            r.highest_sequence_id = v;
        }
    }
    return true;
}

}  // namespace

std::optional<send_receipt_fields> scan_send_receipt_command(
    std::span<const std::byte> b) noexcept {
    bool have_type = false;
    bool have_receipt = false;
    send_receipt_fields r;
    std::size_t pos = 0;
    while (pos < b.size()) {
        const auto tag = static_cast<std::uint8_t>(b[pos++]);
        if (tag == 0x08 && !have_type) {  // type = SEND_RECEIPT (7), one byte
            if (pos >= b.size() || static_cast<std::uint8_t>(b[pos]) != 7) {
                return std::nullopt;
            }
            ++pos;
            have_type = true;
        } else if (tag == 0x3a && !have_receipt) {  // send_receipt (field 7), once
            std::uint64_t n = 0;
            if (!varint9(b, pos, n) || n > b.size() - pos ||
                !scan_send_receipt_body(b.subspan(pos, static_cast<std::size_t>(n)), r)) {
                return std::nullopt;
            }
            have_receipt = true;
            pos += static_cast<std::size_t>(n);
        } else {
            return std::nullopt;  // any other field, or a repeated type / send_receipt
        }
    }
    if (!have_type || !have_receipt) {
        return std::nullopt;
    }
    return r;
}

std::optional<send_fields> scan_send_command(std::span<const std::byte> b) noexcept {
    bool have_type = false;
    std::optional<send_fields> send;
    std::size_t pos = 0;
    while (pos < b.size()) {
        const auto tag = static_cast<std::uint8_t>(b[pos++]);
        if (tag == 0x08 && !have_type) {  // type = SEND (6), one byte
            if (pos >= b.size() || static_cast<std::uint8_t>(b[pos]) != 6) {
                return std::nullopt;
            }
            ++pos;
            have_type = true;
        } else if (tag == 0x32 && !send) {  // send (field 6, length-delimited), once
            std::uint64_t n = 0;
            if (!varint9(b, pos, n) || n > b.size() - pos) {
                return std::nullopt;
            }
            send = scan_send_body(b.subspan(pos, static_cast<std::size_t>(n)));
            if (!send) {
                return std::nullopt;
            }
            pos += static_cast<std::size_t>(n);
        } else {
            return std::nullopt;  // any other field, or a repeated type / send
        }
    }
    if (!have_type) {
        return std::nullopt;
    }
    return send;
}

std::optional<metadata_fields> scan_metadata(std::span<const std::byte> b) noexcept {
    metadata_fields m;
    // properties (4), encryption_keys (13) and unknown fields are left to protobuf.
    const bool taken = detail::walk_metadata(
        b, detail::metadata_varint_fields, detail::metadata_bytes_fields,
        [&m](std::uint32_t field, std::uint64_t v) {
            if (field == 3) {
                m.publish_time = v;
            } else if (field == 11) {
                m.num_messages_in_batch = as_int32(v);
                m.has_num_messages_in_batch = true;
            }
            return true;
        },
        detail::skip_bytes_field);
    if (!taken) {
        return std::nullopt;
    }
    return m;
}

}  // namespace nereus::proto
