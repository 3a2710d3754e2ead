#pragma once

// The position of a message in a topic, as the broker names it: (ledger, entry) of the stored
// entry, the partition of a partitioned topic (-1 otherwise), and for a message that travelled
// in a batch its index in the batch (-1 otherwise) and the batch size.
//
// Ownership: a plain value. Thread-safety: thread-compatible.
// Ordering is Pulsar's: by (ledger, entry, batch_index); partitions are not comparable, so
// compare ids of one partition only.

#include <compare>
#include <cstdint>
#include <string>

namespace nereus::client {

struct message_id {
    std::int64_t ledger = -1;
    std::int64_t entry = -1;
    std::int32_t partition = -1;
    std::int32_t batch_index = -1;  // -1: not in a batch
    std::int32_t batch_size = 0;    // messages in the batch (0: not in a batch)

    // The position before the first message ("earliest": ledger = entry = -1).
    static constexpr message_id earliest() noexcept { return {-1, -1, -1, -1, 0}; }
    // The position after the last message ("latest": ledger = entry = INT64_MAX).
    static constexpr message_id latest() noexcept { return {INT64_MAX, INT64_MAX, -1, -1, 0}; }

    [[nodiscard]] bool is_batched() const noexcept { return batch_index >= 0; }
    // The same entry, without the batch index (the id a whole-entry ack uses).
    [[nodiscard]] message_id entry_id() const noexcept { return {ledger, entry, partition, -1, 0}; }

    // "ledger:entry:partition:batch_index", as Pulsar's clients print ids.
    [[nodiscard]] std::string to_string() const;

    friend bool operator==(const message_id& a, const message_id& b) noexcept {
        return a.ledger == b.ledger && a.entry == b.entry && a.partition == b.partition &&
               a.batch_index == b.batch_index;
    }
    friend std::strong_ordering operator<=>(const message_id& a, const message_id& b) noexcept {
        if (auto c = a.ledger <=> b.ledger; c != 0)
            return c;
        if (auto c = a.entry <=> b.entry; c != 0)
            return c;
        return a.batch_index <=> b.batch_index;
    }
};

}  // namespace nereus::client
