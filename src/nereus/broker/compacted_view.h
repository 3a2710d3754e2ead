#pragma once

// A topic's compacted view (Pulsar's compacted topic): for every key, the latest message that
// was not a tombstone, among the topic's entries below `end` (the compaction horizon is entry
// end - 1, the last entry the view covers). Entries keep their original entry ids; a batch
// whose keys were partly superseded is re-built with only the surviving messages (uncompressed),
// every other entry is stored byte for byte as the producer sent it.
//
// The view is what a read_compacted subscription delivers before it continues with the log
// strictly after the horizon. It is persisted as one immutable object (encode/decode below,
// format in doc/format/compaction.md) that the topic's compaction record references together
// with `end`, so the snapshot and its barrier are published by one CAS (topic_compaction.h).
//
// Ownership: a view is immutable once built and shared (shared_ptr<const compacted_view>);
//   entries share their bytes with the dispatch_entry handed to consumers.
// Thread-safety: immutable, so thread-safe to read.
// Durability: none of its own (see topic_compaction.h).

#include "nereus/base/result.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

namespace nereus::broker {

struct compacted_entry {
    std::uint64_t entry_id = 0;
    std::int64_t publish_time = 0;
    std::uint32_t batch_size = 1;  // messages in `data` (after re-batching)
    // headers_and_payload: [0x0e01 crc32c][metadata size][MessageMetadata][payload].
    std::shared_ptr<const std::vector<std::byte>> data;
};

struct compacted_view {
    std::uint64_t ledger_id = 0;           // the topic incarnation the view belongs to
    std::uint64_t end = 0;                 // entries [0, end) are covered: horizon = end - 1
    std::uint64_t keys = 0;                // live keys in the view
    std::vector<compacted_entry> entries;  // ascending entry_id, all < end

    // Index of the first entry with entry_id >= id (entries.size() if none).
    std::size_t lower_bound(std::uint64_t id) const;
    // Bytes of every entry's data.
    std::uint64_t data_bytes() const;
};

// The snapshot object's bytes (doc/format/compaction.md).
std::vector<std::byte> encode_compacted_view(const compacted_view& v);
// Errors: proto::error_kind::metadata_failure when the bytes are not a valid snapshot
// (bad magic/version, truncated, checksum mismatch, entries out of order or >= end).
[[nodiscard]] result<compacted_view> decode_compacted_view(std::span<const std::byte> bytes);

}  // namespace nereus::broker
