#pragma once

// Payload compression codecs of Pulsar (MessageMetadata.compression, doc §4.5).
//
// Compression covers the whole payload (for a batch: the whole serialized batch). The broker
// never needs to decompress; clients do. Only NONE is built in: LZ4, ZLIB, ZSTD and SNAPPY
// return errc::unsupported_compression (the Debian libraries would be liblz4-dev, zlib1g-dev,
// libzstd-dev, libsnappy-dev), so do unknown values.
// Thread-safety: thread-safe functions; `scratch` is the caller's.

#include "nereus/base/result.h"

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace nereus::proto {

enum class compression : std::int32_t { none = 0, lz4 = 1, zlib = 2, zstd = 3, snappy = 4 };

// True when this build can (de)compress `c`.
bool compression_supported(compression c) noexcept;

// Decompresses `input` (uncompressed_size from MessageMetadata.uncompressed_size). NONE returns
// `input` itself; a codec writes into `scratch` (reused) and returns a view of it.
[[nodiscard]] result<std::span<const std::byte>> decompress(compression c,
                                                            std::span<const std::byte> input,
                                                            std::uint32_t uncompressed_size,
                                                            std::vector<std::byte>& scratch);

// Compresses `input`; NONE returns `input` itself.
[[nodiscard]] result<std::span<const std::byte>> compress(compression c,
                                                          std::span<const std::byte> input,
                                                          std::vector<std::byte>& scratch);

}  // namespace nereus::proto
