#pragma once

// batch_bits — the remaining (not yet acked) message indices of one batch entry, as a bitset of
// `size` bits (Pulsar's batchDeletedIndexes BitSet holds the same thing). A batch index is
// nested state of its entry and never becomes a stream offset.
//
// Ownership: owns its words. Thread-safety: thread-compatible. Durability: none.

#include <cstddef>
#include <cstdint>
#include <vector>

namespace nereus::cursor {

class batch_bits {
public:
    // The largest batch a batch-index ack may name (Pulsar batches are far smaller).
    static constexpr std::uint32_t max_size = 1U << 20;

    batch_bits() = default;
    // A batch of `size` messages, none acked (all bits remaining).
    static batch_bits all_remaining(std::uint32_t size);
    // A batch of `size` messages, none set; set() marks indices.
    static batch_bits none_set(std::uint32_t size);
    // From raw words (for decoders). Bits at or above `size` must be zero (checked by valid()).
    static batch_bits from_words(std::uint32_t size, std::vector<std::uint64_t> words);

    [[nodiscard]] std::uint32_t size() const { return size_; }
    [[nodiscard]] bool test(std::uint32_t i) const;
    void set(std::uint32_t i);
    void reset(std::uint32_t i);
    // Clears every bit that is set in `acked` (this &= ~acked). Requires: same size.
    void clear_bits(const batch_bits& acked);
    // Clears bits [0, n).
    void clear_prefix(std::uint32_t n);
    [[nodiscard]] bool none() const;
    [[nodiscard]] std::uint32_t count() const;
    // Indices of set bits, ascending.
    [[nodiscard]] std::vector<std::uint32_t> indices() const;
    [[nodiscard]] const std::vector<std::uint64_t>& words() const { return words_; }
    // True when the word count matches size and no bit at or above size is set.
    [[nodiscard]] bool valid() const;

    friend bool operator==(const batch_bits&, const batch_bits&) = default;

private:
    std::uint32_t size_ = 0;
    std::vector<std::uint64_t> words_;
};

}  // namespace nereus::cursor
