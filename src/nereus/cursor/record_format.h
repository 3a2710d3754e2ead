#pragma once

// The cursor's persisted records: the ROOT (meta store), the SNAPSHOT (object store) and the
// DELTA (meta store). Byte layouts, versioning and recovery rules: doc/format/cursor.md.
//
// Roots and snapshots are framed as
//   magic "NCUR" (u32 LE 0x5255434e) | format version u16 LE | kind u8 | reserved u8 (0)
//   | body length u32 LE | body | crc32c u32 LE over every preceding byte;
// deltas (the per-CAS record, kept small) as
//   tag u8 (kind << 4 | version) | ops | crc32c u32 LE over varint generation, varint seq and
//   every preceding byte (generation and seq are implied by the key, not stored).
// Decoding is strict: wrong magic, kind or length, a checksum mismatch, a truncated or
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
// Version 2: compact spilled root (snapshot named by a short id), compact delta frame with the
// (generation, seq) bound into its checksum, batch bits as bytes. Version 1 is rejected as
// unsupported_format.
inline constexpr std::uint16_t format_version = 2;
inline constexpr std::size_t header_size = 12;
inline constexpr std::size_t trailer_size = 4;
// A delta record: u8 tag (kind << 4 | version) | ops | u32 crc32c.
inline constexpr std::size_t delta_overhead = 5;

enum class record_kind : std::uint8_t { root = 1, snapshot = 2, delta = 3 };

// How the root reaches the snapshot that holds the state (spilled mode). The object name is
// derived from it (cursor_keys::snapshot_name(generation, seq, writer, nonce)), so the root
// carries no string.
struct snapshot_ref {
    std::uint64_t seq = 0;     // the commit_seq of the root CAS that first referenced it
    std::uint64_t writer = 0;  // owner session of the handle that wrote it
    std::uint64_t nonce = 0;   // per-process counter of that writer: names are never reused
    std::uint64_t size = 0;
    std::uint32_t checksum = 0;  // crc32c of the whole object
    friend bool operator==(const snapshot_ref&, const snapshot_ref&) = default;
};

struct root_record {
    std::uint64_t generation = 0;
    std::uint64_t epoch = 0;
    lifecycle life = lifecycle::protection_pending;
    // Incremented by every CAS of this root; with `writer` it makes each root value unique,
    // which is how an unknown outcome is resolved by re-reading (doc/format/cursor.md). In
    // spilled mode it is also the sequence number of the newest delta.
    std::uint64_t commit_seq = 0;
    std::uint64_t writer = 0;  // the owner session of the writer
    bool spilled = false;
    // Inline mode: the whole state.
    cursor_state state;
    // Spilled mode: the snapshot that holds the state before the deltas. The deltas are the
    // records with sequence numbers snapshot.seq + 1 .. commit_seq, one per CAS since the
    // snapshot (so snapshot.seq <= commit_seq; encoded as their count).
    snapshot_ref snapshot;
    // NOT persisted: encoded bytes of the deltas since the snapshot (recomputed on recovery;
    // drives compaction).
    std::uint64_t delta_bytes = 0;

    [[nodiscard]] std::uint64_t delta_count() const {
        return spilled ? commit_seq - snapshot.seq : 0;
    }
};

struct snapshot_header {
    std::string identity;  // the root key of the cursor
    std::uint64_t generation = 0;
    std::uint64_t seq = 0;
};

struct delta_record {
    std::uint64_t generation = 0;  // not stored: bound into the checksum
    std::uint64_t seq = 0;         // not stored (it is the key): bound into the checksum
    std::vector<state_op> ops;
};

[[nodiscard]] std::string encode_root(const root_record& r);
[[nodiscard]] result<root_record> decode_root(std::string_view bytes);

[[nodiscard]] std::string encode_snapshot(const snapshot_header& h, const cursor_state& s);
[[nodiscard]] result<std::pair<snapshot_header, cursor_state>> decode_snapshot(
    std::string_view bytes);

// A delta decodes only with the generation and sequence number it was encoded with (they are
// part of the checksummed bytes but not stored): a delta under the wrong key or of another
// generation is corrupt_delta.
[[nodiscard]] std::string encode_delta(const delta_record& d);
[[nodiscard]] result<delta_record> decode_delta(std::string_view bytes,
                                                std::uint64_t generation,
                                                std::uint64_t seq);

// The encoded size of the state body alone (what spill_threshold_bytes is compared with).
[[nodiscard]] std::size_t encoded_state_size(const cursor_state& s);

}  // namespace nereus::cursor::format
