#include "nereus/objects/object_format.h"

#include "nereus/base/assert.h"
#include "nereus/base/crc32c.h"

#include <algorithm>

namespace nereus::objects {
namespace {

template <class T>
void put_le(std::byte* out, T v) {
    for (std::size_t i = 0; i < sizeof(T); ++i) {
        out[i] = static_cast<std::byte>((v >> (8 * i)) & 0xff);
    }
}

template <class T>
T get_le(const std::byte* in) {
    T v = 0;
    for (std::size_t i = 0; i < sizeof(T); ++i) {
        v |= static_cast<T>(static_cast<T>(std::to_integer<std::uint8_t>(in[i])) << (8 * i));
    }
    return v;
}

}  // namespace

object_header_bytes encode_object_header(std::string_view name,
                                         std::uint64_t payload_length,
                                         std::uint32_t payload_crc) {
    NEREUS_ASSERT(name.size() <= 0xffff, "object name too long: {} bytes", name.size());
    object_header_bytes raw{};
    std::copy(object_magic.begin(), object_magic.end(), raw.begin());
    put_le<std::uint16_t>(raw.data() + 4, object_format_version);
    put_le<std::uint16_t>(raw.data() + 6, static_cast<std::uint16_t>(name.size()));
    put_le<std::uint64_t>(raw.data() + 8, payload_length);
    put_le<std::uint32_t>(raw.data() + 16, payload_crc);
    put_le<std::uint64_t>(raw.data() + 20, 0);
    const auto crc =
        object_header_crc(raw, std::as_bytes(std::span<const char>(name.data(), name.size())));
    put_le<std::uint32_t>(raw.data() + object_header_crc_offset, crc);
    return raw;
}

object_header decode_object_header(std::span<const std::byte, object_header_size> raw) {
    object_header h;
    h.format_version = get_le<std::uint16_t>(raw.data() + 4);
    h.name_length = get_le<std::uint16_t>(raw.data() + 6);
    h.payload_length = get_le<std::uint64_t>(raw.data() + 8);
    h.payload_crc = get_le<std::uint32_t>(raw.data() + 16);
    h.reserved = get_le<std::uint64_t>(raw.data() + 20);
    h.header_crc = get_le<std::uint32_t>(raw.data() + object_header_crc_offset);
    return h;
}

bool has_object_magic(std::span<const std::byte, object_header_size> raw) {
    return std::equal(object_magic.begin(), object_magic.end(), raw.begin());
}

std::uint32_t object_header_crc(std::span<const std::byte, object_header_size> raw,
                                std::span<const std::byte> name_bytes) {
    const auto crc = crc32c::extend(0, raw.data(), object_header_crc_offset);
    return crc32c::extend(crc, name_bytes);
}

}  // namespace nereus::objects
