#pragma once

// Persistent records of the ledger (doc/format/ledger.md): the topic registry record, the
// stream-level cursor-retention root, the activity record, the per-entry header, and the meta
// keys they live under.
//
// Every metadata record is framed like the cursor's: magic "NLDG", u16 version, u8 kind,
// u8 reserved, u32 body length, body, crc32c; decoding is strict (canonical varints, no
// trailing bytes) and fails closed with errc::corrupt_record / unsupported_format.
// Thread-safety: pure functions.

#include "nereus/base/result.h"
#include "nereus/ledger/types.h"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace nereus::ledger::format {

// ---- keys ----
struct ledger_keys {
    std::string registry;   // ledgers/<topic>/registry     persistent
    std::string retention;  // ledgers/<topic>/retention    persistent, CAS under the owner
    std::string owner;      // ledgers/<topic>/owner        EPHEMERAL (owner session)
    std::string activity;   // ledgers/<topic>/activity     persistent
    static ledger_keys make(std::string_view topic);
};
// Store-wide counter the stream / ledger ids come from (never reused).
inline constexpr std::string_view kIdCounterKey = "ledgers-next-id";
// Reverses cursor::escape_name; nullopt when `s` is not a valid escaped name.
std::optional<std::string> unescape_name(std::string_view s);

// ---- registry ----
enum class topic_state : std::uint8_t { creating = 1, live = 2 };
struct registry_record {
    std::uint64_t stream_id = 0;
    std::uint64_t ledger_id = 0;
    topic_state state = topic_state::creating;
    friend bool operator==(const registry_record&, const registry_record&) = default;
};

// ---- retention root ----
struct pending_trim {
    offset target = 0;                // the new logical start
    std::vector<eviction> evictions;  // cursors to advance to `target` first
    friend bool operator==(const pending_trim&, const pending_trim&) = default;
};
struct retention_root {
    std::uint64_t owner = 0;        // raw owner session of the last claim
    std::uint64_t claim_epoch = 0;  // +1 per writable open
    offset start = 0;               // logical start (monotonic)
    offset floor = 0;               // finalized protection floor (>= start)
    std::optional<pending_trim> trim;
    retention_policy policy;
    bool has_trimmed_time = false;
    std::int64_t trimmed_max_time = 0;  // max publish time of every entry below `start`
    std::vector<eviction> history;      // the last kMaxHistory evictions
    static constexpr std::size_t kMaxHistory = 32;
    friend bool operator==(const retention_root&, const retention_root&) = default;
};

// ---- activity (idle expiry) ----
struct activity_record {
    std::vector<std::pair<std::string, std::int64_t>> last_active;  // cursor -> ms, ascending
    friend bool operator==(const activity_record&, const activity_record&) = default;
};

std::string encode(const registry_record& r);
std::string encode(const retention_root& r);
std::string encode(const activity_record& r);
result<registry_record> decode_registry(std::string_view bytes);
result<retention_root> decode_retention(std::string_view bytes);
result<activity_record> decode_activity(std::string_view bytes);

// ---- entry header (in front of every payload in the stream log) ----
// u8 version (1), u8 flags (0), u32 LE batch_size, i64 LE publish_time.
inline constexpr std::size_t kEntryHeaderSize = 14;
struct entry_header {
    std::uint32_t batch_size = 1;
    std::int64_t publish_time = 0;
};
void encode_entry_header(const entry_header& h, std::span<std::byte, kEntryHeaderSize> out);
// errc::corrupt_record for a short or malformed header.
result<entry_header> decode_entry_header(std::span<const std::byte> entry);

}  // namespace nereus::ledger::format
