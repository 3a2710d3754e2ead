#pragma once

// Byte layout constants of Pulsar frames; the prose spec is doc/format/pulsar-frames.md.
//
//   simple:  [totalSize u32][commandSize u32][BaseCommand]
//   payload: [totalSize u32][commandSize u32][BaseCommand]
//            ([0x0e02][brokerEntryMetadataSize u32][BrokerEntryMetadata])   MESSAGE only
//            ([0x0e01][crc32c u32])             crc over metadataSize + metadata + payload
//            [metadataSize u32][MessageMetadata][payload]
// All integers big-endian. totalSize counts every byte after itself.
// Thread-safety: thread-safe (constants and pure functions).

#include <cstddef>
#include <cstdint>
#include <span>

namespace nereus::proto {

inline constexpr std::uint16_t magic_crc32c = 0x0e01;
inline constexpr std::uint16_t magic_broker_entry_metadata = 0x0e02;

inline constexpr std::size_t size_field_bytes = 4;  // totalSize, commandSize, metadataSize
inline constexpr std::size_t magic_bytes = 2;
inline constexpr std::size_t checksum_section_bytes = magic_bytes + 4;  // 0x0e01 + crc
inline constexpr std::size_t simple_frame_overhead = 2 * size_field_bytes;

// Java broker defaults: maxMessageSize 5 MiB (advertised in CONNECTED.max_message_size) plus
// MESSAGE_SIZE_FRAME_PADDING for headers. A frame on the wire (4 + totalSize) larger than
// max_message_size + frame_padding is refused and the connection closed.
inline constexpr std::uint32_t default_max_message_size = 5 * 1024 * 1024;
inline constexpr std::uint32_t frame_padding = 10 * 1024;
inline constexpr std::uint32_t default_max_frame_size = default_max_message_size + frame_padding;

// request_id of broker-initiated commands (Java writes -1: uint64 2^64-1 on the wire).
inline constexpr std::uint64_t broker_initiated_request_id = ~std::uint64_t{0};

namespace detail {

inline std::uint32_t load_be32(const std::byte* p) noexcept {
    return (std::uint32_t(p[0]) << 24) | (std::uint32_t(p[1]) << 16) | (std::uint32_t(p[2]) << 8) |
           std::uint32_t(p[3]);
}
inline std::uint16_t load_be16(const std::byte* p) noexcept {
    return static_cast<std::uint16_t>((std::uint32_t(p[0]) << 8) | std::uint32_t(p[1]));
}
inline void store_be32(std::byte* p, std::uint32_t v) noexcept {
    p[0] = std::byte(v >> 24);
    p[1] = std::byte(v >> 16);
    p[2] = std::byte(v >> 8);
    p[3] = std::byte(v);
}
inline void store_be16(std::byte* p, std::uint16_t v) noexcept {
    p[0] = std::byte(v >> 8);
    p[1] = std::byte(v);
}

}  // namespace detail
}  // namespace nereus::proto
