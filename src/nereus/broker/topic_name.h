#pragma once

// Pulsar topic names: `persistent://tenant/namespace/local`, short forms expanded
// (`t` → persistent://public/default/t, `tenant/ns/t` → persistent://tenant/ns/t), and the
// partition suffix `-partition-N` recognised.
// Thread-safety: thread-safe (pure functions).

#include "nereus/base/result.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace nereus::broker {

struct topic_name {
    std::string domain;  // "persistent" ("non-persistent" is refused for now)
    std::string tenant;
    std::string ns;
    std::string local;                       // may carry -partition-N
    std::optional<std::uint32_t> partition;  // N from a -partition-N suffix

    // persistent://tenant/ns/local
    std::string full() const;
    // tenant/ns
    std::string namespace_name() const;
};

// Parses and normalises a topic name. Errors: proto::error_kind::invalid_topic_name.
[[nodiscard]] result<topic_name> parse_topic_name(std::string_view s);

}  // namespace nereus::broker
