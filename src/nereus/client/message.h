#pragma once

// Messages: `message` is what a consumer or reader receives, `outgoing_message` what a
// producer sends.
//
// message: an immutable, cheaply copyable handle (one shared_ptr) to a received message: its
//   id, payload, key, properties, times and redelivery count. Copies share the data; the
//   payload view stays valid as long as any copy lives. Thread-safety: thread-safe to read
//   from any thread (nothing mutates after delivery).
// outgoing_message: a plain value the caller fills; the producer takes it by value (move it in
//   to avoid copying the payload). Thread-safety: thread-compatible.

#include "nereus/client/message_id.h"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace nereus::client {

using property = std::pair<std::string, std::string>;
using system_time = std::chrono::system_clock::time_point;

namespace detail {
struct message_data;
}  // namespace detail

class message {
public:
    message() = default;  // an empty handle; only assignment and valid() are meaningful
    explicit message(std::shared_ptr<const detail::message_data> data) noexcept
        : data_(std::move(data)) {}

    [[nodiscard]] bool valid() const noexcept { return data_ != nullptr; }

    // The id to acknowledge, negatively acknowledge or seek to.
    [[nodiscard]] const message_id& id() const noexcept;
    // The full topic name (for a partitioned topic: the partition, "...-partition-N").
    [[nodiscard]] const std::string& topic() const noexcept;
    [[nodiscard]] std::span<const std::byte> payload() const noexcept;
    [[nodiscard]] std::string_view payload_text() const noexcept;  // the payload as chars
    [[nodiscard]] bool has_key() const noexcept;
    [[nodiscard]] const std::string& key() const noexcept;           // partition key
    [[nodiscard]] const std::string& ordering_key() const noexcept;  // empty when absent
    [[nodiscard]] const std::vector<property>& properties() const noexcept;
    // The value of property `name`, or nullopt.
    [[nodiscard]] std::optional<std::string_view> property_value(std::string_view name) const;
    [[nodiscard]] system_time publish_time() const noexcept;
    [[nodiscard]] std::optional<system_time> event_time() const noexcept;
    [[nodiscard]] const std::string& producer_name() const noexcept;
    [[nodiscard]] std::uint64_t sequence_id() const noexcept;
    // How many times the broker delivered this message before (0 on the first delivery). The
    // broker keeps this count in memory only: it restarts at 0 after a reconnect or a broker
    // restart (a Pulsar trap; the retry-letter topic's RECONSUMETIMES property survives both).
    [[nodiscard]] std::uint32_t redelivery_count() const noexcept;

    [[nodiscard]] const detail::message_data* data() const noexcept { return data_.get(); }

private:
    std::shared_ptr<const detail::message_data> data_;
};

struct outgoing_message {
    std::vector<std::byte> payload;
    std::optional<std::string> key;           // partition key: routing and Key_Shared
    std::optional<std::string> ordering_key;  // Key_Shared ordering key (overrides key)
    std::vector<property> properties;
    std::optional<system_time> event_time;
    // Delivered to consumers no earlier than this (Shared / Key_Shared subscriptions; needs a
    // broker with delayed delivery). Such a message is never batched.
    std::optional<system_time> deliver_at;
    // An explicit sequence id (must increase); absent: the producer's next one.
    std::optional<std::uint64_t> sequence_id;

    // A message whose payload is the bytes of `text`.
    static outgoing_message text(std::string_view text);
    static outgoing_message bytes(std::span<const std::byte> payload);
    outgoing_message&& with_key(std::string k) && {
        key = std::move(k);
        return std::move(*this);
    }
    outgoing_message&& with_property(std::string name, std::string value) && {
        properties.emplace_back(std::move(name), std::move(value));
        return std::move(*this);
    }
};

}  // namespace nereus::client
