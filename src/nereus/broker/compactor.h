#pragma once

// The compaction algorithm (Pulsar's two-phase compactor, in memory): given the previous
// compacted view and the topic's entries after it, the new view with the latest value per key.
//
//  key        MessageMetadata.partition_key (SingleMessageMetadata.partition_key in a batch).
//             Messages without a key are not kept (as in Pulsar).
//  tombstone  an empty payload (or null_value): the key is removed from the view.
//  batches    split per key: a batch whose messages are all still the latest of their keys is
//             kept byte for byte; otherwise it is re-built (uncompressed) with only the
//             surviving messages, under the same entry id. compacted_out messages are skipped.
//  ids        every kept message keeps its entry id (its batch index may shrink in a re-built
//             batch, as Pulsar's RawBatchConverter does).
// An entry whose headers or batch cannot be parsed is not kept; it is counted in `skipped`.
//
// Ownership: the input entries' bytes are shared, not copied, when kept unchanged.
// Thread-safety: pure functions; the compactor instance is thread-compatible.
// Durability: none (topic_compaction.h persists the result).

#include "nereus/broker/compacted_view.h"
#include "nereus/broker/topic_backend.h"

#include <cstdint>
#include <vector>

namespace nereus::broker {

struct compaction_input {
    std::uint64_t entry_id = 0;
    std::int64_t publish_time = 0;
    std::uint32_t batch_size = 1;
    std::shared_ptr<const std::vector<std::byte>> data;  // headers_and_payload as stored
};

struct compaction_result {
    compacted_view view;
    std::uint64_t messages_read = 0;     // messages examined (previous view + new entries)
    std::uint64_t messages_removed = 0;  // superseded, tombstones, keyless
    std::uint64_t skipped = 0;           // entries that could not be parsed
};

// Builds the view over `previous` (may be empty; its entries are < its end) plus `after`
// (ascending ids, all in [previous.end, end)), covering [0, end).
compaction_result compact(const compacted_view& previous,
                          const std::vector<compaction_input>& after,
                          std::uint64_t ledger_id,
                          std::uint64_t end);

}  // namespace nereus::broker
