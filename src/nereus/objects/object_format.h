#pragma once

// On-disk format of one object file. The byte layout, versioning and the put/recovery protocol
// are specified in doc/format/objects.md; keep the two in step.
//
//   offset size field
//   0      4    magic "NROB"
//   4      2    format_version (1)
//   6      2    name_length N (bytes of the object name that follow the header)
//   8      8    payload_length L
//   16     4    payload_crc32c (crc32c of the L payload bytes)
//   20     8    reserved, zero in version 1
//   28     4    header_crc32c (crc32c of bytes [0, 28) followed by the N name bytes)
//   32     N    object name (the logical name, not the escaped file name)
//   32+N   L    payload
//
// All integers are little-endian. A valid file is exactly 32 + N + L bytes long.
// Thread-safety: thread-safe (constants and pure functions).

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

namespace nereus::objects {

inline constexpr std::array<std::byte, 4> object_magic = {std::byte{'N'}, std::byte{'R'},
                                                          std::byte{'O'}, std::byte{'B'}};
inline constexpr std::uint16_t object_format_version = 1;
inline constexpr std::size_t object_header_size = 32;
// Offset of header_crc32c; the header checksum covers every header byte before it.
inline constexpr std::size_t object_header_crc_offset = 28;
// Upper bound on one payload. Objects are read whole into memory, so this also bounds the
// allocation a (possibly corrupt) file can cause.
inline constexpr std::uint64_t max_object_size = std::uint64_t{1} << 30;  // 1 GiB

// The decoded fixed header. Field meanings as in the table above.
struct object_header {
    std::uint16_t format_version = 0;
    std::uint16_t name_length = 0;
    std::uint64_t payload_length = 0;
    std::uint32_t payload_crc = 0;
    std::uint64_t reserved = 0;
    std::uint32_t header_crc = 0;
};

using object_header_bytes = std::array<std::byte, object_header_size>;

// Encodes a version-1 header for `name` and a payload of `payload_length` bytes with checksum
// `payload_crc`. Requires: name.size() fits in 16 bits.
object_header_bytes encode_object_header(std::string_view name,
                                         std::uint64_t payload_length,
                                         std::uint32_t payload_crc);

// Splits raw header bytes into fields without validating anything (magic is checked
// separately with has_object_magic).
object_header decode_object_header(std::span<const std::byte, object_header_size> raw);

bool has_object_magic(std::span<const std::byte, object_header_size> raw);

// The header checksum over raw[0, 28) followed by `name_bytes`.
std::uint32_t object_header_crc(std::span<const std::byte, object_header_size> raw,
                                std::span<const std::byte> name_bytes);

}  // namespace nereus::objects

namespace nereus::objects {

// Directory layout of a file-system store rooted at `dir` (doc/format/objects.md):
//   dir/objects/<file name>   one complete, synced object file per object (object_name.h)
//   dir/tmp/<unique>.tmp      puts in flight; never visible as objects, deleted on open
inline constexpr std::string_view objects_subdir = "objects";
inline constexpr std::string_view temp_subdir = "tmp";
inline constexpr std::string_view temp_suffix = ".tmp";

}  // namespace nereus::objects
