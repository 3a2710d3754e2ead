#include "nereus/ledger/ledger_stream.h"

#include "nereus/ledger/records.h"

#include <algorithm>

namespace nereus::ledger {

ledger_stream::ledger_stream(storage::stream_store* streams,
                             storage::stream_id id,
                             std::uint32_t block,
                             cursor::offset start,
                             cursor::offset end)
    : streams_(streams),
      id_(id),
      block_(std::max<std::uint32_t>(block, 1)),
      start_(start),
      end_(end) {}

void ledger_stream::raise_start(cursor::offset x) {
    cursor::offset cur = start_.load();
    while (x > cur && !start_.compare_exchange_weak(cur, x)) {
    }
}

void ledger_stream::set_trimmed_max_time(std::optional<std::int64_t> t) {
    const std::lock_guard lock(mu_);
    trimmed_max_ = t;
}

std::optional<std::int64_t> ledger_stream::trimmed_max_time() const {
    const std::lock_guard lock(mu_);
    return trimmed_max_;
}

void ledger_stream::on_appended(cursor::offset at, std::int64_t publish_time, std::size_t bytes) {
    // The index step comes before end() moves past `at`: an ensure_built() that reads the new
    // end() finds `at` either indexed here or, if this skipped the lock, below end() for its
    // catch-up scan.
    if (built_.load()) {
        const std::lock_guard lock(mu_);
        if (built_ && at == indexed_end_) {
            add_locked(at, publish_time, bytes);
        } else if (built_ && at > indexed_end_) {
            // A gap: entries below `at` were never confirmed here (a failed append that the
            // stream log's in-process reopen recovered, intact). Rebuild on the next lookup.
            built_ = false;
        }
    }
    cursor::offset cur = end_.load();
    while (at + 1 > cur && !end_.compare_exchange_weak(cur, at + 1)) {
    }
}

void ledger_stream::add_locked(cursor::offset at, std::int64_t t, std::size_t bytes) const {
    const std::size_t b = at / block_;
    if (blocks_.size() <= b) {
        blocks_.resize(b + 1);
    }
    auto& bi = blocks_[b];
    bi.max_time = bi.has ? std::max(bi.max_time, t) : t;
    bi.has = true;
    bi.bytes += bytes;
    indexed_end_ = at + 1;
}

template <class F>
result<void> ledger_stream::scan(cursor::offset from, cursor::offset to, F&& f) const {
    cursor::offset at = from;
    while (at < to) {
        auto batch = streams_->read(id_, storage::offset(at), std::min<std::uint64_t>(to - at, 512),
                                    4U << 20);
        if (!batch) {
            return nereus::error(batch.error());
        }
        if (batch->empty()) {
            break;
        }
        for (const auto& e : *batch) {
            if (e.at.value() >= to) {
                return {};
            }
            auto h = format::decode_entry_header(e.payload);
            if (!h) {
                return nereus::error(h.error());
            }
            f(e.at.value(), h->publish_time, e.payload.size());
        }
        at = batch->next(storage::offset(at)).value();
    }
    return {};
}

result<void> ledger_stream::ensure_built() const {
    const auto add = [this](cursor::offset at, std::int64_t t, std::size_t n) {
        if (at == indexed_end_) {
            add_locked(at, t, n);
        }
    };
    if (built_.load()) {
        // Catch-up: appends that completed without the lock while the index was being built
        // (on_appended read built_ before it was set). Usually nothing to read.
        const cursor::offset to = end_.load();
        if (indexed_end_ >= to || scan(indexed_end_, to, add)) {
            return {};
        }
        built_.store(false);  // the catch-up could not read: rebuilt from scratch below
    }
    const cursor::offset from = start_.load();
    const cursor::offset to = end_.load();
    blocks_.clear();
    indexed_end_ = from;
    auto r = scan(from, to, add);
    if (!r) {
        return r;
    }
    built_.store(true);
    return {};
}

result<cursor::stream_view::time_lookup> ledger_stream::lookup(std::int64_t publish_time) const {
    const std::lock_guard lock(mu_);
    const cursor::offset s = start_.load();
    if (trimmed_max_ && *trimmed_max_ >= publish_time) {
        return time_lookup{s, true};
    }
    NEREUS_TRY(ensure_built());
    const cursor::offset e = std::min<cursor::offset>(end_.load(), indexed_end_);
    for (std::size_t b = s / block_; b < blocks_.size() && b * block_ < e; ++b) {
        if (!blocks_[b].has || blocks_[b].max_time < publish_time) {
            continue;
        }
        const cursor::offset from = std::max<cursor::offset>(s, b * block_);
        const cursor::offset to = std::min<cursor::offset>(e, (b + 1) * block_);
        std::optional<cursor::offset> found;
        NEREUS_TRY(scan(from, to, [&](cursor::offset at, std::int64_t t, std::size_t) {
            if (!found && t >= publish_time) {
                found = at;
            }
        }));
        if (found) {
            return time_lookup{*found, false};
        }
    }
    return time_lookup{end_.load(), false};
}

cursor::stream_view::time_lookup ledger_stream::find_by_time(std::int64_t publish_time) const {
    auto r = lookup(publish_time);
    // A storage error cannot be reported through stream_view: answer conservatively (start, so
    // the reset redelivers more, never less) and say it was clamped.
    return r ? *r : time_lookup{start_.load(), true};
}

result<std::optional<std::int64_t>> ledger_stream::max_time(cursor::offset from,
                                                            cursor::offset to) const {
    const std::lock_guard lock(mu_);
    NEREUS_TRY(ensure_built());
    std::optional<std::int64_t> m;
    from = std::max(from, start_.load());
    to = std::min(to, indexed_end_);
    for (cursor::offset at = from; at < to;) {
        const std::size_t b = at / block_;
        const cursor::offset bend = (b + 1) * block_;
        if (at == b * block_ && bend <= to) {
            if (b < blocks_.size() && blocks_[b].has) {
                m = m ? std::max(*m, blocks_[b].max_time) : blocks_[b].max_time;
            }
            at = bend;
            continue;
        }
        const cursor::offset stop = std::min(bend, to);
        NEREUS_TRY(scan(at, stop, [&](cursor::offset, std::int64_t t, std::size_t) {
            m = m ? std::max(*m, t) : t;
        }));
        at = stop;
    }
    return m;
}

result<cursor::offset> ledger_stream::size_boundary(std::uint64_t bytes) const {
    const std::lock_guard lock(mu_);
    NEREUS_TRY(ensure_built());
    const cursor::offset s = start_.load();
    std::uint64_t sum = 0;
    cursor::offset boundary = indexed_end_;
    for (std::size_t b = blocks_.size(); b-- > s / block_;) {
        sum += blocks_[b].bytes;
        if (sum > bytes) {
            break;
        }
        boundary = std::max<cursor::offset>(s, b * block_);
    }
    return boundary;
}

}  // namespace nereus::ledger
