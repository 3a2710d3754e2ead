// libFuzzer target for proto::decompress (the client side of Pulsar's payload codecs).
// Input: byte 0 picks the codec (mod 5), bytes 1..3 the claimed uncompressed_size (< 1 MiB),
// the rest is the "compressed" payload. Checks: no crash / ASan / UBSan report; a success
// returns exactly uncompressed_size bytes; and compress → decompress round-trips the payload.
#include "nereus/proto/compression.h"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using nereus::proto::compression;
    if (size < 4) {
        return 0;
    }
    const auto codec = static_cast<compression>(data[0] % 5);
    const std::uint32_t claimed =
        ((std::uint32_t{data[1]} << 16) | (std::uint32_t{data[2]} << 8) | std::uint32_t{data[3]}) &
        0xfffffu;
    const std::span<const std::byte> payload(reinterpret_cast<const std::byte*>(data + 4),
                                             size - 4);
    std::vector<std::byte> scratch;
    if (auto out = nereus::proto::decompress(codec, payload, claimed, scratch)) {
        if (codec != compression::none && out->size() != claimed) {
            std::abort();
        }
    }
    std::vector<std::byte> packed_buf;
    std::vector<std::byte> back_buf;
    auto packed = nereus::proto::compress(codec, payload, packed_buf);
    if (!packed) {
        std::abort();
    }
    const std::vector<std::byte> wire(packed->begin(), packed->end());
    auto back = nereus::proto::decompress(codec, wire, static_cast<std::uint32_t>(payload.size()),
                                          back_buf);
    if (!back || back->size() != payload.size() ||
        (!payload.empty() && std::memcmp(back->data(), payload.data(), payload.size()) != 0)) {
        std::abort();
    }
    return 0;
}
