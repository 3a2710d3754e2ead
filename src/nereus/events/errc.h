#pragma once

// Error codes of the events module (style R4). Values are stable.
//
// Thread-safety: thread-safe (the category is a stateless singleton).

#include <string>
#include <system_error>

namespace nereus::events {

enum class errc {
    success = 0,
    not_bootstrapped,  // apply_once for a partition the projection has no cursor for
    epoch_mismatch,    // apply_once at another epoch than the projection's (re-snapshot first)
    storage,           // the projection store failed (SQLite error; logged with its message)
    invalid_argument,  // e.g. replace_atomically with two barriers for one partition
    // ---- the delivery API (event_subscriptions.h) ----
    expired,            // the cursor/subscription expired or its history was trimmed (policy STOP)
    timeout,            // the deadline passed; the outcome is unknown (never taken as expiry)
    unadmitted_format,  // a payload not in the admitted, versioned source format
    unknown_policy,     // registration names a policy that was not declared
    not_registered,     // the subscription value was not registered in this host
    resume_needs_durable_store,  // RESUME registered with a projection store that is not durable
    ack_beyond_delivered,        // ack(through) names no delivered (leased) page end
    ack_behind_committed,        // ack(through) is at or below the committed cursor (new ackId)
    lease_lost,                  // the page's lease expired and was taken by another holder
    conflict,                    // the broker state record kept changing (CAS retries exhausted)
    ownership_denied,            // exclusive ownership: another process holds the subscription
    fenced,                      // exclusive ownership: a newer owner fenced this one
    broker,                      // the broker / admin API answered with an error (logged)
};

const std::error_category& events_category() noexcept;

inline std::error_code make_error_code(errc e) noexcept {
    return {static_cast<int>(e), events_category()};
}

}  // namespace nereus::events

template <>
struct std::is_error_code_enum<nereus::events::errc> : std::true_type {};
