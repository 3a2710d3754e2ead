#include "nereus/cursor/op_merge.h"

#include <algorithm>
#include <map>
#include <utility>

namespace nereus::cursor {
namespace {

batch_bits union_of(const batch_bits& a, const batch_bits& b) {
    std::vector<std::uint64_t> w = a.words();
    for (std::size_t i = 0; i < w.size(); ++i) {
        w[i] |= b.words()[i];
    }
    return batch_bits::from_words(a.size(), std::move(w));
}

class run {
public:
    explicit run(const cursor_state& before) : before_(before) {}

    // False when `op` cannot join this run (a batch op whose size differs for the same entry).
    bool add(const state_op& op) {
        if (const auto* r = std::get_if<ack_range_op>(&op)) {
            ranges_.push_back({r->begin, r->end});
            return true;
        }
        const auto& b = std::get<ack_batch_op>(op);
        auto it = batches_.find(b.entry);
        if (it == batches_.end()) {
            batches_.emplace(b.entry, b.acked);
            return true;
        }
        if (it->second.size() != b.acked.size()) {
            return false;
        }
        it->second = union_of(it->second, b.acked);
        return true;
    }

    void flush(std::vector<state_op>& out) {
        for (auto it = batches_.begin(); it != batches_.end();) {
            const offset e = it->first;
            bool whole = before_.is_acked(e);
            if (!whole) {
                const batch_bits* cur = before_.remaining(e);
                batch_bits rem =
                    cur != nullptr ? *cur : batch_bits::all_remaining(it->second.size());
                rem.clear_bits(it->second);
                whole = rem.none();
            }
            if (whole) {
                ranges_.push_back({e, e + 1});
                it = batches_.erase(it);
            } else {
                ++it;
            }
        }
        std::sort(ranges_.begin(), ranges_.end(),
                  [](const offset_range& a, const offset_range& b) { return a.begin < b.begin; });
        std::vector<offset_range> joined;
        for (const auto& r : ranges_) {
            if (!joined.empty() && r.begin <= joined.back().end) {
                joined.back().end = std::max(joined.back().end, r.end);
            } else {
                joined.push_back(r);
            }
        }
        for (const auto& r : joined) {
            out.emplace_back(ack_range_op{r.begin, r.end});
        }
        for (auto& [e, bits] : batches_) {
            // Dropped when a range of this run acks the entry whole.
            auto after =
                std::upper_bound(joined.begin(), joined.end(), e,
                                 [](offset x, const offset_range& r) { return x < r.begin; });
            if (after != joined.begin() && std::prev(after)->end > e) {
                continue;
            }
            out.emplace_back(ack_batch_op{e, std::move(bits)});
        }
        ranges_.clear();
        batches_.clear();
    }

private:
    const cursor_state& before_;
    std::vector<offset_range> ranges_;
    std::map<offset, batch_bits> batches_;
};

}  // namespace

std::vector<state_op> merge_ops(const cursor_state& before, std::vector<state_op> ops) {
    std::vector<state_op> out;
    out.reserve(std::min<std::size_t>(ops.size(), 16));
    run current(before);
    for (auto& op : ops) {
        const bool individual =
            std::holds_alternative<ack_range_op>(op) || std::holds_alternative<ack_batch_op>(op);
        if (!individual) {
            current.flush(out);
            out.push_back(std::move(op));
            continue;
        }
        if (!current.add(op)) {
            current.flush(out);
            current.add(op);
        }
    }
    current.flush(out);
    return out;
}

}  // namespace nereus::cursor
