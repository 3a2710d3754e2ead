#pragma once

// Protobuf wire-format primitives shared by the direct (protobuf-free) encoders and scanners of
// the hot paths: commands.cc (ACK, MESSAGE, SEND_RECEIPT), send_encoder.cc, send_scan.cc and
// message_scan.cc. Internal to proto/ .cc files.
//
// Thread-safety: pure functions. Readers never read past the span they are given.

#include <bit>
#include <cstddef>
#include <cstdint>
#include <span>

namespace nereus::proto::detail {

inline constexpr std::size_t max_varint_bytes = 10;

// Bytes of `v` as a base-128 varint.
inline std::size_t varint_size(std::uint64_t v) noexcept {
    return v < 0x80 ? 1 : static_cast<std::size_t>((std::bit_width(v) + 6) / 7);
}

// Writes `v` as a base-128 varint; returns the position after it.
inline std::byte* put_varint(std::byte* p, std::uint64_t v) noexcept {
    while (v >= 0x80) {
        *p++ = static_cast<std::byte>((v & 0x7f) | 0x80);
        v >>= 7;
    }
    *p++ = static_cast<std::byte>(v);
    return p;
}

// An int32 field on the wire: negative values are sign-extended to 64 bits (10 bytes).
inline std::uint64_t int32_wire(std::int32_t v) noexcept {
    return static_cast<std::uint64_t>(static_cast<std::int64_t>(v));
}

// Reads a base-128 varint of at most 9 bytes (values < 2^63) at `pos`, advancing it; false
// otherwise (truncated, or a 10-byte varint, left to protobuf's own rules).
inline bool varint9(std::span<const std::byte> b, std::size_t& pos, std::uint64_t& out) noexcept {
    std::uint64_t v = 0;
    for (int shift = 0; shift < 63; shift += 7) {
        if (pos >= b.size()) {
            return false;
        }
        const auto c = static_cast<std::uint8_t>(b[pos++]);
        v |= std::uint64_t(c & 0x7f) << shift;
        if ((c & 0x80) == 0) {
            out = v;
            return true;
        }
    }
    return false;
}

// Skips a length-delimited field's body; false when its length runs past the end.
inline bool skip_len(std::span<const std::byte> b, std::size_t& pos) noexcept {
    std::uint64_t n = 0;
    if (!varint9(b, pos, n) || n > b.size() - pos) {
        return false;
    }
    pos += static_cast<std::size_t>(n);
    return true;
}

// protobuf stores an int32 field's varint truncated to its low 32 bits (uint32 likewise).
inline std::int32_t as_int32(std::uint64_t v) noexcept {
    return static_cast<std::int32_t>(static_cast<std::uint32_t>(v));
}

// MessageMetadata's singular fields 1..30 by wire type (bit n set = field n): the fields a
// metadata scanner may skip or read; any other field or wire type sends the frame to protobuf.
inline constexpr std::uint32_t metadata_varint_fields =
    (1U << 2) | (1U << 3) | (1U << 8) | (1U << 9) | (1U << 11) | (1U << 12) | (1U << 17) |
    (1U << 19) | (1U << 20) | (1U << 22) | (1U << 23) | (1U << 24) | (1U << 25) | (1U << 27) |
    (1U << 28) | (1U << 29) | (1U << 30);
inline constexpr std::uint32_t metadata_bytes_fields = (1U << 1) | (1U << 5) | (1U << 6) |
                                                       (1U << 7) | (1U << 14) | (1U << 15) |
                                                       (1U << 16) | (1U << 18) | (1U << 26);

// A length-delimited field's body at `pos` (advanced past it); false when it runs past the end.
inline bool read_len(std::span<const std::byte> b,
                     std::size_t& pos,
                     std::span<const std::byte>& out) noexcept {
    std::uint64_t n = 0;
    if (!varint9(b, pos, n) || n > b.size() - pos) {
        return false;
    }
    out = b.subspan(pos, static_cast<std::size_t>(n));
    pos += static_cast<std::size_t>(n);
    return true;
}

// Walks a MessageMetadata's fields for a metadata scanner: each varint field whose bit is set in
// `varint_fields` goes to on_varint(field, value), each length-delimited field whose bit is set
// in `bytes_fields` to on_bytes(field, body); either returns false to decline the message. Any
// other field (number 31 or more, or a tag longer than two bytes), a wire type that does not
// match, or a value cut short declines too. True when every field was taken: the scanner's
// answer stands; false: the caller leaves the message to protobuf.
template <class OnVarint, class OnBytes>
bool walk_metadata(std::span<const std::byte> b,
                   std::uint32_t varint_fields,
                   std::uint32_t bytes_fields,
                   OnVarint&& on_varint,
                   OnBytes&& on_bytes) {
    std::size_t pos = 0;
    while (pos < b.size()) {
        std::uint64_t tag = 0;
        const std::size_t tag_at = pos;
        if (!varint9(b, pos, tag) || pos - tag_at > 2 || tag >= (31U << 3)) {
            return false;
        }
        const auto field = static_cast<std::uint32_t>(tag >> 3);
        const auto wire = static_cast<std::uint32_t>(tag & 7);
        if (wire == 0 && (varint_fields >> field & 1U) != 0) {
            std::uint64_t v = 0;
            if (!varint9(b, pos, v) || !on_varint(field, v)) {
                return false;
            }
        } else if (wire == 2 && (bytes_fields >> field & 1U) != 0) {
            std::span<const std::byte> body;
            if (!read_len(b, pos, body) || !on_bytes(field, body)) {
                return false;
            }
        } else {
            return false;
        }
    }
    return true;
}

// on_bytes for a walk_metadata that reads no length-delimited field: skips them all.
inline bool skip_bytes_field(std::uint32_t /*field*/,
                             std::span<const std::byte> /*body*/) noexcept {
    return true;
}

}  // namespace nereus::proto::detail
