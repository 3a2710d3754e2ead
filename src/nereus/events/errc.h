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
};

const std::error_category& events_category() noexcept;

inline std::error_code make_error_code(errc e) noexcept {
    return {static_cast<int>(e), events_category()};
}

}  // namespace nereus::events

template <>
struct std::is_error_code_enum<nereus::events::errc> : std::true_type {};
