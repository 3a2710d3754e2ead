#pragma once

// Pulsar protocol versions and the gates that follow from them (doc §6.2).
//
// "Send strictly": before sending a command or an optional section, ask the gate with the
// peer's version (CONNECT.protocol_version on the broker, CONNECTED.protocol_version on the
// client). frame_encoder enforces min_protocol_version() for every command it encodes.
// Thread-safety: thread-safe (constexpr functions).

#include "nereus/proto/command_type.h"

#include <algorithm>
#include <cstdint>

namespace nereus::proto {

// The newest ProtocolVersion value Pulsar defines.
inline constexpr std::int32_t latest_protocol_version = 21;
// What Nereus advertises at most (doc §3.1: 19 or 20 is comfortable; we do nothing between 12
// and 21 that is not opt-in).
inline constexpr std::int32_t nereus_protocol_version = 20;

// CONNECTED.protocol_version: the smaller of the client's and ours (Java's rule).
constexpr std::int32_t negotiate_protocol_version(std::int32_t client,
                                                  std::int32_t ours = nereus_protocol_version) {
    return std::min(client, ours);
}

// Lowest protocol version whose peers know command `t` (0 = every version).
constexpr std::int32_t min_protocol_version(command_type t) noexcept {
    switch (t) {
        case command_type::ping:
        case command_type::pong:
            return 1;
        case command_type::redeliver_unacknowledged_messages:
            return 2;
        case command_type::lookup:
        case command_type::lookup_response:
        case command_type::partitioned_metadata:
        case command_type::partitioned_metadata_response:
            return 7;
        case command_type::consumer_stats:
        case command_type::consumer_stats_response:
            return 8;
        case command_type::reached_end_of_topic:
            return 9;
        case command_type::get_last_message_id:
        case command_type::get_last_message_id_response:
        case command_type::active_consumer_change:
        case command_type::get_topics_of_namespace:
        case command_type::get_topics_of_namespace_response:
            return 12;
        case command_type::auth_challenge:
        case command_type::auth_response:
            return 14;
        case command_type::get_or_create_schema:
        case command_type::get_or_create_schema_response:
            return 15;
        case command_type::ack_response:
            return 17;
        case command_type::tc_client_connect_request:
        case command_type::tc_client_connect_response:
            return 19;
        case command_type::topic_migrated:
            return 20;
        default:
            return 0;
    }
}

constexpr bool peer_knows(command_type t, std::int32_t peer_version) noexcept {
    return peer_version >= min_protocol_version(t);
}

// Broker-initiated CLOSE_PRODUCER/CLOSE_CONSUMER (request_id -1) need v5; below it Java drops
// the TCP connection instead.
constexpr bool peer_accepts_broker_close(std::int32_t v) noexcept {
    return v >= 5;
}
// Producers add 0x0e01 + CRC32C only when the broker's version is >= 6.
constexpr bool peer_supports_checksum(std::int32_t v) noexcept {
    return v >= 6;
}
// Java strips the checksum from MESSAGE frames for consumers below v11 (old C++ bug).
constexpr bool send_checksum_to_consumer(std::int32_t v) noexcept {
    return v >= 11;
}
// Multi-id ACK and GET_LAST_MESSAGE_ID need v12.
constexpr bool peer_supports_multi_message_ack(std::int32_t v) noexcept {
    return v >= 12;
}
// Java uses ack receipts (ACK.request_id, ACK_RESPONSE) only if the broker is >= v17.
constexpr bool peer_supports_ack_receipt(std::int32_t v) noexcept {
    return v >= 17;
}
// Broker-entry metadata (0x0e02) on MESSAGE: client >= v18 AND it set
// FeatureFlags.supports_broker_entry_metadata. pulsar-flex (v17) would misparse it.
constexpr bool send_broker_entry_metadata(std::int32_t v, bool client_flag) noexcept {
    return v >= 18 && client_flag;
}
// Schema.Type AutoConsume may be sent to a broker >= v21.
constexpr bool peer_supports_auto_consume_schema(std::int32_t v) noexcept {
    return v >= 21;
}

}  // namespace nereus::proto
