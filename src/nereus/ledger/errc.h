#pragma once

// Error codes of the ledger module (style R4). Cursor, meta, storage and objects errors pass
// through unchanged (each keeps its own category), so a caller can tell "the ledger refused"
// from "the cursor fenced" from "the disk failed".
//
// Thread-safety: thread-safe (the category is a stateless singleton).

#include <system_error>

namespace nereus::ledger {

enum class errc {
    success = 0,
    // A malformed request (bad topic or cursor name, batch size 0, ...). Nothing was applied.
    invalid_argument,
    // The semantics asked for are not supported by Nereus (transactions, replicated
    // subscriptions, delayed delivery). Rejected before any mutation or storage operation.
    unsupported,
    // The operation is switched off by the ledger's capabilities, or the ledger's lifecycle
    // state does not admit it (doc/ledger.md, admission table). Nothing was applied.
    not_admitted,
    // open: another owner session holds the topic's retention root (exactly one opener wins).
    owned_elsewhere,
    // The ledger lost its owner session (a CAS failed check_session): it confirms nothing more.
    owner_fenced,
    // The ledger (or the cursor handle) is closed.
    closed,
    // open: the topic is not registered and create_if_missing is false.
    topic_not_found,
    // open_cursor: a live cursor of this name exists (or is open in this ledger).
    cursor_exists,
    // No live cursor of this name.
    cursor_not_found,
    // The registry says the stream exists but the stream log has no such stream, or the stream
    // starts above the ledger's logical start (entries never trimmed are gone): fail closed.
    stream_missing,
    // A ledger metadata record (registry or retention root) fails its format or checksum
    // checks. Never decoded as another valid state.
    corrupt_record,
    // A record carries a format version this build does not understand.
    unsupported_format,
    // Tests only: the fault hook stopped the operation at a persistence step ("crash here").
    // The ledger admits nothing afterwards; drop it and reopen.
    injected_crash,
};

const std::error_category& error_category() noexcept;

inline std::error_code make_error_code(errc e) noexcept {
    return {static_cast<int>(e), error_category()};
}

}  // namespace nereus::ledger

template <>
struct std::is_error_code_enum<nereus::ledger::errc> : std::true_type {};
