#pragma once

// What travels through the runtime: message ids, received messages, outgoing messages and the
// positions a seek moves to.
//
// message: an immutable handle (one shared_ptr) to a received message. The transport fills the
//   data once; copies share it (no payload copy per lane, batch or retry). Thread-safety: safe
//   to read from any thread (nothing mutates after delivery).
// outgoing: a plain value the caller fills; publish takes it by value.
// position: where a seek moves a subscription, with Pulsar's semantics (see seeker.h).

#include <chrono>
#include <compare>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace nereus::runtime {

// A message's position in its topic, as the broker names it. Ordered within one topic
// (partition) by (ledger, entry, batch_index).
struct message_id {
    std::int64_t ledger = -1;
    std::int64_t entry = -1;
    std::int32_t partition = -1;
    std::int32_t batch_index = -1;

    friend bool operator==(const message_id&, const message_id&) = default;
    friend std::strong_ordering operator<=>(const message_id& a, const message_id& b) noexcept {
        if (auto c = a.ledger <=> b.ledger; c != 0)
            return c;
        if (auto c = a.entry <=> b.entry; c != 0)
            return c;
        if (auto c = a.partition <=> b.partition; c != 0)
            return c;
        return a.batch_index <=> b.batch_index;
    }
    // "ledger:entry:partition:batch_index", as Pulsar's clients print ids.
    [[nodiscard]] std::string to_string() const;
};

using property = std::pair<std::string, std::string>;
// Publish times are wall-clock milliseconds since the Unix epoch (the test transport stamps
// them from the runtime's clock, so they are virtual there).
using publish_time = std::chrono::milliseconds;

struct message_data {
    std::string topic;  // full name: persistent://tenant/namespace/local
    message_id id;
    std::optional<std::string> key;
    std::string payload;
    std::vector<property> properties;
    publish_time published{0};
    // Deliveries of this message to the subscription before this one (0 on the first). Kept by
    // the broker in memory: Pulsar resets it on reconnect (see doc/runtime.md, traps).
    std::uint32_t redelivery_count = 0;

    [[nodiscard]] std::optional<std::string_view> property_value(std::string_view name) const {
        for (const auto& [k, v] : properties) {
            if (k == name)
                return std::string_view(v);
        }
        return std::nullopt;
    }
};
using message = std::shared_ptr<const message_data>;

struct outgoing {
    std::string payload;
    std::optional<std::string> key;
    std::vector<property> properties;
};

// Where a seek moves a subscription (Pulsar's Consumer.seek):
//  earliest     - the first retained message is delivered next;
//  latest       - only messages published after the seek are delivered;
//  id           - the message with that id is delivered next (inclusive), later ones after it;
//  publish_time - the first message published at or after that time is delivered next.
// Acknowledgements of messages at or after the new position are forgotten (they come again).
struct position {
    enum class kind { earliest, latest, id, publish_time };
    kind at = kind::earliest;
    message_id id{};
    publish_time time{0};

    static position earliest() { return {kind::earliest, {}, publish_time{0}}; }
    static position latest() { return {kind::latest, {}, publish_time{0}}; }
    static position message(message_id i) { return {kind::id, i, publish_time{0}}; }
    static position time_at(publish_time t) { return {kind::publish_time, {}, t}; }
};

}  // namespace nereus::runtime
