#pragma once

// Error codes of the metadata store (style R4).
//
// A CAS or check conflict is NOT an error: it is the outcome `multi_result{applied = false}`.
// These codes are for requests that could not be decided: malformed input, I/O, corruption,
// a closed or failed store, an expired session, and the remote-store case where a write may or
// may not have been applied (`unknown_outcome`, the caller must re-read).
// Thread-safety: thread-safe (the category is a stateless singleton).

#include <system_error>

namespace nereus::meta {

enum class errc {
    success = 0,
    // A malformed request: empty or oversized key, oversized value, empty or oversized multi,
    // bad session ttl, unparsable store url. Nothing was applied.
    invalid_argument,
    // A stored record failed its format or checksum check. The key is logged; the record is
    // never decoded as another valid state. Nothing was applied.
    corrupt_record,
    // The backend failed to read (or to open). Nothing was applied.
    io_error,
    // A write may or may not have been applied (timeout, lost reply, failed fsync). The caller
    // must re-read the keys before deciding anything.
    unknown_outcome,
    // The store could not serve the request now; nothing was applied. Safe to retry.
    unavailable,
    // The session is expired, closed or unknown (keep_alive, close_session, or a put that names
    // it as the owner of an ephemeral key). Nothing was applied.
    session_expired,
    // The store is shutting down. Nothing was applied.
    closed,
    // An earlier durable write failed; the store refuses every request until it is reopened.
    store_failed,
    // The on-disk layout has a format version this build does not understand.
    incompatible_format,
};

const std::error_category& error_category() noexcept;

inline std::error_code make_error_code(errc e) noexcept {
    return {static_cast<int>(e), error_category()};
}

}  // namespace nereus::meta

template <>
struct std::is_error_code_enum<nereus::meta::errc> : std::true_type {};
