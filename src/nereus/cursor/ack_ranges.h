#pragma once

// ack_ranges — the individually acked offsets of a cursor as sorted, non-overlapping,
// non-adjacent half-open ranges [begin, end) (adjacent ranges are always merged).
//
// Representation: a chunked sorted vector (a flat B-tree of height 2). Each chunk holds up to
// `max_chunk` ranges of 16 bytes in one vector; `firsts_` holds each chunk's first begin for a
// binary search. A lookup is two binary searches (O(log n)); an insert moves at most one
// chunk's tail (bounded, O(max_chunk)), and splits a full chunk before inserting into it. Resident
// cost is 16 bytes per range when chunks are full and at most ~32 bytes when they are half full
// (the worst case after splits); appends in ascending order fill chunks completely.
//
// Ownership: owns its ranges. Thread-safety: thread-compatible.
// Durability: none (in-memory; the cursor persists it through record_format.h).

#include "nereus/cursor/types.h"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

namespace nereus::cursor {

class ack_ranges {
public:
    static constexpr std::size_t max_chunk = 512;

    ack_ranges() = default;
    ack_ranges(const ack_ranges&) = default;
    ack_ranges& operator=(const ack_ranges&) = default;
    ack_ranges(ack_ranges&&) noexcept = default;
    ack_ranges& operator=(ack_ranges&&) noexcept = default;
    ~ack_ranges() = default;

    // True when `x` lies in some range.
    [[nodiscard]] bool contains(offset x) const;
    // The range containing `x`, if any.
    [[nodiscard]] std::optional<offset_range> find(offset x) const;
    // Adds [begin, end), merging with overlapping and adjacent ranges. Returns how many offsets
    // were newly covered (0 when all were covered already). Requires: begin < end.
    std::uint64_t insert(offset begin, offset end);
    // Appends [begin, end) after every range. Requires: begin > last().end (not adjacent).
    // Used by decoders to bulk-load in O(1) per range.
    void append(offset begin, offset end);
    // Removes every offset below `x` (a range straddling `x` is cut to [x, end)). Returns how
    // many covered offsets were removed.
    std::uint64_t erase_below(offset x);
    // The lowest range, if any.
    [[nodiscard]] std::optional<offset_range> front() const;
    // Removes the lowest range. Requires: !empty().
    void pop_front();
    void clear();

    [[nodiscard]] bool empty() const { return count_ == 0; }
    // Number of ranges.
    [[nodiscard]] std::size_t size() const { return count_; }
    // Number of offsets covered by all ranges.
    [[nodiscard]] std::uint64_t covered() const { return covered_; }
    // Bytes held on the heap and in this object (for the 32-bytes-per-hole budget).
    [[nodiscard]] std::size_t memory_bytes() const;

    // Calls f(range) for every range in ascending order.
    template <class F>
    void for_each(F&& f) const {
        for (const auto& c : chunks_) {
            for (const auto& r : c) {
                f(r);
            }
        }
    }
    // All ranges, ascending (for tests and snapshots of small states).
    [[nodiscard]] std::vector<offset_range> to_vector() const;

    friend bool operator==(const ack_ranges& a, const ack_ranges& b) {
        return a.count_ == b.count_ && a.covered_ == b.covered_ && a.to_vector() == b.to_vector();
    }

private:
    struct pos {
        std::size_t chunk;
        std::size_t index;
    };
    // The first range whose end >= x (so it overlaps or touches [x, ...)), or end position.
    [[nodiscard]] pos first_touching(offset x) const;
    [[nodiscard]] bool at_end(pos p) const { return p.chunk >= chunks_.size(); }
    offset_range& at(pos p) { return chunks_[p.chunk][p.index]; }
    void next(pos& p) const;
    // Splits a full chunk into two halves, each with room for max_chunk ranges.
    void split_full(std::size_t chunk);
    void drop_empty_chunk(std::size_t chunk);

    std::vector<std::vector<offset_range>> chunks_;
    std::vector<offset> firsts_;  // firsts_[i] == chunks_[i].front().begin
    std::size_t count_ = 0;
    std::uint64_t covered_ = 0;
};

}  // namespace nereus::cursor
