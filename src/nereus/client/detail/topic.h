#pragma once

// Topic-name helpers of the client: short names expanded as Pulsar does
// ("t" → persistent://public/default/t, "tenant/ns/t" → persistent://tenant/ns/t), partition
// names ("<topic>-partition-N"), and the murmur3_32 key hash Pulsar's Java client routes keyed
// messages with.
// Thread-safety: thread-safe (pure functions).

#include "nereus/base/result.h"

#include <cstdint>
#include <string>
#include <string_view>

namespace nereus::client::detail {

// The full name, or errc::invalid_argument for an empty or malformed name.
[[nodiscard]] result<std::string> full_topic_name(std::string_view topic);

std::string partition_name(std::string_view full_topic, std::uint32_t partition);

// The topic without a "-partition-N" suffix.
std::string base_topic_name(std::string_view full_topic);

// Murmur3 32-bit (seed 0) of `key`, masked to a non-negative int as Java's
// Murmur3_32Hash.makeHash does (& 0x7fffffff).
std::uint32_t murmur3_32(std::string_view key) noexcept;

}  // namespace nereus::client::detail
