#pragma once

// A subscription's delivered-but-unacked entries by entry id: an ordered map from entry id to
// a value, specialised for the dispatch pattern (entries delivered in increasing id order, acked
// mostly in the same order) — a ring of slots sorted by id, with erased slots left as tombstones
// until they reach either end.
//
//   insert at the back (id above every live one)   O(1), no allocation once the ring has grown
//   find / contains                                O(log n) binary search over the ring
//   erase(it)                                      O(1) + the tombstones popped at either end
//   insert below the back (a redelivery)           O(n) shift, rare
// Tombstones in the middle (an old entry still unacked while later ones are acked) are dropped
// by compact(), which insertions run when they outnumber the live slots (amortised O(1)), so
// memory stays O(live entries). The iteration order is ascending id, like std::map.
//
// Iterators are positions: erase(it) returns the next live one and keeps every other iterator
// valid; any insertion may invalidate all of them (std::vector rules). A past-the-end iterator
// compares equal to end() even after the end moved.
// Ownership: owns its values. Thread-safety: none (the subscription guards it with its mutex).
// Durability: in memory only.

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace nereus::broker {

template <class V>
class pending_index {
    struct slot {
        std::pair<std::uint64_t, V> kv{};
        bool live = false;
    };

public:
    class iterator {
    public:
        std::pair<std::uint64_t, V>& operator*() const { return c_->at(pos_).kv; }
        std::pair<std::uint64_t, V>* operator->() const { return &c_->at(pos_).kv; }
        iterator& operator++() {
            pos_ = c_->next_live(pos_ + 1);
            return *this;
        }
        bool operator==(const iterator& o) const {
            const bool a_end = pos_ >= c_->end_pos();
            const bool b_end = o.pos_ >= o.c_->end_pos();
            return a_end || b_end ? a_end == b_end : pos_ == o.pos_;
        }

    private:
        friend class pending_index;
        iterator(pending_index* c, std::uint64_t pos) : c_(c), pos_(pos) {}
        pending_index* c_;
        std::uint64_t pos_;  // absolute position (head_ .. head_ + count_)
    };

    bool empty() const noexcept { return live_ == 0; }
    std::size_t size() const noexcept { return live_; }
    // Requires !empty(): the highest live id (the back slot is always live).
    std::uint64_t back_key() const noexcept { return at(head_ + count_ - 1).kv.first; }

    iterator begin() { return iterator(this, head_); }  // the front slot is always live
    iterator end() { return iterator(this, end_pos()); }

    iterator find(std::uint64_t key) {
        const std::uint64_t p = lower_bound(key);
        if (p < end_pos() && at(p).live && at(p).kv.first == key) {
            return iterator(this, p);
        }
        return end();
    }
    bool contains(std::uint64_t key) { return find(key) != end(); }

    // Inserts or overwrites `key`.
    void insert_or_assign(std::uint64_t key, const V& v) {
        maybe_compact();
        if (count_ == 0 || key > back_key()) {
            grow_for_one();
            slot& s = at(head_ + count_);
            s.kv = {key, v};
            s.live = true;
            ++count_;
            ++live_;
            return;
        }
        const std::uint64_t p = lower_bound(key);
        if (at(p).kv.first == key) {  // p < end: key <= back_key()
            slot& s = at(p);
            if (!s.live) {
                ++live_;
            }
            s.kv.second = v;
            s.live = true;
            return;
        }
        grow_for_one();
        std::uint64_t where = p;
        if (p == head_ && head_ > 0) {
            where = --head_;  // below every slot: in front, no shift
        } else {
            for (std::uint64_t i = head_ + count_; i > p; --i) {
                at(i) = std::move(at(i - 1));
            }
        }
        slot& s = at(where);
        s.kv = {key, v};
        s.live = true;
        ++count_;
        ++live_;
    }

    // Erases a live entry; returns the next live one (or end()).
    iterator erase(iterator it) {
        slot& s = at(it.pos_);
        s.live = false;
        s.kv.second = V{};
        --live_;
        while (count_ > 0 && !at(head_).live) {
            ++head_;
            --count_;
        }
        while (count_ > 0 && !at(head_ + count_ - 1).live) {
            --count_;
        }
        if (count_ == 0) {
            head_ = 0;
            return end();
        }
        return iterator(this, next_live(it.pos_ < head_ ? head_ : it.pos_ + 1));
    }

    template <class Pred>
    void erase_if(Pred pred) {
        for (auto it = begin(); it != end();) {
            it = pred(*it) ? erase(it) : ++it;
        }
    }

    void clear() {
        slots_.clear();
        head_ = 0;
        count_ = 0;
        live_ = 0;
    }

    // Slots held, live or not (tests: memory stays O(live entries)).
    std::size_t slots_in_use() const noexcept { return count_; }

private:
    slot& at(std::uint64_t pos) { return slots_[pos & (slots_.size() - 1)]; }
    const slot& at(std::uint64_t pos) const { return slots_[pos & (slots_.size() - 1)]; }
    std::uint64_t end_pos() const noexcept { return head_ + count_; }

    std::uint64_t next_live(std::uint64_t pos) {
        while (pos < end_pos() && !at(pos).live) {
            ++pos;
        }
        return pos;
    }

    // First position whose id is >= key (tombstones keep their id, so the ring stays sorted).
    std::uint64_t lower_bound(std::uint64_t key) const {
        std::uint64_t lo = head_;
        std::uint64_t hi = end_pos();
        while (lo < hi) {
            const std::uint64_t mid = lo + (hi - lo) / 2;
            if (at(mid).kv.first < key) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        return lo;
    }

    // Room for one more slot, at either end.
    void grow_for_one() {
        if (count_ < slots_.size()) {
            return;
        }
        std::vector<slot> bigger(slots_.empty() ? 64 : slots_.size() * 2);
        const std::uint64_t mask = bigger.size() - 1;
        for (std::uint64_t i = head_; i < end_pos(); ++i) {
            bigger[i & mask] = std::move(at(i));
        }
        slots_.swap(bigger);
    }

    // Drops the tombstones once they outnumber the live slots (and the ring is not tiny).
    void maybe_compact() {
        if (count_ - live_ <= live_ + 64) {
            return;
        }
        std::uint64_t out = head_;
        for (std::uint64_t i = head_; i < end_pos(); ++i) {
            if (at(i).live) {
                if (out != i) {
                    at(out) = std::move(at(i));
                }
                ++out;
            }
        }
        for (std::uint64_t i = out; i < end_pos(); ++i) {
            at(i) = slot{};
        }
        count_ = out - head_;
    }

    std::vector<slot> slots_;  // size 0 or a power of two
    std::uint64_t head_ = 0;   // absolute position of the front slot
    std::uint64_t count_ = 0;  // slots from head_, live or tombstones (front and back live)
    std::size_t live_ = 0;
};

}  // namespace nereus::broker
