#pragma once

// Errors of the Nereus Pulsar client (style R4): every operation completes with a result<T>,
// whose error is a std::error_code in one of two categories:
//
//   client_category()  nereus::client::errc below: what the client itself decided (timeouts,
//                      closed handles, full queues, lost connections, bad arguments, ...).
//   broker_category()  a ServerError the broker answered with (ERROR, SEND_ERROR,
//                      LOOKUP/PARTITIONED_METADATA failures, ACK_RESPONSE with an error):
//                      the code's value is the wire value (TopicNotFound = 11, ...), its
//                      message() the ServerError's name. is_broker_error(ec, ...) tests one.
//
// Thread-safety: thread-safe (constants and pure functions).

#include <cstdint>
#include <string_view>
#include <system_error>

namespace nereus::client {

enum class errc {
    success = 0,
    timeout,              // the operation timeout (or a send timeout) elapsed
    disconnected,         // the connection was lost while the request was in flight
    closed,               // the handle (client, producer, consumer, reader) is closed
    producer_queue_full,  // pending-message limit reached with queue_full_policy::fail
    lookup_failed,        // topic lookup gave no usable broker (bad URL, too many redirects)
    invalid_argument,     // a bad option or argument (empty topic, unknown service URL, ...)
    message_too_big,      // a message (after compression) above the broker's max size
    protocol_error,       // the broker sent something that violates the protocol
    connect_failed,       // TCP connect or CONNECT/CONNECTED handshake failed
    not_supported,        // the broker's protocol version lacks a needed feature
    unacked_id,           // ack/nack of a message id this consumer was never given
};

const std::error_category& client_category() noexcept;
const std::error_category& broker_category() noexcept;

inline std::error_code make_error_code(errc e) noexcept {
    return {static_cast<int>(e), client_category()};
}

// An error code for the broker's ServerError wire value `server_error`.
inline std::error_code make_broker_error(std::int32_t server_error) noexcept {
    return {server_error, broker_category()};
}

// True when `ec` is the broker's ServerError `server_error` (e.g. 11 = TopicNotFound).
inline bool is_broker_error(const std::error_code& ec, std::int32_t server_error) noexcept {
    return ec.category() == broker_category() && ec.value() == server_error;
}

// Wire values of the ServerErrors a client commonly tests for.
namespace broker_errors {
inline constexpr std::int32_t consumer_busy = 5;
inline constexpr std::int32_t service_not_ready = 6;
inline constexpr std::int32_t topic_not_found = 11;
inline constexpr std::int32_t subscription_not_found = 12;
inline constexpr std::int32_t producer_busy = 16;
inline constexpr std::int32_t not_allowed = 22;
}  // namespace broker_errors

}  // namespace nereus::client

template <>
struct std::is_error_code_enum<nereus::client::errc> : std::true_type {};
