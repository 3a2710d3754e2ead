#pragma once

// The operations of an atomic multi-op request and its outcome.
//
// A multi runs its ops in order against the current state plus the effects of its earlier ops,
// and applies all of its writes or none. A failed check (version mismatch, dead session) is an
// OUTCOME, `multi_result{applied = false, failed_op = i}`, not an error.
// Thread-safety: plain values (thread-compatible).

#include "nereus/meta/types.h"

#include <cstddef>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace nereus::meta {

// Passes when the key's version equals `expected` (absent = must be absent,
// any_version = must exist).
struct check {
    std::string key;
    version expected = absent;
};

// Writes `value` when the key's version equals `expected` (absent = create-if-absent,
// any_version = unconditional). `owner` makes a newly created key ephemeral: it is deleted when
// that session closes or expires. A put naming a dead owner fails the whole multi with
// errc::session_expired. On an existing key the record keeps the owner it was created with
// (as a ZooKeeper setData does); to change owners, erase and put in one multi.
struct put {
    std::string key;
    std::string value;
    version expected = absent;
    session_id owner = no_session;
};

// Deletes the key when its version equals `expected` (any_version = delete if present). Erasing
// an absent key whose check passes is a no-op.
struct erase {
    std::string key;
    version expected = any_version;
};

// Passes while `session` is alive. A writer puts this first in each of its multis so that its
// delayed writes are fenced once its session has expired (the crashed-owner case).
struct check_session {
    session_id session = no_session;
};

using op = std::variant<check, put, erase, check_session>;

struct multi_result {
    // True when every op passed and all writes were applied (and, for durable backends, made
    // durable before the completion ran).
    bool applied = false;
    // When not applied: the index of the first op whose check failed.
    std::optional<std::size_t> failed_op;
    // One entry per op. Applied: the key's version after the multi (0 when erased or absent;
    // 0 for check_session). Not applied: the version found at failed_op (0 = absent), 0 elsewhere.
    std::vector<version> versions;
};

// Outcome of the single-key wrappers (create / compare_and_set / remove).
struct cas_outcome {
    bool applied = false;
    // Applied: the key's new version (0 after a remove). Not applied: the version found
    // (0 = absent).
    version current = absent;
};

}  // namespace nereus::meta
