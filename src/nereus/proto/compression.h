#pragma once

// Payload compression codecs of Pulsar (MessageMetadata.compression, doc §4.5).
//
// Compression covers the whole payload (for a batch: the whole serialized batch). The broker
// stores payloads verbatim and never needs to decompress; clients do. The byte formats are the
// ones Pulsar's Java and C++ clients use, so payloads interoperate:
//   LZ4    a raw LZ4 block (no frame header), liblz4
//   ZLIB   a zlib stream (RFC 1950: deflate with the zlib header and Adler-32), zlib
//   ZSTD   one Zstandard frame, libzstd
//   SNAPPY raw Snappy (no framing format), libsnappy
// An unknown codec value is errc::unsupported_compression.
//
// Decompression fails closed: `uncompressed_size` (MessageMetadata.uncompressed_size) must be
// at most max_uncompressed_size (errc::uncompressed_too_large: nothing is allocated for a
// forged size) and the payload must decompress to exactly that many bytes
// (errc::bad_compressed_payload otherwise).
// Thread-safety: thread-safe functions; `scratch` is the caller's.

#include "nereus/base/result.h"

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace nereus::proto {

enum class compression : std::int32_t { none = 0, lz4 = 1, zlib = 2, zstd = 3, snappy = 4 };

// Largest uncompressed payload decompress() accepts (Pulsar caps messages at 100 MiB at most).
inline constexpr std::uint32_t max_uncompressed_size = 100u * 1024 * 1024;

// True when this build can (de)compress `c` (all four Pulsar codecs and NONE).
bool compression_supported(compression c) noexcept;

// Decompresses `input` into `scratch` (resized, reused) and returns a view of it; NONE returns
// `input` itself.
[[nodiscard]] result<std::span<const std::byte>> decompress(compression c,
                                                            std::span<const std::byte> input,
                                                            std::uint32_t uncompressed_size,
                                                            std::vector<std::byte>& scratch);

// Compresses `input` into `scratch`; NONE returns `input` itself. The caller records
// input.size() as MessageMetadata.uncompressed_size.
[[nodiscard]] result<std::span<const std::byte>> compress(compression c,
                                                          std::span<const std::byte> input,
                                                          std::vector<std::byte>& scratch);

}  // namespace nereus::proto
