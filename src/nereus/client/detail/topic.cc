#include "nereus/client/detail/topic.h"

#include "nereus/client/errc.h"

#include <fmt/format.h>

#include <cstring>

namespace nereus::client::detail {

result<std::string> full_topic_name(std::string_view topic) {
    if (topic.empty()) {
        return error(errc::invalid_argument);
    }
    if (const auto p = topic.find("://"); p != std::string_view::npos) {
        const auto domain = topic.substr(0, p);
        const auto rest = topic.substr(p + 3);
        if ((domain != "persistent" && domain != "non-persistent") ||
            std::count(rest.begin(), rest.end(), '/') != 2) {
            return error(errc::invalid_argument);
        }
        return std::string(topic);
    }
    const auto slashes = std::count(topic.begin(), topic.end(), '/');
    if (slashes == 0) {
        return fmt::format("persistent://public/default/{}", topic);
    }
    if (slashes == 2) {
        return fmt::format("persistent://{}", topic);
    }
    return error(errc::invalid_argument);
}

std::string partition_name(std::string_view full_topic, std::uint32_t partition) {
    return fmt::format("{}-partition-{}", full_topic, partition);
}

std::string base_topic_name(std::string_view full_topic) {
    const auto p = full_topic.rfind("-partition-");
    if (p == std::string_view::npos) {
        return std::string(full_topic);
    }
    const auto digits = full_topic.substr(p + 11);
    if (digits.empty() || digits.find_first_not_of("0123456789") != std::string_view::npos) {
        return std::string(full_topic);
    }
    return std::string(full_topic.substr(0, p));
}

std::uint32_t murmur3_32(std::string_view key) noexcept {
    constexpr std::uint32_t c1 = 0xcc9e2d51;
    constexpr std::uint32_t c2 = 0x1b873593;
    auto rotl = [](std::uint32_t x, int r) {
        return (x << r) | (x >> (32 - r));
    };
    const auto* data = reinterpret_cast<const unsigned char*>(key.data());
    const std::size_t len = key.size();
    std::uint32_t h = 0;
    const std::size_t blocks = len / 4;
    for (std::size_t i = 0; i < blocks; ++i) {
        std::uint32_t k = static_cast<std::uint32_t>(data[4 * i]) |
                          (static_cast<std::uint32_t>(data[4 * i + 1]) << 8) |
                          (static_cast<std::uint32_t>(data[4 * i + 2]) << 16) |
                          (static_cast<std::uint32_t>(data[4 * i + 3]) << 24);
        k *= c1;
        k = rotl(k, 15);
        k *= c2;
        h ^= k;
        h = rotl(h, 13);
        h = h * 5 + 0xe6546b64;
    }
    std::uint32_t k = 0;
    const auto* tail = data + blocks * 4;
    switch (len & 3U) {
        case 3:
            k ^= static_cast<std::uint32_t>(tail[2]) << 16;
            [[fallthrough]];
        case 2:
            k ^= static_cast<std::uint32_t>(tail[1]) << 8;
            [[fallthrough]];
        case 1:
            k ^= tail[0];
            k *= c1;
            k = rotl(k, 15);
            k *= c2;
            h ^= k;
            break;
        default:
            break;
    }
    h ^= static_cast<std::uint32_t>(len);
    h ^= h >> 16;
    h *= 0x85ebca6b;
    h ^= h >> 13;
    h *= 0xc2b2ae35;
    h ^= h >> 16;
    return h & 0x7fffffffU;
}

}  // namespace nereus::client::detail
