#include "nereus/proto/compression.h"

#include "nereus/proto/errc.h"

namespace nereus::proto {

bool compression_supported(compression c) noexcept {
    return c == compression::none;
}

result<std::span<const std::byte>> decompress(compression c,
                                              std::span<const std::byte> input,
                                              std::uint32_t /*uncompressed_size*/,
                                              std::vector<std::byte>& /*scratch*/) {
    if (c == compression::none) {
        return input;
    }
    return error(errc::unsupported_compression);
}

result<std::span<const std::byte>> compress(compression c,
                                            std::span<const std::byte> input,
                                            std::vector<std::byte>& /*scratch*/) {
    if (c == compression::none) {
        return input;
    }
    return error(errc::unsupported_compression);
}

}  // namespace nereus::proto
