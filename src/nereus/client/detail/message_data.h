#pragma once

// The immutable data behind a received `message` handle (see message.h).
// Ownership: owned by shared_ptr from the message handles; `payload` is owned here.
// Thread-safety: immutable after construction.

#include "nereus/client/message.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace nereus::client::detail {

class partition_consumer;

struct message_data {
    message_id id;
    std::string topic;
    std::vector<std::byte> payload;
    bool has_key = false;
    std::string key;
    std::string ordering_key;
    std::vector<property> properties;
    system_time publish_time{};
    std::optional<system_time> event_time;
    std::string producer_name;
    std::uint64_t sequence_id = 0;
    std::uint32_t redelivery_count = 0;
    // The topic consumer that received it (index into the consumer's list), for routing acks.
    std::uint32_t topic_index = 0;
};

}  // namespace nereus::client::detail
