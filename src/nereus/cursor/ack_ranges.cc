#include "nereus/cursor/ack_ranges.h"

#include "nereus/base/assert.h"

#include <algorithm>
#include <iterator>

namespace nereus::cursor {

bool ack_ranges::contains(offset x) const {
    return find(x).has_value();
}

std::optional<offset_range> ack_ranges::find(offset x) const {
    auto c = std::upper_bound(firsts_.begin(), firsts_.end(), x);
    if (c == firsts_.begin()) {
        return std::nullopt;
    }
    const auto& chunk = chunks_[static_cast<std::size_t>(std::distance(firsts_.begin(), c)) - 1];
    auto r = std::upper_bound(chunk.begin(), chunk.end(), x,
                              [](offset v, const offset_range& e) { return v < e.begin; });
    // chunk.front().begin <= x, so r != chunk.begin().
    --r;
    if (x < r->end) {
        return *r;
    }
    return std::nullopt;
}

ack_ranges::pos ack_ranges::first_touching(offset x) const {
    if (chunks_.empty()) {
        return {0, 0};
    }
    auto c = std::upper_bound(firsts_.begin(), firsts_.end(), x);
    std::size_t ci =
        c == firsts_.begin() ? 0 : static_cast<std::size_t>(std::distance(firsts_.begin(), c)) - 1;
    const auto& chunk = chunks_[ci];
    auto r = std::lower_bound(chunk.begin(), chunk.end(), x,
                              [](const offset_range& e, offset v) { return e.end < v; });
    if (r == chunk.end()) {
        return {ci + 1, 0};
    }
    return {ci, static_cast<std::size_t>(std::distance(chunk.begin(), r))};
}

void ack_ranges::next(pos& p) const {
    if (++p.index >= chunks_[p.chunk].size()) {
        ++p.chunk;
        p.index = 0;
    }
}

void ack_ranges::split_full(std::size_t chunk) {
    auto& c = chunks_[chunk];
    const std::size_t half = c.size() / 2;
    std::vector<offset_range> lower;
    std::vector<offset_range> upper;
    lower.reserve(max_chunk);
    upper.reserve(max_chunk);
    lower.assign(c.begin(), c.begin() + static_cast<std::ptrdiff_t>(half));
    upper.assign(c.begin() + static_cast<std::ptrdiff_t>(half), c.end());
    const offset first = upper.front().begin;
    c = std::move(lower);
    chunks_.insert(chunks_.begin() + static_cast<std::ptrdiff_t>(chunk) + 1, std::move(upper));
    firsts_.insert(firsts_.begin() + static_cast<std::ptrdiff_t>(chunk) + 1, first);
}

void ack_ranges::drop_empty_chunk(std::size_t chunk) {
    if (chunk < chunks_.size() && chunks_[chunk].empty()) {
        chunks_.erase(chunks_.begin() + static_cast<std::ptrdiff_t>(chunk));
        firsts_.erase(firsts_.begin() + static_cast<std::ptrdiff_t>(chunk));
    }
}

std::uint64_t ack_ranges::insert(offset begin, offset end) {
    NEREUS_ASSERT(begin < end, "empty range [{}, {})", begin, end);
    if (chunks_.empty()) {
        append(begin, end);
        return end - begin;
    }
    pos p = first_touching(begin);
    if (at_end(p) || at(p).begin > end) {
        // No overlap and not adjacent: a new range before p (or after every range).
        if (at_end(p)) {
            if (chunks_.back().size() >= max_chunk) {
                append(begin, end);  // ascending inserts fill chunks completely
                return end - begin;
            }
            p = {chunks_.size() - 1, chunks_.back().size()};
        } else if (chunks_[p.chunk].size() >= max_chunk) {
            split_full(p.chunk);
            p = first_touching(begin);
            if (at_end(p)) {
                p = {chunks_.size() - 1, chunks_.back().size()};
            }
        }
        auto& c = chunks_[p.chunk];
        if (c.size() == c.capacity()) {
            c.reserve(std::min(max_chunk, std::max<std::size_t>(c.size() * 2, 4)));
        }
        c.insert(c.begin() + static_cast<std::ptrdiff_t>(p.index), offset_range{begin, end});
        if (p.index == 0) {
            firsts_[p.chunk] = begin;
        }
        ++count_;
        covered_ += end - begin;
        return end - begin;
    }
    // Merge every range from p whose begin <= end into one.
    offset_range merged{std::min(begin, at(p).begin), end};
    std::uint64_t removed = 0;
    std::size_t merged_count = 0;
    pos q = p;
    while (!at_end(q) && at(q).begin <= end) {
        merged.end = std::max(merged.end, at(q).end);
        removed += at(q).end - at(q).begin;
        ++merged_count;
        next(q);
    }
    // Replace [p, q) by `merged` at p.
    at(p) = merged;
    if (p.index == 0) {
        firsts_[p.chunk] = merged.begin;
    }
    if (merged_count > 1) {
        if (!at_end(q) && q.chunk == p.chunk) {
            auto& c = chunks_[p.chunk];
            c.erase(c.begin() + static_cast<std::ptrdiff_t>(p.index) + 1,
                    c.begin() + static_cast<std::ptrdiff_t>(q.index));
        } else {
            auto& c = chunks_[p.chunk];
            c.erase(c.begin() + static_cast<std::ptrdiff_t>(p.index) + 1, c.end());
            const std::size_t last = at_end(q) ? chunks_.size() : q.chunk;
            // Whole chunks strictly between p.chunk and last.
            if (last > p.chunk + 1) {
                chunks_.erase(chunks_.begin() + static_cast<std::ptrdiff_t>(p.chunk) + 1,
                              chunks_.begin() + static_cast<std::ptrdiff_t>(last));
                firsts_.erase(firsts_.begin() + static_cast<std::ptrdiff_t>(p.chunk) + 1,
                              firsts_.begin() + static_cast<std::ptrdiff_t>(last));
            }
            if (!at_end(q)) {
                const std::size_t qc = p.chunk + 1;
                auto& tail = chunks_[qc];
                tail.erase(tail.begin(), tail.begin() + static_cast<std::ptrdiff_t>(q.index));
                firsts_[qc] = tail.front().begin;
            }
        }
    }
    count_ -= merged_count - 1;
    const std::uint64_t added = (merged.end - merged.begin) - removed;
    covered_ += added;
    return added;
}

void ack_ranges::append(offset begin, offset end) {
    NEREUS_ASSERT(begin < end, "empty range [{}, {})", begin, end);
    NEREUS_ASSERT(chunks_.empty() || chunks_.back().back().end < begin,
                  "append [{}, {}) not above the last range", begin, end);
    if (chunks_.empty() || chunks_.back().size() >= max_chunk) {
        chunks_.emplace_back();
        chunks_.back().reserve(max_chunk);
        firsts_.push_back(begin);
    }
    chunks_.back().push_back(offset_range{begin, end});
    ++count_;
    covered_ += end - begin;
}

std::uint64_t ack_ranges::erase_below(offset x) {
    std::uint64_t removed = 0;
    std::size_t whole = 0;
    while (whole < chunks_.size() && chunks_[whole].back().end <= x) {
        for (const auto& r : chunks_[whole]) {
            removed += r.end - r.begin;
        }
        count_ -= chunks_[whole].size();
        ++whole;
    }
    chunks_.erase(chunks_.begin(), chunks_.begin() + static_cast<std::ptrdiff_t>(whole));
    firsts_.erase(firsts_.begin(), firsts_.begin() + static_cast<std::ptrdiff_t>(whole));
    if (chunks_.empty()) {
        covered_ -= removed;
        return removed;
    }
    auto& c = chunks_.front();
    std::size_t i = 0;
    while (i < c.size() && c[i].end <= x) {
        removed += c[i].end - c[i].begin;
        ++i;
    }
    c.erase(c.begin(), c.begin() + static_cast<std::ptrdiff_t>(i));
    count_ -= i;
    if (c.front().begin < x) {
        removed += x - c.front().begin;
        c.front().begin = x;
    }
    firsts_.front() = c.front().begin;
    covered_ -= removed;
    return removed;
}

std::optional<offset_range> ack_ranges::front() const {
    if (chunks_.empty()) {
        return std::nullopt;
    }
    return chunks_.front().front();
}

void ack_ranges::pop_front() {
    NEREUS_ASSERT(!chunks_.empty(), "pop_front on empty ack_ranges");
    auto& c = chunks_.front();
    covered_ -= c.front().end - c.front().begin;
    --count_;
    c.erase(c.begin());
    if (c.empty()) {
        drop_empty_chunk(0);
    } else {
        firsts_.front() = c.front().begin;
    }
}

void ack_ranges::clear() {
    chunks_.clear();
    firsts_.clear();
    count_ = 0;
    covered_ = 0;
}

std::size_t ack_ranges::memory_bytes() const {
    std::size_t bytes = sizeof(*this) + chunks_.capacity() * sizeof(chunks_[0]) +
                        firsts_.capacity() * sizeof(offset);
    for (const auto& c : chunks_) {
        bytes += c.capacity() * sizeof(offset_range);
    }
    return bytes;
}

std::vector<offset_range> ack_ranges::to_vector() const {
    std::vector<offset_range> out;
    out.reserve(count_);
    for_each([&](const offset_range& r) { out.push_back(r); });
    return out;
}

}  // namespace nereus::cursor
