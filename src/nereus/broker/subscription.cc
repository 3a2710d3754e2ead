#include "nereus/broker/subscription.h"

#include "nereus/broker/blocking_pool.h"
#include "nereus/broker/logger.h"
#include "nereus/proto/frame_format.h"
#include "nereus/proto/pulsar_api.h"
#include "nereus/proto/server_error.h"

#include <algorithm>
#include <bitset>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <utility>

namespace nereus::broker {

namespace {

constexpr std::int32_t key_slots = 1 << 16;

// MurmurHash3 x86 32-bit (public domain algorithm), seed 0.
std::uint32_t murmur3_32(const std::byte* data, std::size_t len) {
    constexpr std::uint32_t c1 = 0xcc9e2d51;
    constexpr std::uint32_t c2 = 0x1b873593;
    std::uint32_t h = 0;
    const std::size_t blocks = len / 4;
    for (std::size_t i = 0; i < blocks; ++i) {
        std::uint32_t k = std::uint32_t(data[4 * i]) | (std::uint32_t(data[4 * i + 1]) << 8) |
                          (std::uint32_t(data[4 * i + 2]) << 16) |
                          (std::uint32_t(data[4 * i + 3]) << 24);
        k *= c1;
        k = (k << 15) | (k >> 17);
        k *= c2;
        h ^= k;
        h = (h << 13) | (h >> 19);
        h = h * 5 + 0xe6546b64;
    }
    std::uint32_t k = 0;
    const std::byte* tail = data + 4 * blocks;
    switch (len & 3) {
        case 3:
            k ^= std::uint32_t(tail[2]) << 16;
            [[fallthrough]];
        case 2:
            k ^= std::uint32_t(tail[1]) << 8;
            [[fallthrough]];
        case 1:
            k ^= std::uint32_t(tail[0]);
            k *= c1;
            k = (k << 15) | (k >> 17);
            k *= c2;
            h ^= k;
            break;
        default:
            break;
    }
    h ^= static_cast<std::uint32_t>(len);
    h ^= h >> 16;
    h *= 0x85ebca6b;
    h ^= h >> 13;
    h *= 0xc2b2ae35;
    h ^= h >> 16;
    return h;
}

// The Key_Shared slot of a stored entry: ordering_key, else partition_key, else "NONE_KEY"
// (Pulsar's sticky key); an entry whose metadata cannot be read goes to slot 0.
std::int32_t key_slot(std::span<const std::byte> stored) {
    std::size_t at = 0;
    if (stored.size() >= 2 && proto::detail::load_be16(stored.data()) == proto::magic_crc32c) {
        at = proto::checksum_section_bytes;
    }
    if (stored.size() < at + 4) {
        return 0;
    }
    const std::uint32_t n = proto::detail::load_be32(stored.data() + at);
    at += 4;
    if (stored.size() - at < n) {
        return 0;
    }
    proto::pb::MessageMetadata md;
    if (!md.ParsePartialFromArray(stored.data() + at, static_cast<int>(n))) {
        return 0;
    }
    static const std::string none_key = "NONE_KEY";
    const std::string& key = md.has_ordering_key()    ? md.ordering_key()
                             : md.has_partition_key() ? md.partition_key()
                                                      : none_key;
    // Pulsar masks the sign bit first; modulo 2^16 that changes nothing.
    const auto h = murmur3_32(reinterpret_cast<const std::byte*>(key.data()), key.size());
    return static_cast<std::int32_t>(h % key_slots);
}

}  // namespace

const char* to_string(sub_type t) noexcept {
    switch (t) {
        case sub_type::exclusive:
            return "Exclusive";
        case sub_type::shared:
            return "Shared";
        case sub_type::failover:
            return "Failover";
        case sub_type::key_shared:
            return "Key_Shared";
    }
    return "Unknown";
}

subscription::subscription(std::string name,
                           std::shared_ptr<subscription_cursor> cursor,
                           boost::asio::any_io_executor ex,
                           const broker_options& options,
                           blocking_pool* pool)
    : name_(std::move(name)),
      cursor_(std::move(cursor)),
      ex_(std::move(ex)),
      options_(options),
      pool_(pool) {}

result<void> subscription::add_consumer(const std::shared_ptr<consumer>& c) {
    {
        std::lock_guard lock(mu_);
        if (!consumers_.empty()) {
            if (type_ != c->type) {
                return nereus::error(proto::error_kind::consumer_busy);
            }
            if (type_ == sub_type::exclusive) {
                return nereus::error(proto::error_kind::consumer_busy);
            }
            if (type_ == sub_type::key_shared && c->ks_mode != ks_mode_) {
                return nereus::error(proto::error_kind::consumer_busy);  // as Pulsar
            }
        } else {
            split_ranges_.clear();
            sticky_ranges_.clear();
            ks_mode_ = c->ks_mode;
        }
        if (c->type == sub_type::key_shared) {
            if (auto r = ks_attach_locked(*c); !r) {
                return r;
            }
        }
        type_ = c->type;
        consumers_.push_back(c);
        cursor_->set_connected(true);
        if (type_ == sub_type::exclusive || type_ == sub_type::failover) {
            elect_active_locked();
        }
    }
    return {};
}

std::size_t subscription::remove_consumer(const consumer& c) {
    std::lock_guard lock(mu_);
    const auto it = std::find_if(consumers_.begin(), consumers_.end(),
                                 [&](const auto& p) { return p.get() == &c; });
    if (it == consumers_.end()) {
        return consumers_.size();
    }
    const auto keep = *it;  // `c` stays valid while we clean up
    consumers_.erase(it);
    ks_detach_locked(c);
    release_pending_locked(&c, {});
    if (consumers_.empty()) {
        cursor_->set_connected(false);
    } else if (type_ == sub_type::exclusive || type_ == sub_type::failover) {
        elect_active_locked();
    }
    dispatch_locked();
    return consumers_.size();
}

std::size_t subscription::consumer_count() const {
    std::lock_guard lock(mu_);
    return consumers_.size();
}

void subscription::add_permits(const consumer& c, std::uint32_t n) {
    std::lock_guard lock(mu_);
    for (auto& p : consumers_) {
        if (p.get() == &c) {
            p->permits += n;
            break;
        }
    }
    dispatch_locked();
}

void subscription::notify_new_entries() {
    if (dispatch_scheduled_.exchange(true)) {
        return;
    }
    boost::asio::post(ex_, [self = shared_from_this()] {
        self->dispatch_scheduled_.store(false);
        self->dispatch();
    });
}

void subscription::dispatch() {
    std::lock_guard lock(mu_);
    dispatch_locked();
}

void subscription::elect_active_locked() {
    // Exclusive/Failover: the active consumer has the best (lowest) priority, then the smallest
    // name; ties keep attach order.
    consumer* best = nullptr;
    for (auto& p : consumers_) {
        if (best == nullptr || p->priority < best->priority ||
            (p->priority == best->priority && p->name < best->name)) {
            best = p.get();
        }
    }
    bool changed = false;
    for (auto& p : consumers_) {
        const bool active = p.get() == best;
        const bool flipped = p->active != active;
        changed = changed || flipped;
        p->active = active;
        if (flipped || !p->told_active) {
            p->told_active = true;
            if (auto s = p->sink.lock()) {
                s->active_consumer_change(p->id, active);
            }
        }
    }
    if (changed) {
        // The new active consumer starts again at the mark-delete position.
        for (auto& [entry, pend] : pending_) {
            (void)entry;
            if (pend.owner != best) {
                pend.owner = nullptr;
            }
        }
        pending_.erase_if([](const auto& kv) { return kv.second.owner == nullptr; });
        for (auto& p : consumers_) {
            if (p.get() != best) {
                p->unacked = 0;  // its deliveries were taken back
            }
        }
        rewind_locked();
    }
}

void subscription::rewind_locked() {
    cursor_->rewind();
    buffer_.clear();
    buffer_pos_ = 0;
    waiting_bytes_ = 0;
    ++read_epoch_;
}

bool subscription::read_locked(std::size_t want) {
    if (pool_ == nullptr) {
        auto r = read_cursor(want);
        if (!r) {
            NEREUS_LOG(broker_log(), warn, "dispatch read failed sub={} error={}", name_,
                       r.error().message());
            return false;
        }
        if (r->empty()) {
            return false;
        }
        add_read_locked(*r);
        return true;
    }
    if (reading_) {
        read_again_ = true;
        return false;
    }
    // With inline_reads (off by default: doc/perf.md, "Publish latency at 5,000 msg/s, round
    // 4"), first without waiting, here on the io thread: at the tail the entries were just
    // committed and are in the page cache, and the pool's hand-off (a pool thread's wake-up
    // and one back to this executor per read) costs more CPU than the read. The pool takes
    // the read when this would block (a cold cache, an unopened segment, a busy lock) and for
    // read_compacted subscriptions (their view may need a snapshot load).
    if (options_.inline_reads && !read_compacted()) {
        auto r = cursor_->try_read(want);
        if (r || r.error() != std::errc::operation_would_block) {
            if (!r) {
                retry_read_later_locked(r.error());
                return false;
            }
            if (r->empty()) {
                return false;  // caught up; the next append or permit change dispatches again
            }
            reads_inline_.fetch_add(1, std::memory_order_relaxed);
            add_read_locked(*r);
            return true;
        }
    }
    reads_pool_.fetch_add(1, std::memory_order_relaxed);
    reading_ = true;
    read_again_ = false;
    pool_->post([self = shared_from_this(), want, epoch = read_epoch_] {
        view_claim claim;
        auto r = self->read_cursor(want, &claim);
        boost::asio::post(self->ex_, [self, epoch, r = std::move(r), claim]() mutable {
            self->on_read_done(epoch, std::move(r), claim);
        });
    });
    return false;
}

void subscription::set_compacted(std::shared_ptr<topic_compaction> c) {
    std::lock_guard lock(compacted_mu_);
    compacted_ = std::move(c);
}

bool subscription::read_compacted() const {
    std::lock_guard lock(compacted_mu_);
    return compacted_ != nullptr;
}

std::shared_ptr<topic_compaction> subscription::compaction() const {
    std::lock_guard lock(compacted_mu_);
    return compacted_;
}

void subscription::read_view_from(std::uint64_t entry_id) {
    std::lock_guard lock(compacted_mu_);
    if (!compacted_read_) {
        view_from_ = view_from_ ? std::min(*view_from_, entry_id) : entry_id;
    }
}

void subscription::give_back_view_claim(const view_claim& claim) {
    if (!claim.from) {
        return;
    }
    std::lock_guard lock(compacted_mu_);
    if (claim.gen == view_gen_) {
        view_from_ = view_from_ ? std::min(*view_from_, *claim.from) : *claim.from;
    }
}

// read_compacted: while the read position is at or below the horizon, the compacted view's
// entries from there (not acked, original ids), and the read position moves past them (to the
// horizon's successor once the view is exhausted); then the log after the horizon. A rewind,
// seek or fence change brings the read position back to the mark-delete position, so the view
// is read again from there.
//
// First read from earliest (read_view_from, Pulsar's isFirstRead): the read starts at the view
// entry view_from_ even below the cursor's read position. The view outlives the log: after a
// retention trim a new cursor starts at the log's first readable entry, and the view entries
// below it would otherwise never be delivered. Those entries are below the cursor's start, so
// the cursor cannot have acked them (is_acked says yes for anything below its mark-delete
// position): they are delivered unfiltered. A read that stops below the read position (want
// reached) leaves view_from_ at the next view entry, so the next read continues there.
result<std::vector<dispatch_entry>> subscription::read_cursor(std::size_t want, view_claim* claim) {
    std::shared_ptr<topic_compaction> comp;
    {
        std::lock_guard lock(compacted_mu_);
        comp = compacted_;
    }
    if (!comp) {
        return cursor_->read(want);
    }
    auto v = comp->view();
    if (!v) {
        return nereus::error(v.error());
    }
    std::optional<std::uint64_t> early;
    std::uint64_t gen = 0;
    {
        std::lock_guard lock(compacted_mu_);
        early = std::exchange(view_from_, std::nullopt);
        compacted_read_ = true;
        gen = view_gen_;
    }
    if (claim != nullptr) {
        claim->from = early;
        claim->gen = gen;
    }
    if (const auto& view = *v; view) {
        const auto pos = cursor_->next_read_position();
        const auto from = early ? std::min(*early, pos) : pos;
        if (from < view->end) {
            std::vector<dispatch_entry> out;
            const auto fence = cursor_->current_fence();
            std::uint64_t next = view->end;
            for (auto i = view->lower_bound(from); i < view->entries.size(); ++i) {
                const auto& e = view->entries[i];
                if (out.size() >= want) {
                    next = e.entry_id;
                    break;
                }
                if (e.entry_id >= pos && cursor_->is_acked(e.entry_id)) {
                    continue;
                }
                dispatch_entry d;
                d.pos = {view->ledger_id, e.entry_id};
                d.publish_time = e.publish_time;
                d.batch_size = e.batch_size;
                d.share(e.data);
                d.fence = fence;
                out.push_back(std::move(d));
            }
            if (next < pos) {
                // Stopped below the read position: the next read continues in the view.
                std::lock_guard lock(compacted_mu_);
                if (view_gen_ == gen && !view_from_) {
                    view_from_ = next;
                }
            }
            cursor_->skip_read_to(next);
            if (!out.empty()) {
                return out;
            }
        }
    }
    return cursor_->read(want);
}

void subscription::add_read_locked(std::vector<dispatch_entry>& entries) {
    for (auto& e : entries) {
        // Only an entry at or below the highest pending one can be pending (a read past every
        // delivery, the common case, skips the tree lookup).
        if (!pending_.empty() && e.pos.entry_id <= pending_.back_key() &&
            pending_.contains(e.pos.entry_id)) {
            continue;  // still with a consumer (skipped on a re-read after a rewind)
        }
        if (type_ == sub_type::key_shared) {
            e.key_slot = key_slot(e.bytes);
            waiting_bytes_ += e.bytes.size();
        }
        buffer_.push_back(std::move(e));
    }
}

void subscription::retry_read_later_locked(const std::error_code& ec) {
    // A read error is never taken for the end of the topic: nothing was delivered or skipped
    // (the cursor's read position did not move), and the read is retried after a pause, so
    // the consumers get the entries once the fault clears without waiting for the next append
    // or permit.
    NEREUS_LOG(broker_log(), warn, "dispatch read failed sub={} error={}; retrying in 1 s", name_,
               ec.message());
    auto retry = std::make_shared<boost::asio::steady_timer>(ex_, std::chrono::seconds(1));
    retry->async_wait([self = shared_from_this(), retry](const boost::system::error_code& e) {
        if (e) {
            return;
        }
        std::lock_guard relock(self->mu_);
        self->dispatch_locked();
    });
}

void subscription::on_read_done(std::uint64_t epoch,
                                result<std::vector<dispatch_entry>> r,
                                const view_claim& claim) {
    std::lock_guard lock(mu_);
    reading_ = false;
    const bool again = read_again_;
    read_again_ = false;
    if (epoch != read_epoch_ || consumers_.empty() || !r) {
        // Nothing of this read is delivered: a first read from earliest is given back.
        give_back_view_claim(claim);
    }
    if (epoch != read_epoch_ || consumers_.empty()) {
        // A rewind or seek happened while the read was in flight: its entries may predate it.
        // Drop them and rewind again (the cursor may have moved past them after the rewind).
        // Likewise when every consumer left meanwhile: nothing is kept for the next one.
        cursor_->rewind();
        dispatch_locked();
        return;
    }
    if (!r) {
        retry_read_later_locked(r.error());
        return;
    }
    if (r->empty() && !again) {
        return;  // caught up; the next append or permit change dispatches again
    }
    add_read_locked(*r);
    dispatch_locked();
}

void subscription::release_pending_locked(const consumer* owner,
                                          std::span<const std::uint64_t> only) {
    bool released = false;
    for (auto it = pending_.begin(); it != pending_.end();) {
        const bool match =
            it->second.owner == owner &&
            (only.empty() || std::find(only.begin(), only.end(), it->first) != only.end());
        if (match) {
            if (type_ == sub_type::shared || type_ == sub_type::key_shared) {
                // Kept by the cursor: written with its next CAS, survives a restart.
                cursor_->record_redelivery(it->first);
            }
            ++redeliveries_;
            for (auto& p : consumers_) {
                if (p.get() == owner) {
                    p->unacked -= std::min<std::uint64_t>(p->unacked, it->second.messages);
                }
            }
            it = erase_pending_locked(it);
            released = true;
        } else {
            ++it;
        }
    }
    if (released) {
        rewind_locked();
    }
}

consumer* subscription::pick_consumer_locked() {
    const auto eligible = [&](const consumer& c) {
        return c.permits > 0 && c.unacked < options_.max_unacked_per_consumer;
    };
    if (type_ == sub_type::exclusive || type_ == sub_type::failover) {
        for (auto& p : consumers_) {
            if (p->active) {
                return eligible(*p) ? p.get() : nullptr;
            }
        }
        return nullptr;
    }
    const std::size_t n = consumers_.size();
    for (std::size_t i = 0; i < n; ++i) {
        auto& p = consumers_[(round_robin_ + i) % n];
        if (eligible(*p)) {
            round_robin_ = (round_robin_ + i + 1) % n;
            return p.get();
        }
    }
    return nullptr;
}

void subscription::add_pending_locked(std::uint64_t entry, const pending& p) {
    pending_.insert_or_assign(entry, p);  // in-order delivery: an append, no search
    if (p.slot >= 0) {
        auto& h = slots_[p.slot];
        h.holder = p.owner;
        ++h.entries;
    }
}

subscription::pending_map::iterator subscription::erase_pending_locked(pending_map::iterator it) {
    if (it->second.slot >= 0) {
        if (auto s = slots_.find(it->second.slot); s != slots_.end()) {
            if (--s->second.entries == 0) {
                slots_.erase(s);
            }
        }
    }
    return pending_.erase(it);
}

void subscription::deliver_locked(consumer& c, const dispatch_entry& e, std::int32_t slot) {
    const std::uint32_t messages = e.message_count();
    c.permits -= messages;
    c.unacked += messages;
    add_pending_locked(e.pos.entry_id, pending{&c, e.fence, e.batch_size, messages, slot});
    dispatched_ += messages;
    bytes_dispatched_ += e.bytes.size();
    // Counted on Shared/Key_Shared only (Exclusive/Failover report 0, as Pulsar).
    const std::uint32_t redeliveries = type_ == sub_type::shared || type_ == sub_type::key_shared
                                           ? cursor_->redelivery_count(e.pos.entry_id)
                                           : 0;
    outbox_.emplace_back(&c, consumer_sink::delivery{e, redeliveries});
}

void subscription::flush_outbox_locked() {
    // Almost always one consumer per round (Exclusive/Failover; Shared rounds alternate, so a
    // few): each pass takes the first consumer left and its entries, in order.
    while (!outbox_.empty()) {
        consumer* c = outbox_.front().first;
        std::vector<consumer_sink::delivery> batch;
        batch.reserve(outbox_.size());
        std::size_t keep = 0;
        for (std::size_t i = 0; i < outbox_.size(); ++i) {
            if (outbox_[i].first == c) {
                batch.push_back(std::move(outbox_[i].second));
            } else {
                if (keep != i) {
                    outbox_[keep] = std::move(outbox_[i]);
                }
                ++keep;
            }
        }
        outbox_.erase(outbox_.begin() + static_cast<std::ptrdiff_t>(keep), outbox_.end());
        if (auto s = c->sink.lock()) {
            s->deliver_batch(c->id, std::move(batch));
        }
    }
}

result<void> subscription::ks_attach_locked(consumer& c) {
    if (ks_mode_ == key_shared_mode::sticky) {
        // Pulsar's HashRangeExclusiveStickyKeyConsumerSelector: the client's ranges, none
        // overlapping a range already taken (its own included).
        if (c.ks_ranges.empty()) {
            return nereus::error(proto::error_kind::consumer_assign_failed);
        }
        auto next = sticky_ranges_;
        for (const auto& r : c.ks_ranges) {
            if (r.start < 0 || r.start > r.end) {
                return nereus::error(proto::error_kind::consumer_assign_failed);
            }
            // Taken ranges are disjoint and sorted: only the last one starting at or before
            // r.end can reach into r.
            const auto after = next.upper_bound(r.end);
            if (after != next.begin() && std::prev(after)->second.first >= r.start) {
                return nereus::error(proto::error_kind::consumer_assign_failed);
            }
            next.emplace(r.start, std::pair{r.end, &c});
        }
        sticky_ranges_ = std::move(next);
        return {};
    }
    // Pulsar's HashRangeAutoSplitStickyKeyConsumerSelector: the first consumer takes
    // everything; a new one splits the biggest range (the lowest of equal ones) and takes its
    // lower half.
    if (split_ranges_.empty()) {
        split_ranges_.emplace(key_slots, &c);
        return {};
    }
    std::int32_t biggest = key_slots;
    std::int32_t size = 0;
    std::int32_t lower = 0;
    for (const auto& [bound, owner] : split_ranges_) {
        (void)owner;
        if (bound - lower > size) {
            size = bound - lower;
            biggest = bound;
        }
        lower = bound;
    }
    if (size <= 1) {
        return nereus::error(proto::error_kind::consumer_assign_failed);
    }
    split_ranges_.emplace(biggest - (size >> 1), &c);
    return {};
}

void subscription::ks_detach_locked(const consumer& c) {
    std::erase_if(sticky_ranges_, [&](const auto& kv) { return kv.second.second == &c; });
    for (auto it = split_ranges_.begin(); it != split_ranges_.end(); ++it) {
        if (it->second != &c) {
            continue;
        }
        if (it->first == key_slots && split_ranges_.size() > 1) {
            // The top range goes to the consumer below it (Pulsar), whose range merges in.
            const auto below = std::prev(it);
            it->second = below->second;
            split_ranges_.erase(below);
        } else {
            split_ranges_.erase(it);  // the range above takes it over
        }
        break;
    }
}

consumer* subscription::ks_select_locked(std::int32_t slot) const {
    if (ks_mode_ == key_shared_mode::sticky) {
        auto it = sticky_ranges_.upper_bound(slot);
        if (it == sticky_ranges_.begin()) {
            return nullptr;
        }
        --it;
        return it->second.first >= slot ? it->second.second : nullptr;
    }
    const auto it = split_ranges_.lower_bound(slot);
    return it == split_ranges_.end() ? nullptr : it->second;
}

void subscription::dispatch_key_shared_locked() {
    const auto eligible = [&](const consumer& c) {
        return c.permits > 0 && c.unacked < options_.max_unacked_per_consumer;
    };
    if (buffer_.empty()) {
        waiting_bytes_ = 0;  // the buffer may have been cleared elsewhere
    }
    for (int rounds = 0; rounds < 64; ++rounds) {
        if (consumers_.empty()) {
            return;
        }
        // 1. Hand out what waits, in read order. An entry waits while its slot is held by
        //    another consumer (unacked entries of the key), no consumer covers its slot, or its
        //    owner has no permits; a waiting entry keeps the later ones of its slot waiting
        //    (per-key order), never the other keys.
        std::size_t able = 0;
        for (const auto& p : consumers_) {
            able += eligible(*p) ? 1 : 0;
        }
        std::bitset<key_slots> blocked;
        std::size_t keep = 0;
        for (std::size_t i = 0; i < buffer_.size(); ++i) {
            if (able == 0) {
                std::move(buffer_.begin() + static_cast<std::ptrdiff_t>(i), buffer_.end(),
                          buffer_.begin() + static_cast<std::ptrdiff_t>(keep));
                keep += buffer_.size() - i;
                break;
            }
            dispatch_entry& e = buffer_[i];
            const auto slot = static_cast<std::size_t>(e.key_slot);
            consumer* owner = blocked.test(slot) ? nullptr : ks_select_locked(e.key_slot);
            if (owner != nullptr) {
                const auto hold = slots_.find(e.key_slot);
                if ((hold != slots_.end() && hold->second.holder != owner) || !eligible(*owner)) {
                    owner = nullptr;
                }
            }
            if (owner == nullptr) {
                blocked.set(slot);
                if (keep != i) {
                    buffer_[keep] = std::move(e);
                }
                ++keep;
                continue;
            }
            waiting_bytes_ -= std::min(waiting_bytes_, e.bytes.size());
            deliver_locked(*owner, e, e.key_slot);
            if (!eligible(*owner)) {
                --able;
            }
        }
        buffer_.erase(buffer_.begin() + static_cast<std::ptrdiff_t>(keep), buffer_.end());
        buffer_pos_ = 0;

        // 2. Read on past the waiting entries, up to the look-ahead bound
        //    (key_shared_max_waiting entries / key_shared_max_waiting_bytes): beyond it reading
        //    stops until acks or releases free slots (doc/broker.md).
        std::int64_t total = 0;
        for (const auto& p : consumers_) {
            total += eligible(*p) ? p->permits : 0;
        }
        if (total <= 0 || buffer_.size() >= options_.key_shared_max_waiting ||
            waiting_bytes_ >= options_.key_shared_max_waiting_bytes) {
            return;
        }
        const std::size_t want =
            std::min({options_.dispatch_batch, options_.key_shared_max_waiting - buffer_.size(),
                      static_cast<std::size_t>(total)});
        if (!read_locked(want)) {
            return;
        }
    }
    // Still more to do: continue in a later round so one subscription cannot hog an io thread.
    notify_new_entries();
}

void subscription::dispatch_locked() {
    dispatch_round_locked();
    flush_outbox_locked();
}

void subscription::dispatch_round_locked() {
    if (type_ == sub_type::key_shared) {
        dispatch_key_shared_locked();
        return;
    }
    // Bounded: each round hands out at most what was read, and reads stop when the cursor has
    // nothing more or no consumer has permits.
    for (int rounds = 0; rounds < 64; ++rounds) {
        if (consumers_.empty()) {
            return;
        }
        if (buffer_pos_ >= buffer_.size()) {
            buffer_.clear();
            buffer_pos_ = 0;
            std::int64_t total = 0;
            for (auto& p : consumers_) {
                total += std::max<std::int64_t>(0, p->permits);
            }
            if (total <= 0 || pick_consumer_locked() == nullptr) {
                return;
            }
            // pick_consumer advanced the round-robin; undo to keep fairness simple.
            round_robin_ =
                consumers_.empty() ? 0 : (round_robin_ + consumers_.size() - 1) % consumers_.size();
            if (!read_locked(std::min<std::size_t>(options_.dispatch_batch,
                                                   static_cast<std::size_t>(total)))) {
                return;
            }
            continue;
        }
        while (buffer_pos_ < buffer_.size()) {
            consumer* c = pick_consumer_locked();
            if (c == nullptr) {
                return;
            }
            const dispatch_entry& e = buffer_[buffer_pos_++];
            deliver_locked(*c, e, -1);
        }
    }
    // Still more to do: continue in a later round so one subscription cannot hog an io thread.
    notify_new_entries();
}

void subscription::ack(const consumer& c,
                       bool cumulative,
                       std::vector<ack_id> ids,
                       std::function<void(result<void>)> done) {
    struct call {
        ack_fence fence;
        std::uint64_t entry = 0;
        std::uint32_t batch_size = 0;
        std::vector<std::int64_t> remaining;
        enum { whole, batch_index, cumulative, skip } kind = whole;
        bool was_pending = false;  // whole: delivered and unacked until this ack
    };
    ack_requests_.fetch_add(1, std::memory_order_relaxed);
    std::vector<call> calls;
    {
        std::lock_guard lock(mu_);
        if (cumulative && (type_ == sub_type::shared || type_ == sub_type::key_shared)) {
            // Pulsar ignores cumulative acks on Shared/Key_Shared (logged, answered success).
            ++acks_no_effect_;
            ids.clear();
        }
        if (cumulative && ids.size() > 1) {
            ids.resize(1);
        }
        const ack_fence current = cursor_->current_fence();
        calls.reserve(ids.size());
        // The pending entry after the last one this ack erased: grouped acks list ids in
        // delivery order, so the next id is usually there (no search).
        auto next = pending_.end();
        for (auto& id : ids) {
            call k;
            k.entry = id.entry_id;
            k.fence = current;
            auto it = next != pending_.end() && next->first == id.entry_id
                          ? next
                          : pending_.find(id.entry_id);
            if (it != pending_.end()) {
                k.fence = it->second.fence;
                k.batch_size = it->second.batch_size;
            }
            if (id.batch_size > 0) {
                k.batch_size = static_cast<std::uint32_t>(id.batch_size);
            }
            if (cumulative) {
                // A cumulative ack naming a partly acked batch acks the entries before it.
                if (!id.ack_set.empty()) {
                    if (id.entry_id == 0) {
                        k.kind = call::skip;
                    } else {
                        k.entry = id.entry_id - 1;
                        k.kind = call::cumulative;
                    }
                } else {
                    k.kind = call::cumulative;
                }
                if (k.kind == call::cumulative) {
                    for (auto p = pending_.begin(); p != pending_.end() && p->first <= k.entry;) {
                        for (auto& cons : consumers_) {
                            if (cons.get() == p->second.owner) {
                                cons->unacked -=
                                    std::min<std::uint64_t>(cons->unacked, p->second.messages);
                            }
                        }
                        p = erase_pending_locked(p);
                    }
                    next = pending_.end();  // it may have been erased
                }
            } else if (!id.ack_set.empty()) {
                if (k.batch_size == 0) {
                    k.kind = call::skip;  // batch size unknown: wait for the whole-entry ack
                } else {
                    k.kind = call::batch_index;
                    k.remaining = std::move(id.ack_set);
                }
            } else {
                k.kind = call::whole;
                if (it != pending_.end()) {
                    k.was_pending = true;
                    for (auto& cons : consumers_) {
                        if (cons.get() == it->second.owner) {
                            cons->unacked -=
                                std::min<std::uint64_t>(cons->unacked, it->second.messages);
                        }
                    }
                    next = erase_pending_locked(it);
                }
            }
            calls.push_back(std::move(k));
        }
        (void)c;
        // Freed unacked budget may unblock a consumer.
        dispatch_locked();
    }

    // Whole-entry acks go to the cursor in one submission (one CAS for the command, not one
    // request per id): runs of consecutive ids that were all pending with the same fence merge
    // into one range, whose outcome is counted for each of its ids (a pending entry is unacked
    // unless batch-index acks already covered all of its messages: that one then counts as
    // applied with its range, not as no_effect; the cursor state is the same either way); any
    // other whole-entry id is a range of its own.
    std::vector<ack_entry_range> ranges;
    std::vector<std::uint64_t> range_ids;  // ids per range (for the counters)
    bool last_mergeable = false;
    for (const auto& k : calls) {
        if (k.kind != call::whole) {
            continue;
        }
        if (last_mergeable && k.was_pending && ranges.back().fence == k.fence &&
            ranges.back().end == k.entry) {
            ++ranges.back().end;
            ++range_ids.back();
            continue;
        }
        ranges.push_back(ack_entry_range{k.fence, k.entry, k.entry + 1});
        range_ids.push_back(1);
        last_mergeable = k.was_pending;
    }

    struct join {
        std::mutex mu;
        std::size_t left = 0;
        std::error_code first_error;
        std::function<void(result<void>)> done;
        std::vector<std::uint64_t> range_ids;
    };
    auto j = std::make_shared<join>();
    std::size_t others = 0;
    for (const auto& k : calls) {
        others += k.kind == call::whole ? 0 : 1;
    }
    j->left = others + ranges.size() + 1;  // +1: released after issuing every call
    j->done = std::move(done);
    j->range_ids = std::move(range_ids);
    auto self = shared_from_this();
    // `ids`: how many acked ids the outcome stands for (a merged range counts each of its ids).
    auto finish = [j, self](result<ack_outcome> r, std::uint64_t ids) {
        std::function<void(result<void>)> cb;
        std::error_code err;
        {
            std::lock_guard lock(j->mu);
            if (!r && !j->first_error) {
                j->first_error = r.error();
            }
            if (--j->left == 0) {
                cb = std::move(j->done);
                err = j->first_error;
            }
        }
        if (r) {
            switch (*r) {
                case ack_outcome::applied:
                    self->acks_applied_ += ids;
                    break;
                case ack_outcome::no_effect:
                    self->acks_no_effect_ += ids;
                    break;
                case ack_outcome::stale:
                    self->acks_stale_ += ids;
                    break;
            }
        }
        if (cb) {
            cb(err ? result<void>(nereus::error(err)) : result<void>());
        }
    };
    auto one = [finish](result<ack_outcome> r) {
        finish(std::move(r), 1);
    };
    for (auto& k : calls) {
        switch (k.kind) {
            case call::whole:
                break;  // below, with the other whole-entry ids
            case call::batch_index:
                cursor_->ack_batch_index(k.fence, k.entry, k.batch_size, k.remaining, one);
                break;
            case call::cumulative:
                cursor_->ack_cumulative(k.fence, k.entry, one);
                break;
            case call::skip:
                one(ack_outcome::no_effect);
                break;
        }
    }
    if (!ranges.empty()) {
        cursor_->ack_ranges(ranges, [j, finish](std::size_t i, result<ack_outcome> r) {
            finish(std::move(r), j->range_ids[i]);
        });
    }
    // The extra reference: completes the join even when `calls` is empty. It counts neither as
    // applied nor as no-effect.
    {
        std::function<void(result<void>)> cb;
        std::error_code err;
        {
            std::lock_guard lock(j->mu);
            if (--j->left == 0) {
                cb = std::move(j->done);
                err = j->first_error;
            }
        }
        if (cb) {
            cb(err ? result<void>(nereus::error(err)) : result<void>());
        }
    }
}

void subscription::redeliver(const consumer& c, std::span<const std::uint64_t> entry_ids) {
    std::lock_guard lock(mu_);
    const bool by_id =
        !entry_ids.empty() && (type_ == sub_type::shared || type_ == sub_type::key_shared);
    release_pending_locked(&c, by_id ? entry_ids : std::span<const std::uint64_t>{});
    dispatch_locked();
}

result<void> subscription::seek(const seek_target& target) {
    begin_seek();
    return reset_cursor(target);
}

void subscription::begin_seek() {
    std::lock_guard lock(mu_);
    std::vector<std::shared_ptr<consumer>> closed;
    closed.swap(consumers_);
    pending_.clear();
    slots_.clear();
    split_ranges_.clear();
    sticky_ranges_.clear();
    buffer_.clear();
    buffer_pos_ = 0;
    waiting_bytes_ = 0;
    ++read_epoch_;
    for (auto& p : closed) {
        if (auto s = p->sink.lock()) {
            s->close_consumer_by_broker(p->id);
        }
    }
    cursor_->set_connected(false);
}

result<void> subscription::reset_cursor(const seek_target& target) {
    auto r = cursor_->seek(target);
    if (!r) {
        return nereus::error(r.error());
    }
    {
        // A seek to earliest reads a compacted view from its first entry again (as a new
        // reader at earliest would); any other seek starts where the cursor now stands.
        std::lock_guard lock(compacted_mu_);
        ++view_gen_;
        if (target.where == seek_target::kind::earliest && compacted_) {
            view_from_ = 0;
        } else {
            view_from_.reset();
        }
    }
    std::lock_guard lock(mu_);
    buffer_.clear();
    buffer_pos_ = 0;
    waiting_bytes_ = 0;
    ++read_epoch_;
    return {};
}

result<void> subscription::check_unsubscribe(const consumer& c) const {
    std::lock_guard lock(mu_);
    for (const auto& p : consumers_) {
        if (p.get() != &c) {
            return nereus::error(proto::error_kind::consumer_busy);
        }
    }
    return {};
}

subscription_stats subscription::stats() const {
    subscription_stats st;
    st.ack_requests = ack_requests_.load();
    st.acks_applied = acks_applied_.load();
    st.acks_no_effect = acks_no_effect_.load();
    st.acks_stale = acks_stale_.load();
    st.messages_dispatched = dispatched_.load();
    st.bytes_dispatched = bytes_dispatched_.load();
    st.redeliveries = redeliveries_.load();
    st.reads_inline = reads_inline_.load();
    st.reads_pool = reads_pool_.load();
    return st;
}

std::int64_t subscription::permits_of(const consumer& c) const {
    std::lock_guard lock(mu_);
    return c.permits;
}

sub_type subscription::type() const {
    std::lock_guard lock(mu_);
    return type_;
}

std::vector<subscription::consumer_view> subscription::consumer_views() const {
    std::lock_guard lock(mu_);
    std::vector<consumer_view> out;
    for (const auto& c : consumers_) {
        out.push_back({c->id, c->name, c->priority, c->permits, c->unacked});
    }
    return out;
}

// Keep in step with the first half of seek(): the same dispatcher state is dropped.
void subscription::disconnect_consumers() {
    std::lock_guard lock(mu_);
    std::vector<std::shared_ptr<consumer>> closed;
    closed.swap(consumers_);
    pending_.clear();
    slots_.clear();
    split_ranges_.clear();
    sticky_ranges_.clear();
    for (auto& p : closed) {
        if (auto s = p->sink.lock()) {
            s->close_consumer_by_broker(p->id);
        }
    }
    cursor_->set_connected(false);
    rewind_locked();
}

}  // namespace nereus::broker
