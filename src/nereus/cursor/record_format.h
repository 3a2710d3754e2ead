#pragma once

// The cursor's persisted records: the ROOT (meta store), the SNAPSHOT (object store) and the
// DELTA (meta store). Byte layouts, versioning and recovery rules: doc/format/cursor.md.
//
// Every record is framed as
//   magic "NCUR" (u32 LE 0x5255434e) | format version u16 LE | kind u8 | reserved u8 (0)
//   | body length u32 LE | body | crc32c u32 LE over every preceding byte
// and decoding is strict: wrong magic, kind or length, a checksum mismatch, a truncated or
// overlong body, a non-canonical value, or a state that breaks an invariant of cursor_state
// all fail with the record's typed error (errc::corrupt_root / corrupt_snapshot /
// corrupt_delta), a valid checksum over an unknown version with errc::unsupported_format.
// A damaged record never decodes as another valid state.
//
// Thread-safety: thread-safe (pure functions).

#include "nereus/base/result.h"
#include "nereus/cursor/cursor_state.h"
#include "nereus/cursor/state_op.h"
#include "nereus/cursor/types.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace nereus::cursor::format {

inline constexpr std::uint32_t magic = 0x5255434eU;  // "NCUR" little-endian
inline constexpr std::uint16_t version_v1 = 1;
inline constexpr std::size_t header_size = 12;
inline constexpr std::size_t trailer_size = 4;

enum class record_kind : std::uint8_t { root = 1, snapshot = 2, delta = 3 };

// How the root reaches the snapshot that holds the state (spilled mode).
struct snapshot_ref {
    std::string name;       // object name in the object store
    std::uint64_t seq = 0;  // the snapshot's sequence number (its "version"), also inside it
    std::uint64_t size = 0;
    std::uint32_t checksum = 0;  // crc32c of the whole object
    friend bool operator==(const snapshot_ref&, const snapshot_ref&) = default;
};

struct root_record {
    std::uint64_t generation = 0;
    std::uint64_t epoch = 0;
    lifecycle life = lifecycle::protection_pending;
    // Incremented by every CAS of this root; with `writer` it makes each root value unique,
    // which is how an unknown outcome is resolved by re-reading (doc/format/cursor.md).
    std::uint64_t commit_seq = 0;
    std::uint64_t writer = 0;  // the owner session of the writer
    bool spilled = false;
    // Inline mode: the whole state.
    cursor_state state;
    // The delta records [delta_first, delta_next) that follow the snapshot (spilled mode;
    // inline mode keeps first == next, so sequence numbers are never reused).
    std::uint64_t delta_first = 0;
    std::uint64_t delta_next = 0;
    std::uint64_t delta_bytes = 0;  // encoded bytes of the deltas in the range
    // Spilled mode: the snapshot that holds the state before the deltas.
    snapshot_ref snapshot;
};

struct snapshot_header {
    std::string identity;  // the root key of the cursor
    std::uint64_t generation = 0;
    std::uint64_t seq = 0;
};

struct delta_record {
    std::uint64_t generation = 0;
    std::uint64_t seq = 0;
    std::vector<state_op> ops;
};

[[nodiscard]] std::string encode_root(const root_record& r);
[[nodiscard]] result<root_record> decode_root(std::string_view bytes);

[[nodiscard]] std::string encode_snapshot(const snapshot_header& h, const cursor_state& s);
[[nodiscard]] result<std::pair<snapshot_header, cursor_state>> decode_snapshot(
    std::string_view bytes);

[[nodiscard]] std::string encode_delta(const delta_record& d);
[[nodiscard]] result<delta_record> decode_delta(std::string_view bytes);

// The encoded size of the state body alone (what spill_threshold_bytes is compared with).
[[nodiscard]] std::size_t encoded_state_size(const cursor_state& s);

}  // namespace nereus::cursor::format
