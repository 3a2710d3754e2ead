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

}  // namespace nereus::proto::detail
