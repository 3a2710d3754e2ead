#pragma once

// The immutable data behind a received `message` handle (see message.h).
// Ownership: owned by shared_ptr from the message handles. make_message_data() allocates the
//   payload bytes in the same block as the data and its control block (one allocation per
//   received message); the topic and producer-name strings are shared between messages.
// Thread-safety: immutable after construction.

#include "nereus/client/message.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace nereus::client::detail {

struct message_data {
    message_id id;
    // Shared by every message of the consumer's topic (partition).
    std::shared_ptr<const std::string> topic;
    // The payload bytes: the tail of this object's allocation (make_message_data).
    std::span<const std::byte> payload;
    bool has_key = false;
    std::string key;
    std::string ordering_key;
    std::vector<property> properties;
    system_time publish_time{};
    std::optional<system_time> event_time;
    // Shared by consecutive messages of one producer.
    std::shared_ptr<const std::string> producer_name;
    std::uint64_t sequence_id = 0;
    std::uint32_t redelivery_count = 0;
    // The topic consumer that received it (index into the consumer's list), for routing acks.
    std::uint32_t topic_index = 0;
};

// A message_data whose `payload` holds a copy of `payload`, in one allocation with the data and
// the shared_ptr control block.
std::shared_ptr<message_data> make_message_data(std::span<const std::byte> payload);

}  // namespace nereus::client::detail
