#include "nereus/proto/ack_scan.h"

#include "nereus/proto/detail/wire.h"

namespace nereus::proto {

using detail::as_int32;
using detail::varint9;

namespace {

// MessageIdData: ledgerId (1), entryId (2), partition (3), varints; anything else declines.
bool scan_ack_id(std::span<const std::byte> b, ack_entry& id) noexcept {
    std::size_t pos = 0;
    while (pos < b.size()) {
        const auto tag = static_cast<std::uint8_t>(b[pos++]);
        std::uint64_t v = 0;
        if ((tag != 0x08 && tag != 0x10 && tag != 0x18) || !varint9(b, pos, v)) {
            return false;
        }
        if (tag == 0x08) {
            id.ledger_id = v;
        } else if (tag == 0x10) {
            id.entry_id = v;
        } else {
            id.partition = as_int32(v);
        }
    }
    return true;
}

// CommandAck: consumer_id (1), ack_type (2), message_id (3, repeated), request_id (8).
bool scan_ack_body(std::span<const std::byte> b, ack_fields& a, std::vector<ack_entry>& ids) {
    std::size_t pos = 0;
    while (pos < b.size()) {
        const auto tag = static_cast<std::uint8_t>(b[pos++]);
        std::uint64_t v = 0;
        if (!varint9(b, pos, v)) {
            return false;
        }
        switch (tag) {
            case 0x08:
                a.consumer_id = v;
                break;
            case 0x10:
                if (v > 1) {
                    return false;  // not a known AckType: protobuf keeps it as an unknown field
                }
                a.cumulative = v == 1;
                break;
            case 0x1a: {
                if (v > b.size() - pos) {
                    return false;
                }
                ack_entry id;
                if (!scan_ack_id(b.subspan(pos, static_cast<std::size_t>(v)), id)) {
                    return false;
                }
                ids.push_back(id);
                pos += static_cast<std::size_t>(v);
                break;
            }
            case 0x40:
                a.request_id = v;
                a.has_request_id = true;
                break;
            default:
                return false;  // validation_error, properties, txn ids, unknown, mismatched
        }
    }
    return true;
}

}  // namespace

std::optional<ack_fields> scan_ack_command(std::span<const std::byte> b,
                                           std::vector<ack_entry>& ids) {
    ids.clear();
    bool have_type = false;
    bool have_body = false;
    ack_fields a;
    std::size_t pos = 0;
    while (pos < b.size()) {
        const auto tag = static_cast<std::uint8_t>(b[pos++]);
        if (tag == 0x08 && !have_type) {  // type = ACK (10), one byte
            if (pos >= b.size() || static_cast<std::uint8_t>(b[pos]) != 10) {
                return std::nullopt;
            }
            ++pos;
            have_type = true;
        } else if (tag == 0x52 && !have_body) {  // ack (field 10, length-delimited), once
            std::uint64_t n = 0;
            if (!varint9(b, pos, n) || n > b.size() - pos ||
                !scan_ack_body(b.subspan(pos, static_cast<std::size_t>(n)), a, ids)) {
                return std::nullopt;
            }
            pos += static_cast<std::size_t>(n);
            have_body = true;
        } else {
            return std::nullopt;  // any other field, or a repeated type / ack
        }
    }
    if (!have_type || !have_body) {
        return std::nullopt;
    }
    a.ids = ids;
    return a;
}

}  // namespace nereus::proto
