#include "nereus/cursor/cursor_state.h"

#include "nereus/cursor/errc.h"

#include <algorithm>
#include <type_traits>

namespace nereus::cursor {
namespace {

// Upper bounds of encoded sizes (record_format.cc): a varint of a u64 takes at most 10 bytes.
constexpr std::size_t range_cost = 20;
constexpr std::size_t redelivery_cost = 15;
constexpr std::size_t base_cost = 32;

std::size_t batch_cost(const batch_bits& b) {
    return 16 + b.words().size() * 8;
}
std::size_t prop_cost(const std::string& k, const std::string& v) {
    return k.size() + v.size() + 10;
}

template <class>
[[maybe_unused]] inline constexpr bool always_false = false;  // clang 14: -Wunused-const-variable

}  // namespace

const batch_bits* cursor_state::remaining(offset x) const {
    auto it = batches_.find(x);
    return it == batches_.end() ? nullptr : &it->second;
}

std::uint64_t cursor_state::backlog(offset end) const {
    if (end <= mdo_) {
        return 0;
    }
    const std::uint64_t span = end - mdo_;
    return span > ranges_.covered() ? span - ranges_.covered() : 0;
}

offset cursor_state::next_unacked(offset x) const {
    x = std::max(x, mdo_);
    if (auto r = ranges_.find(x)) {
        return r->end;
    }
    return x;
}

offset cursor_state::skip_target(std::uint64_t n, offset end) const {
    offset pos = mdo_;
    std::uint64_t rem = n;
    bool done = false;
    ranges_.for_each([&](const offset_range& r) {
        if (done) {
            return;
        }
        const std::uint64_t gap = r.begin - pos;
        if (gap >= rem) {
            pos += rem;
            rem = 0;
            done = true;
            return;
        }
        rem -= gap;
        pos = r.end;
    });
    if (!done) {
        pos = (end > pos && end - pos > rem) ? pos + rem : std::max(pos, end);
    }
    return std::min(pos, std::max(end, mdo_));
}

result<void> cursor_state::validate(const state_op& op) const {
    return std::visit(
        [&](const auto& o) -> result<void> {
            using T = std::decay_t<decltype(o)>;
            if constexpr (std::is_same_v<T, ack_range_op>) {
                if (o.begin >= o.end) {
                    return nereus::error(errc::invalid_argument);
                }
            } else if constexpr (std::is_same_v<T, ack_batch_op>) {
                if (!o.acked.valid()) {
                    return nereus::error(errc::invalid_argument);
                }
                if (auto* b = remaining(o.entry); b != nullptr && b->size() != o.acked.size()) {
                    return nereus::error(errc::invalid_argument);
                }
            } else if constexpr (std::is_same_v<T, ack_cumulative_op>) {
                if (o.prefix_end) {
                    if (o.batch_size == 0 || o.batch_size > batch_bits::max_size ||
                        *o.prefix_end > o.batch_size) {
                        return nereus::error(errc::invalid_argument);
                    }
                    if (auto* b = remaining(o.entry); b != nullptr && b->size() != o.batch_size) {
                        return nereus::error(errc::invalid_argument);
                    }
                }
                for (const auto& [k, v] : o.props) {
                    if (k.empty()) {
                        return nereus::error(errc::invalid_argument);
                    }
                }
            } else if constexpr (std::is_same_v<T, put_property_op>) {
                if (o.key.empty()) {
                    return nereus::error(errc::invalid_argument);
                }
            } else if constexpr (std::is_same_v<T, remove_property_op>) {
                if (o.key.empty()) {
                    return nereus::error(errc::invalid_argument);
                }
            } else if constexpr (std::is_same_v<T, replace_properties_op>) {
                for (const auto& [k, v] : o.props) {
                    if (k.empty()) {
                        return nereus::error(errc::invalid_argument);
                    }
                }
            } else if constexpr (std::is_same_v<T, redelivery_op>) {
                // Any count is valid; 0 erases.
            } else {
                static_assert(always_false<T>);
            }
            return {};
        },
        op);
}

bool cursor_state::changes(const state_op& op) const {
    return std::visit(
        [&](const auto& o) -> bool {
            using T = std::decay_t<decltype(o)>;
            if constexpr (std::is_same_v<T, ack_range_op>) {
                const offset b = std::max(o.begin, mdo_);
                if (b >= o.end) {
                    return false;
                }
                auto r = ranges_.find(b);
                return !r || r->end < o.end;
            } else if constexpr (std::is_same_v<T, ack_batch_op>) {
                if (is_acked(o.entry)) {
                    return false;
                }
                batch_bits cur = remaining(o.entry) ? *remaining(o.entry)
                                                    : batch_bits::all_remaining(o.acked.size());
                const batch_bits before = cur;
                cur.clear_bits(o.acked);
                return cur != before;
            } else if constexpr (std::is_same_v<T, ack_cumulative_op>) {
                if (!o.prefix_end || *o.prefix_end >= o.batch_size) {
                    return o.entry + 1 > mdo_;
                }
                if (o.entry > mdo_) {
                    return true;
                }
                if (o.entry < mdo_ || ranges_.contains(o.entry)) {
                    return false;
                }
                const batch_bits* b = remaining(o.entry);
                if (b == nullptr) {
                    return *o.prefix_end > 0;
                }
                batch_bits cur = *b;
                cur.clear_prefix(*o.prefix_end);
                return cur != *b;
            } else if constexpr (std::is_same_v<T, put_property_op>) {
                auto it = props_.find(o.key);
                return it == props_.end() || it->second != o.value;
            } else if constexpr (std::is_same_v<T, remove_property_op>) {
                return props_.contains(o.key);
            } else if constexpr (std::is_same_v<T, replace_properties_op>) {
                return props_ != o.props;
            } else if constexpr (std::is_same_v<T, redelivery_op>) {
                if (is_acked(o.entry)) {
                    return false;
                }
                auto it = redeliveries_.find(o.entry);
                return (it == redeliveries_.end() ? 0U : it->second) != o.count;
            } else {
                static_assert(always_false<T>);
            }
        },
        op);
}

bool cursor_state::apply(const state_op& op) {
    return std::visit(
        [&](const auto& o) -> bool {
            using T = std::decay_t<decltype(o)>;
            if constexpr (std::is_same_v<T, ack_range_op>) {
                return ack_range(o.begin, o.end);
            } else if constexpr (std::is_same_v<T, ack_batch_op>) {
                return ack_batch(o.entry, o.acked);
            } else if constexpr (std::is_same_v<T, ack_cumulative_op>) {
                return ack_cumulative(o);
            } else if constexpr (std::is_same_v<T, put_property_op>) {
                if (!changes(op)) {
                    return false;
                }
                put_property(o.key, o.value);
                return true;
            } else if constexpr (std::is_same_v<T, remove_property_op>) {
                auto it = props_.find(o.key);
                if (it == props_.end()) {
                    return false;
                }
                prop_bytes_ -= prop_cost(it->first, it->second);
                props_.erase(it);
                return true;
            } else if constexpr (std::is_same_v<T, replace_properties_op>) {
                if (props_ == o.props) {
                    return false;
                }
                props_.clear();
                prop_bytes_ = 0;
                for (const auto& [k, v] : o.props) {
                    put_property(k, v);
                }
                return true;
            } else if constexpr (std::is_same_v<T, redelivery_op>) {
                if (!changes(op)) {
                    return false;
                }
                set_redelivery(o.entry, o.count);
                return true;
            } else {
                static_assert(always_false<T>);
            }
        },
        op);
}

bool cursor_state::ack_range(offset begin, offset end) {
    begin = std::max(begin, mdo_);
    if (begin >= end) {
        return false;
    }
    const std::uint64_t added = ranges_.insert(begin, end);
    if (added == 0) {
        return false;
    }
    erase_entries(begin, end);
    normalize_front();
    return true;
}

bool cursor_state::ack_batch(offset entry, const batch_bits& acked) {
    if (is_acked(entry)) {
        return false;
    }
    auto it = batches_.find(entry);
    batch_bits cur = it != batches_.end() ? it->second : batch_bits::all_remaining(acked.size());
    const batch_bits before = cur;
    cur.clear_bits(acked);
    if (cur == before) {
        return false;
    }
    if (cur.none()) {
        return ack_range(entry, entry + 1);
    }
    put_batch(entry, std::move(cur));
    return true;
}

bool cursor_state::ack_cumulative(const ack_cumulative_op& o) {
    bool changed = false;
    if (!o.prefix_end || *o.prefix_end >= o.batch_size) {
        if (o.entry + 1 > mdo_) {
            advance_to(o.entry + 1);
            changed = true;
        }
    } else {
        if (o.entry > mdo_) {
            advance_to(o.entry);
            changed = true;
        }
        if (o.entry == mdo_ && !ranges_.contains(o.entry)) {
            auto it = batches_.find(o.entry);
            batch_bits cur =
                it != batches_.end() ? it->second : batch_bits::all_remaining(o.batch_size);
            const batch_bits before = cur;
            cur.clear_prefix(*o.prefix_end);
            if (it == batches_.end() ? *o.prefix_end > 0 : cur != before) {
                changed = true;
                if (cur.none()) {
                    ack_range(o.entry, o.entry + 1);
                } else {
                    put_batch(o.entry, std::move(cur));
                }
            }
        }
    }
    if (changed) {
        put_props(o.props);
    }
    return changed;
}

bool cursor_state::put_props(const property_map& props) {
    bool changed = false;
    for (const auto& [k, v] : props) {
        auto it = props_.find(k);
        if (it == props_.end() || it->second != v) {
            put_property(k, v);
            changed = true;
        }
    }
    return changed;
}

void cursor_state::put_property(std::string key, std::string value) {
    auto it = props_.find(key);
    if (it != props_.end()) {
        prop_bytes_ -= prop_cost(it->first, it->second);
        prop_bytes_ += prop_cost(it->first, value);
        it->second = std::move(value);
        return;
    }
    prop_bytes_ += prop_cost(key, value);
    props_.emplace(std::move(key), std::move(value));
}

void cursor_state::put_batch(offset entry, batch_bits bits) {
    auto it = batches_.find(entry);
    if (it != batches_.end()) {
        batch_bytes_ -= batch_cost(it->second);
        batch_bytes_ += batch_cost(bits);
        it->second = std::move(bits);
        return;
    }
    batch_bytes_ += batch_cost(bits);
    batches_.emplace(entry, std::move(bits));
}

void cursor_state::erase_batch(std::map<offset, batch_bits>::iterator it) {
    batch_bytes_ -= batch_cost(it->second);
    batches_.erase(it);
}

void cursor_state::erase_entries(offset begin, offset end) {
    for (auto it = batches_.lower_bound(begin); it != batches_.end() && it->first < end;) {
        auto victim = it++;
        erase_batch(victim);
    }
    redeliveries_.erase(redeliveries_.lower_bound(begin), redeliveries_.lower_bound(end));
}

void cursor_state::normalize_front() {
    while (auto f = ranges_.front()) {
        if (f->begin != mdo_) {
            break;
        }
        mdo_ = f->end;
        ranges_.pop_front();
    }
    erase_entries(0, mdo_);
}

void cursor_state::advance_to(offset x) {
    if (x <= mdo_) {
        return;
    }
    ranges_.erase_below(x);
    mdo_ = x;
    normalize_front();
}

void cursor_state::reset_to(offset mark_delete) {
    mdo_ = mark_delete;
    ranges_.clear();
    batches_.clear();
    batch_bytes_ = 0;
    redeliveries_.clear();
}

void cursor_state::set_redelivery(offset entry, std::uint32_t count) {
    if (is_acked(entry)) {
        return;
    }
    if (count == 0) {
        redeliveries_.erase(entry);
    } else {
        redeliveries_[entry] = count;
    }
}

std::size_t cursor_state::estimated_bytes() const {
    return base_cost + ranges_.size() * range_cost + batch_bytes_ + prop_bytes_ +
           redeliveries_.size() * redelivery_cost;
}

std::size_t cursor_state::op_cost(const state_op& op) {
    return std::visit(
        [](const auto& o) -> std::size_t {
            using T = std::decay_t<decltype(o)>;
            if constexpr (std::is_same_v<T, ack_range_op>) {
                return range_cost;
            } else if constexpr (std::is_same_v<T, ack_batch_op>) {
                return batch_cost(o.acked);
            } else if constexpr (std::is_same_v<T, ack_cumulative_op>) {
                std::size_t c = o.prefix_end ? 16 + (std::size_t{o.batch_size} + 63) / 64 * 8 : 0;
                for (const auto& [k, v] : o.props) {
                    c += prop_cost(k, v);
                }
                return c;
            } else if constexpr (std::is_same_v<T, put_property_op>) {
                return prop_cost(o.key, o.value);
            } else if constexpr (std::is_same_v<T, remove_property_op>) {
                return 0;
            } else if constexpr (std::is_same_v<T, replace_properties_op>) {
                std::size_t c = 0;
                for (const auto& [k, v] : o.props) {
                    c += prop_cost(k, v);
                }
                return c;
            } else if constexpr (std::is_same_v<T, redelivery_op>) {
                return redelivery_cost;
            } else {
                static_assert(always_false<T>);
            }
        },
        op);
}

bool cursor_state::check() const {
    if (auto f = ranges_.front(); f && f->begin <= mdo_) {
        return false;
    }
    for (const auto& [e, b] : batches_) {
        if (is_acked(e) || !b.valid() || b.none()) {
            return false;
        }
    }
    for (const auto& [e, c] : redeliveries_) {
        if (is_acked(e) || c == 0) {
            return false;
        }
    }
    return true;
}

}  // namespace nereus::cursor
