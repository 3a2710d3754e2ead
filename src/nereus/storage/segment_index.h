#pragma once

// sparse_index: a segment's sparse offset index, kept in memory — one (offset, byte position)
// entry per `interval` bytes of records, so a read seeks to at most `interval` bytes before the
// record it wants. Built while appending, while scanning the active segment at recovery, or
// lazily by the first read of a sealed segment.
//
// Thread-safety: thread-compatible (the owner's lock guards it).

#include <algorithm>
#include <cstdint>
#include <vector>

namespace nereus::storage {

struct index_entry {
    std::uint64_t offset;
    std::uint64_t pos;  // byte position of that offset's record in the segment file
};

class sparse_index {
public:
    // Records that `offset` starts at `pos`; keeps it if `interval` bytes passed since the last
    // kept entry (the first record is always kept).
    void observe(std::uint64_t offset, std::uint64_t pos, std::uint64_t interval) {
        if (entries_.empty() || pos - entries_.back().pos >= interval) {
            entries_.push_back({offset, pos});
        }
    }
    void append(const std::vector<index_entry>& more) {
        entries_.insert(entries_.end(), more.begin(), more.end());
    }
    // The last entry at or before `offset`; `fallback` if none.
    [[nodiscard]] index_entry floor(std::uint64_t offset, index_entry fallback) const {
        auto it =
            std::upper_bound(entries_.begin(), entries_.end(), offset,
                             [](std::uint64_t o, const index_entry& e) { return o < e.offset; });
        if (it == entries_.begin()) {
            return fallback;
        }
        return *(it - 1);
    }
    // The first entry at or after `offset`; `fallback` if none. A read wanting the records
    // before `offset` finds them all before this entry's `pos`.
    [[nodiscard]] index_entry ceiling(std::uint64_t offset, index_entry fallback) const {
        auto it =
            std::lower_bound(entries_.begin(), entries_.end(), offset,
                             [](const index_entry& e, std::uint64_t o) { return e.offset < o; });
        if (it == entries_.end()) {
            return fallback;
        }
        return *it;
    }
    // Puts the entries of an earlier part of the segment in front.
    void prepend(const sparse_index& earlier) {
        entries_.insert(entries_.begin(), earlier.entries_.begin(), earlier.entries_.end());
    }
    [[nodiscard]] const std::vector<index_entry>& entries() const { return entries_; }
    [[nodiscard]] std::uint64_t last_pos() const {
        return entries_.empty() ? 0 : entries_.back().pos;
    }
    [[nodiscard]] bool empty() const { return entries_.empty(); }

private:
    std::vector<index_entry> entries_;
};

}  // namespace nereus::storage
