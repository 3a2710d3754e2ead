#pragma once

// The Pulsar command types (BaseCommand.Type) as a plain enum, so code outside proto/ can switch
// on a decoded frame without including generated protobuf headers. Values are the wire values;
// command_type.cc checks them against the generated enum. Values not listed (transactions,
// watchers, TOPIC_MIGRATED, scalable topics) still decode: frame_view::type holds the raw value
// and frame_view::known_type is false.
// Thread-safety: thread-safe (constants and pure functions).

#include <cstdint>
#include <string_view>

namespace nereus::proto {

enum class command_type : std::int32_t {
    connect = 2,
    connected = 3,
    subscribe = 4,
    producer = 5,
    send = 6,
    send_receipt = 7,
    send_error = 8,
    message = 9,
    ack = 10,
    flow = 11,
    unsubscribe = 12,
    success = 13,
    error = 14,
    close_producer = 15,
    close_consumer = 16,
    producer_success = 17,
    ping = 18,
    pong = 19,
    redeliver_unacknowledged_messages = 20,
    partitioned_metadata = 21,
    partitioned_metadata_response = 22,
    lookup = 23,
    lookup_response = 24,
    consumer_stats = 25,
    consumer_stats_response = 26,
    reached_end_of_topic = 27,
    seek = 28,
    get_last_message_id = 29,
    get_last_message_id_response = 30,
    active_consumer_change = 31,
    get_topics_of_namespace = 32,
    get_topics_of_namespace_response = 33,
    get_schema = 34,
    get_schema_response = 35,
    auth_challenge = 36,
    auth_response = 37,
    ack_response = 38,
    get_or_create_schema = 39,
    get_or_create_schema_response = 40,
    tc_client_connect_request = 62,
    tc_client_connect_response = 63,
    topic_migrated = 68,  // never sent by Nereus; listed so it can be named in logs and gates
};

// True when `raw` is one of the types our .proto describes (has a sub-message we can read).
bool is_known_command_type(std::int32_t raw) noexcept;

// "SEND", "LOOKUP_RESPONSE", ... as in Pulsar; "UNKNOWN" for anything else.
std::string_view to_string(command_type t) noexcept;

// SEND and MESSAGE carry a payload section after the command.
constexpr bool is_payload_command(command_type t) noexcept {
    return t == command_type::send || t == command_type::message;
}

}  // namespace nereus::proto
