#pragma once

// Pulsar's ServerError values and the ONE function that maps internal errors to them (style R4).
//
// `error_kind` is the vocabulary in which the broker (and anything below it, through the broker)
// states why a request failed; it is a std::error_code enum, so it travels in result<T> like
// every other error. to_server_error() maps error_kind codes, this module's errc codes and
// generic/system codes (I/O → PersistenceError, timeouts → ServiceNotReady); anything else is
// UnknownError. The table lives in server_error.cc and is covered by a table test.
// Thread-safety: thread-safe (constants and pure functions).

#include <cstdint>
#include <string_view>
#include <system_error>

namespace nereus::proto {

// ServerError wire values (doc §6.1); checked against the generated enum in server_error.cc.
enum class server_error : std::int32_t {
    unknown_error = 0,
    metadata_error = 1,
    persistence_error = 2,
    authentication_error = 3,
    authorization_error = 4,
    consumer_busy = 5,
    service_not_ready = 6,
    producer_blocked_quota_exceeded_error = 7,
    producer_blocked_quota_exceeded_exception = 8,
    checksum_error = 9,
    unsupported_version_error = 10,
    topic_not_found = 11,
    subscription_not_found = 12,
    consumer_not_found = 13,
    too_many_requests = 14,
    topic_terminated_error = 15,
    producer_busy = 16,
    invalid_topic_name = 17,
    incompatible_schema = 18,
    consumer_assign_error = 19,
    transaction_coordinator_not_found = 20,
    invalid_txn_status = 21,
    not_allowed_error = 22,
    transaction_conflict = 23,
    transaction_not_found = 24,
    producer_fenced = 25,
};

// "ChecksumError", "TopicNotFound", ... as in Pulsar.
std::string_view to_string(server_error e) noexcept;

// Why a request failed, in broker terms.
enum class error_kind {
    success = 0,
    bad_request,             // malformed or inconsistent request        → MetadataError
    metadata_failure,        // metadata store failed / record corrupt   → MetadataError
    persistence_failure,     // stream append/read or cursor CAS failed  → PersistenceError
    not_authenticated,       //                                          → AuthenticationError
    not_authorized,          //                                          → AuthorizationError
    consumer_busy,           // exclusive taken, sub type mismatch       → ConsumerBusy
    unavailable,             // retry later, e.g. still starting/closing → ServiceNotReady
    backlog_quota_hold,      //                → ProducerBlockedQuotaExceededError
    backlog_quota_exceeded,  //                → ProducerBlockedQuotaExceededException
    checksum_mismatch,       // SEND payload CRC32C wrong                → ChecksumError
    unsupported_version,     // client too old for a requested feature  → UnsupportedVersionError
    topic_not_found,         //                                          → TopicNotFound
    subscription_not_found,  //                                          → SubscriptionNotFound
    consumer_not_found,      //                                          → ConsumerNotFound
    too_many_requests,       // throttled                                → TooManyRequests
    topic_terminated,        //                                          → TopicTerminatedError
    producer_busy,           // name in use / exclusive producer present → ProducerBusy
    invalid_topic_name,      //                                          → InvalidTopicName
    incompatible_schema,     //                                          → IncompatibleSchema
    consumer_assign_failed,  // Key_Shared sticky range overlap          → ConsumerAssignError
    not_allowed,             // feature refused (message too large,
                             // unsupported access mode, ...)            → NotAllowedError
    producer_fenced,         //                                          → ProducerFenced
    transactions_unsupported,  //                          → TransactionCoordinatorNotFound
};

const std::error_category& error_kind_category() noexcept;

inline std::error_code make_error_code(error_kind e) noexcept {
    return {static_cast<int>(e), error_kind_category()};
}

// The one mapping from an internal error to the ServerError we put on the wire.
server_error to_server_error(const std::error_code& ec) noexcept;

}  // namespace nereus::proto

template <>
struct std::is_error_code_enum<nereus::proto::error_kind> : std::true_type {};
