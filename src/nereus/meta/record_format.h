#pragma once

// On-disk layout of the embedded RocksDB metadata store. The prose spec, with recovery rules,
// is doc/format/meta.md; keep the two in step.
//
// Key space (one RocksDB column family, bytewise order):
//   "d/" + user key                       data record of `user key`
//   "e/" + be64(session) + user key       ephemeral index: `user key` is owned by `session`
//   "m/format" "m/revision" "m/next_session"   store metadata (u64 values)
// Every value, in every area, is an encoded record:
//   [0]      u8    record format version (record_format_v1)
//   [1..5)   u32le crc32c over byte 0, bytes [5, end), then the full RocksDB key
//   [5..13)  u64le revision (the record's version; 0 for metadata values)
//   [13..21) u64le owner session (0 = persistent)
//   [21..)   value bytes (metadata values: u64le)
// Covering the key makes a value that lands under another key (or a swapped key) a checksum
// failure rather than a valid state.
// Thread-safety: thread-safe (pure functions).

#include "nereus/base/result.h"
#include "nereus/meta/types.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace nereus::meta::format {

inline constexpr std::uint8_t record_format_v1 = 1;
inline constexpr std::size_t record_header_size = 21;

// The layout version of the whole store, stored under format_key.
inline constexpr std::uint64_t store_format_v1 = 1;

inline constexpr std::string_view data_prefix = "d/";
inline constexpr std::string_view index_prefix = "e/";
inline constexpr std::string_view meta_prefix = "m/";
inline constexpr std::string_view format_key = "m/format";
inline constexpr std::string_view revision_key = "m/revision";
inline constexpr std::string_view next_session_key = "m/next_session";

std::string data_key(std::string_view user_key);
// Prefix of every index key of `owner`.
std::string index_prefix_of(session_id owner);
std::string index_key(session_id owner, std::string_view user_key);

struct index_entry {
    session_id owner = no_session;
    std::string user_key;
};
// Splits an index key; false when it is too short to hold a session id.
bool parse_index_key(std::string_view raw_key, index_entry& out);

// Encodes `r` to be stored under the RocksDB key `raw_key`.
std::string encode_record(std::string_view raw_key, const record& r);
std::string encode_u64(std::string_view raw_key, std::uint64_t value);

// Decodes a value read under `raw_key`. A short record or a checksum mismatch is
// errc::corrupt_record; a record that passes its checksum but has an unknown format version is
// errc::incompatible_format (written by a newer build). `why`, when given, receives a one-line
// reason.
result<record> decode_record(std::string_view raw_key, std::string_view raw, std::string* why);
result<std::uint64_t> decode_u64(std::string_view raw_key, std::string_view raw, std::string* why);

// `key` with every byte outside printable ASCII, and the backslash, escaped as \xNN (for logs and
// reports).
std::string printable(std::string_view key);

}  // namespace nereus::meta::format
