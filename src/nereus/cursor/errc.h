#pragma once

// Error codes of the cursor module (style R4).
//
// A fence (stale generation or ackStateEpoch), a duplicate ack and a full state are OUTCOMES of
// a request, reported as `ack_status` in `op_result` (types.h), not errors. These codes are for
// requests that were not admitted or could not be decided, and for state that fails its checks:
// every corrupt or missing record fails closed with one of them, never as some other valid state.
// Thread-safety: thread-safe (the category is a stateless singleton).

#include <system_error>

namespace nereus::cursor {

enum class errc {
    success = 0,
    // A malformed request: bad cursor name, batch size that contradicts the stored one, batch
    // index out of range, empty property key. Nothing was applied.
    invalid_argument,
    // A property key uses the reserved prefix "#nereus.internal.". Nothing was applied.
    reserved_property,
    // An ack or reset names an offset at or past the stream's end. Nothing was applied.
    offset_beyond_end,
    // The cursor's lifecycle state does not admit the operation (doc/cursor-lifecycle.md).
    // Rejected before any mutation or I/O.
    not_admitted,
    // open(): no root record exists for this cursor.
    cursor_not_found,
    // create(): a live (not DELETED) cursor of this name exists.
    cursor_exists,
    // The cursor (this handle's generation) was deleted; the handle is closed.
    cursor_deleted,
    // The owner session is gone: the metadata store rejected the CAS by check_session. Nothing
    // was applied, and this handle confirms nothing any more.
    owner_fenced,
    // The handle was closed (close(), or a fatal store error). Nothing was applied.
    closed,
    // The root record fails its format or checksum checks.
    corrupt_root,
    // The snapshot object referenced by the root fails its format or checksum checks.
    corrupt_snapshot,
    // A delta record in the root's delta range fails its format or checksum checks.
    corrupt_delta,
    // The snapshot object referenced by the root does not exist.
    snapshot_missing,
    // A delta record in the root's delta range does not exist.
    delta_missing,
    // The referenced snapshot exists and is intact, but its size, checksum, generation or
    // sequence differ from the root's reference (it is not the snapshot the root names).
    snapshot_mismatch,
    // A record carries a format version this build does not understand.
    unsupported_format,
};

const std::error_category& error_category() noexcept;

inline std::error_code make_error_code(errc e) noexcept {
    return {static_cast<int>(e), error_category()};
}

}  // namespace nereus::cursor

template <>
struct std::is_error_code_enum<nereus::cursor::errc> : std::true_type {};
