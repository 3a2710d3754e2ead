#pragma once

// Value types of the metadata store: versions, session ids, records and size limits.
// Thread-safety: plain values (thread-compatible).

#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>

namespace nereus::meta {

// Identifies one state of one key. Opaque: compare versions only for equality.
// 0 means "absent" in checks. A key never sees the same version twice, even across delete and
// re-create (no ABA). The embedded backends use a store-wide revision assigned to every write
// (like etcd's mod_revision); zk_store packs the key's creation count (its slot's
// dataVersion) with the record's dataVersion (doc/format/meta.md).
using version = std::uint64_t;

// Expected version 0: the key must be absent.
inline constexpr version absent = 0;
// Expected version "any": put = unconditional upsert, erase = delete if present,
// check = the key must exist.
inline constexpr version any_version = std::numeric_limits<version>::max();

// A session, unique for the life of the store (never reused, also across restarts).
// A distinct type so a session can never be passed where a version is expected.
enum class session_id : std::uint64_t {};
// The owner of persistent records.
inline constexpr session_id no_session{0};

constexpr std::uint64_t raw(session_id s) noexcept {
    return static_cast<std::uint64_t>(s);
}

// One key's current state.
struct record {
    std::string value;
    version ver = absent;
    // The session whose end deletes this record, or no_session for a persistent record.
    // Fixed when the key is created; later puts keep it.
    session_id owner = no_session;

    friend bool operator==(const record&, const record&) = default;
};

struct keyed_record {
    std::string key;
    record rec;

    friend bool operator==(const keyed_record&, const keyed_record&) = default;
};

// Request limits, the same for every backend (ZooKeeper's default jute.maxbuffer is 1 MiB).
inline constexpr std::size_t max_key_size = 4096;
inline constexpr std::size_t max_value_size = std::size_t{1024} * 1024;
inline constexpr std::size_t max_multi_ops = 1024;

}  // namespace nereus::meta
