#pragma once

// Where a cursor's records live (doc/format/cursor.md, "Keys and names").
//
//   root     meta key    <prefix>/<ledger>/<name>
//   deltas   meta keys   <prefix>/<ledger>/<name>/d/<seq, 20 decimal digits>
//   snapshot objects     cursor/<ledger>/<name>/g<generation>-s<seq>-w<writer>-n<nonce>
//
// <ledger> and <name> are escaped: bytes [A-Za-z0-9-] stay, every other byte becomes "_hh"
// (two lower-case hex digits), so escaped names never contain '/', two cursors never share a
// prefix, and object names stay in the object store's alphabet.
//
// Thread-safety: thread-safe (pure functions).

#include "nereus/base/result.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace nereus::cursor {

struct cursor_id {
    std::string ledger;
    std::string name;
    friend bool operator==(const cursor_id&, const cursor_id&) = default;
};

std::string escape_name(std::string_view raw);

struct cursor_keys {
    std::string root;           // the root record's key
    std::string delta_prefix;   // every delta key starts with this
    std::string object_prefix;  // every snapshot object name starts with this

    // Errors: errc::invalid_argument for an empty ledger or cursor name, or one whose escaped
    // snapshot names would exceed the object store's name limit.
    [[nodiscard]] static result<cursor_keys> make(std::string_view key_prefix, const cursor_id& id);

    [[nodiscard]] std::string delta_key(std::uint64_t seq) const;
    // The sequence of a key under delta_prefix, or nullopt when it is not a delta key.
    [[nodiscard]] std::optional<std::uint64_t> delta_seq(std::string_view key) const;
    // (writer, nonce) is unique per snapshot a process writes (writer = its owner session,
    // nonce = a process-wide counter), so a name is never reused.
    [[nodiscard]] std::string snapshot_name(std::uint64_t generation,
                                            std::uint64_t seq,
                                            std::uint64_t writer,
                                            std::uint64_t nonce) const;
};

}  // namespace nereus::cursor
