#include "nereus/ledger/managed_cursor.h"

#include "nereus/cursor/errc.h"
#include "nereus/cursor/sync.h"
#include "nereus/ledger/cursor_entry.h"
#include "nereus/ledger/errc.h"
#include "nereus/ledger/managed_ledger.h"
#include "nereus/ledger/records.h"
#include "nereus/meta/store.h"
#include "nereus/storage/stream_store.h"

#include <future>
#include <mutex>
#include <utility>

namespace nereus::ledger {
namespace {

result<cursor::op_result> wait(const std::function<void(managed_cursor::op_callback)>& submit) {
    auto p = std::make_shared<std::promise<result<cursor::op_result>>>();
    auto f = p->get_future();
    submit([p](result<cursor::op_result> r) { p->set_value(std::move(r)); });
    return f.get();
}

bool has_reserved(const cursor::property_map& props) {
    for (const auto& [k, v] : props) {
        if (k.rfind(cursor::reserved_property_prefix, 0) == 0) {
            return true;
        }
    }
    return false;
}

}  // namespace

managed_cursor::managed_cursor(std::shared_ptr<managed_ledger> ledger,
                               std::shared_ptr<cursor_entry> e)
    : ledger_(std::move(ledger)), e_(std::move(e)) {}

managed_cursor::~managed_cursor() = default;

const std::string& managed_cursor::name() const {
    return e_->name;
}
bool managed_cursor::durable() const {
    return e_->durable;
}
managed_cursor::creation managed_cursor::created() const {
    return e_->created;
}

cursor::fence managed_cursor::current_fence() const {
    if (e_->durable) {
        return e_->c->current_fence();
    }
    const std::lock_guard lock(e_->mu);
    return e_->nd_fence;
}

cursor::lifecycle managed_cursor::life() const {
    return e_->durable ? e_->c->life() : cursor::lifecycle::active;
}

offset managed_cursor::mark_delete() const {
    if (e_->durable) {
        return e_->c->mark_delete();
    }
    const std::lock_guard lock(e_->mu);
    return e_->nd_state.mark_delete();
}

bool managed_cursor::is_acked(offset entry) const {
    if (e_->durable) {
        return e_->c->is_acked(entry);
    }
    const std::lock_guard lock(e_->mu);
    return e_->nd_state.is_acked(entry);
}

std::optional<cursor::batch_bits> managed_cursor::remaining(offset entry) const {
    if (e_->durable) {
        return e_->c->remaining(entry);
    }
    const std::lock_guard lock(e_->mu);
    const auto* b = e_->nd_state.remaining(entry);
    return b != nullptr ? std::optional<cursor::batch_bits>(*b) : std::nullopt;
}

std::uint64_t managed_cursor::backlog() const {
    if (e_->durable) {
        return e_->c->backlog();
    }
    const offset end = ledger_->stream().end();
    const std::lock_guard lock(e_->mu);
    if (e_->nd_state.mark_delete() >= end) {
        return 0;
    }
    return e_->nd_state.backlog(end);
}

cursor::property_map managed_cursor::properties() const {
    if (e_->durable) {
        return e_->c->snapshot().properties;
    }
    const std::lock_guard lock(e_->mu);
    return e_->nd_state.properties();
}

cursor::cursor_snapshot managed_cursor::snapshot() const {
    if (e_->durable) {
        return e_->c->snapshot();
    }
    const std::lock_guard lock(e_->mu);
    cursor::cursor_snapshot s;
    s.generation = e_->nd_fence.generation;
    s.epoch = e_->nd_fence.epoch;
    s.life = cursor::lifecycle::active;
    s.mark_delete = e_->nd_state.mark_delete();
    s.ranges = e_->nd_state.ranges().to_vector();
    s.batches = e_->nd_state.batches();
    s.properties = e_->nd_state.properties();
    return s;
}

// ---------------------------------------------------------------- dispatch

result<read_result> managed_cursor::read(std::size_t max_entries, std::size_t max_bytes) {
    NEREUS_TRY(ledger_->admit(operation::read));
    ledger_->touch(e_->name);
    ledger_stream& s = ledger_->stream();
    const std::lock_guard lock(e_->read_mu);
    const cursor::fence f = current_fence();
    const offset mdo = mark_delete();
    if (f != e_->read_fence) {
        e_->read_pos = mdo;  // a new generation or epoch restarts delivery at MDO
        e_->read_fence = f;
    }
    e_->read_pos = std::max(e_->read_pos, mdo);
    read_result out;
    const offset start = s.start();
    if (e_->read_pos < start) {
        // Only a non-durable cursor can be passed by a trim; report the skip.
        out.skipped = cursor::offset_range{e_->read_pos, start};
        e_->read_pos = start;
        if (!e_->durable) {
            const std::lock_guard nl(e_->mu);
            if (e_->nd_state.mark_delete() < start) {
                e_->nd_state.advance_to(start);
            }
        }
    }
    const offset end = s.end();
    std::size_t bytes = 0;
    auto next_unacked = [&](offset x) {
        if (e_->durable) {
            return e_->c->next_unacked(x);
        }
        const std::lock_guard nl(e_->mu);
        return e_->nd_state.next_unacked(x);
    };
    while (out.entries.size() < max_entries && bytes < max_bytes) {
        const offset from = next_unacked(e_->read_pos);
        if (from >= end) {
            e_->read_pos = std::max(e_->read_pos, std::min(from, end));
            break;
        }
        auto batch = ledger_->env().streams->read(
            s.id(), storage::offset(from),
            std::min<std::uint64_t>(max_entries - out.entries.size(), end - from),
            max_bytes - bytes);
        if (!batch) {
            return nereus::error(batch.error());
        }
        if (batch->empty()) {
            break;
        }
        for (const auto& ev : *batch) {
            const offset at = ev.at.value();
            if (at >= end || is_acked(at)) {
                continue;
            }
            auto h = format::decode_entry_header(ev.payload);
            if (!h) {
                return nereus::error(h.error());
            }
            delivered_entry d;
            d.id = message_id{ledger_->ledger_id(), at, -1};
            d.at = at;
            d.publish_time = h->publish_time;
            d.batch_size = h->batch_size;
            d.remaining = remaining(at);
            d.payload = ev.payload.subspan(format::kEntryHeaderSize);
            d.fence = f;
            bytes += ev.payload.size();
            out.entries.push_back(std::move(d));
        }
        e_->read_pos = batch->next(storage::offset(from)).value();
        out.buffers.push_back(std::move(*batch));
    }
    return out;
}

// read()'s walk with every wait replaced by a try: the read position and the cursor state are
// taken with try-locks, storage reads with read_nowait, and the position is written back only
// at the end (a would-block answer before any entry leaves it untouched; one after some
// entries returns those, as a read with a smaller max_entries would have).
result<read_result> managed_cursor::try_read(std::size_t max_entries, std::size_t max_bytes) {
    const auto would_block = [] {
        return nereus::error(storage::errc::would_block);
    };
    NEREUS_TRY(ledger_->admit(operation::read));
    ledger_stream& s = ledger_->stream();
    const std::unique_lock lock(e_->read_mu, std::try_to_lock);
    if (!lock.owns_lock()) {
        return would_block();
    }
    // Runs f(state, fence) under the state's mutex if it is free now.
    const auto inspect = [this](auto&& f) -> bool {
        if (e_->durable) {
            return e_->c->try_inspect(f);
        }
        const std::unique_lock nl(e_->mu, std::try_to_lock);
        if (!nl.owns_lock()) {
            return false;
        }
        f(std::as_const(e_->nd_state), e_->nd_fence);
        return true;
    };
    cursor::fence f{};
    offset pos = 0;
    const bool looked = inspect([&](const cursor::cursor_state& st, cursor::fence cf) {
        f = cf;
        // As read(): a new generation or epoch restarts delivery at MDO; never below MDO.
        pos = cf != e_->read_fence ? st.mark_delete() : std::max(e_->read_pos, st.mark_delete());
    });
    if (!looked || pos < s.start()) {
        return would_block();  // a trimmed read position: read() reports the skip
    }
    const offset end = s.end();
    read_result out;
    std::size_t bytes = 0;
    bool blocked = false;  // stopped by something that would have waited
    while (out.entries.size() < max_entries && bytes < max_bytes) {
        offset from = 0;
        if (!inspect([&](const cursor::cursor_state& st, cursor::fence) {
                from = st.next_unacked(pos);
            })) {
            blocked = true;  // busy: what was read so far, or would_block below
            break;
        }
        if (from >= end) {
            pos = std::max(pos, std::min(from, end));
            break;
        }
        auto batch = ledger_->env().streams->read_nowait(
            s.id(), storage::offset(from),
            std::min<std::uint64_t>(max_entries - out.entries.size(), end - from),
            max_bytes - bytes);
        if (!batch) {
            if (batch.error() == storage::errc::would_block) {
                blocked = true;
                break;
            }
            return nereus::error(batch.error());
        }
        if (batch->empty()) {
            break;
        }
        std::error_code bad;
        const bool got = inspect([&](const cursor::cursor_state& st, cursor::fence) {
            for (const auto& ev : *batch) {
                const offset at = ev.at.value();
                if (at >= end || st.is_acked(at)) {
                    continue;
                }
                auto h = format::decode_entry_header(ev.payload);
                if (!h) {
                    bad = h.error();
                    return;
                }
                delivered_entry d;
                d.id = message_id{ledger_->ledger_id(), at, -1};
                d.at = at;
                d.publish_time = h->publish_time;
                d.batch_size = h->batch_size;
                if (const auto* b = st.remaining(at)) {
                    d.remaining = *b;
                }
                d.payload = ev.payload.subspan(format::kEntryHeaderSize);
                d.fence = f;
                bytes += ev.payload.size();
                out.entries.push_back(std::move(d));
            }
        });
        if (bad) {
            return nereus::error(bad);
        }
        if (!got) {
            blocked = true;  // the batch is dropped; pos stays before it
            break;
        }
        pos = batch->next(storage::offset(from)).value();
        out.buffers.push_back(std::move(*batch));
    }
    if (blocked && out.entries.empty()) {
        return would_block();  // nothing moves: read() starts from the same place
    }
    e_->read_fence = f;
    e_->read_pos = pos;
    ledger_->try_touch(e_->name);
    return out;
}

void managed_cursor::rewind() {
    const std::lock_guard lock(e_->read_mu);
    e_->read_pos = mark_delete();
}

offset managed_cursor::read_position() const {
    const std::lock_guard lock(e_->read_mu);
    return e_->read_pos;
}

offset managed_cursor::next_read_position() {
    const std::lock_guard lock(e_->read_mu);
    const cursor::fence f = current_fence();
    const offset mdo = mark_delete();
    if (f != e_->read_fence) {
        e_->read_pos = mdo;
        e_->read_fence = f;
    }
    e_->read_pos = std::max(e_->read_pos, mdo);
    return e_->read_pos;
}

void managed_cursor::skip_read_to(offset to) {
    const std::lock_guard lock(e_->read_mu);
    e_->read_pos = std::max(e_->read_pos, to);
}

void managed_cursor::set_connected(bool connected) {
    e_->connected = connected;
    ledger_->touch(e_->name);
}

// ---------------------------------------------------------------- redelivery counts

namespace {

// Requires: e.mu held. Drops recorded counts of another fence (a reset cleared the engine's
// counts) and below MDO (acked).
void prune_recorded(cursor_entry& e, cursor::fence f, offset mdo) {
    if (e.recorded_fence != f) {
        e.recorded_redeliveries.clear();
        e.recorded_fence = f;
    }
    e.recorded_redeliveries.erase(e.recorded_redeliveries.begin(),
                                  e.recorded_redeliveries.lower_bound(mdo));
}

}  // namespace

void managed_cursor::record_redelivery(offset entry) {
    if (!e_->durable) {
        const std::lock_guard lock(e_->mu);
        const auto& counts = e_->nd_state.redeliveries();
        const auto it = counts.find(entry);
        e_->nd_state.set_redelivery(entry, (it == counts.end() ? 0 : it->second) + 1);
        return;
    }
    const cursor::fence f = e_->c->current_fence();
    const offset mdo = e_->c->mark_delete();
    if (e_->c->is_acked(entry)) {
        return;
    }
    const std::uint32_t engine = e_->c->redelivery_count(entry);
    // In memory until the engine's next CAS (an ack, a flush, close): never a write of its own.
    e_->c->record_redelivery(entry);
    const std::lock_guard lock(e_->mu);
    prune_recorded(*e_, f, mdo);
    auto& n = e_->recorded_redeliveries[entry];
    n = std::max(n, engine) + 1;
}

std::uint32_t managed_cursor::redelivery_count(offset entry) const {
    if (!e_->durable) {
        const std::lock_guard lock(e_->mu);
        const auto& counts = e_->nd_state.redeliveries();
        const auto it = counts.find(entry);
        return it == counts.end() ? 0 : it->second;
    }
    {
        const std::lock_guard lock(e_->mu);
        if (e_->recorded_redeliveries.empty()) {
            return e_->c->redelivery_count(entry);  // the common case: one engine call
        }
    }
    const cursor::fence f = e_->c->current_fence();
    const offset mdo = e_->c->mark_delete();
    // The engine's count is persisted + recorded-not-yet-staged; while a CAS carrying recorded
    // counts is in flight they are in neither, so the count recorded here covers that window.
    const std::uint32_t engine = e_->c->redelivery_count(entry);
    const bool acked = e_->c->is_acked(entry);
    const std::lock_guard lock(e_->mu);
    prune_recorded(*e_, f, mdo);
    const auto it = e_->recorded_redeliveries.find(entry);
    if (acked) {
        if (it != e_->recorded_redeliveries.end()) {
            e_->recorded_redeliveries.erase(it);
        }
        return 0;
    }
    return std::max(engine, it == e_->recorded_redeliveries.end() ? 0U : it->second);
}

// ---------------------------------------------------------------- acks

managed_cursor::op_callback managed_cursor::wrap(op_callback done) const {
    return [l = ledger_, done = std::move(done)](result<cursor::op_result> r) {
        if (!r) {
            l->note_error(r.error());
        }
        done(std::move(r));
    };
}

result<cursor::op_result> managed_cursor::nd_apply(cursor::fence f,
                                                   const cursor::state_op& sop,
                                                   bool epoch_fenced) {
    const offset end = ledger_->stream().end();
    const std::lock_guard lock(e_->mu);
    auto res = [&](cursor::ack_status st) {
        cursor::op_result r;
        r.status = st;
        r.current = e_->nd_fence;
        r.mark_delete = e_->nd_state.mark_delete();
        return r;
    };
    if (f.generation < e_->nd_fence.generation) {
        return res(cursor::ack_status::stale_generation);
    }
    if (f.generation > e_->nd_fence.generation) {
        return nereus::error(cursor::errc::invalid_argument);
    }
    if (epoch_fenced) {
        if (f.epoch < e_->nd_fence.epoch) {
            return res(cursor::ack_status::stale_epoch);
        }
        if (f.epoch > e_->nd_fence.epoch) {
            return nereus::error(cursor::errc::invalid_argument);
        }
    }
    const offset* entry = nullptr;
    if (const auto* a = std::get_if<cursor::ack_range_op>(&sop)) {
        entry = &a->begin;
    } else if (const auto* b = std::get_if<cursor::ack_batch_op>(&sop)) {
        entry = &b->entry;
    } else if (const auto* c = std::get_if<cursor::ack_cumulative_op>(&sop)) {
        entry = &c->entry;
        if (has_reserved(c->props)) {
            return nereus::error(cursor::errc::reserved_property);
        }
    }
    if (entry != nullptr && *entry >= end) {
        return nereus::error(cursor::errc::offset_beyond_end);
    }
    if (const auto* p = std::get_if<cursor::put_property_op>(&sop)) {
        if (p->key.rfind(cursor::reserved_property_prefix, 0) == 0) {
            return nereus::error(cursor::errc::reserved_property);
        }
    }
    if (const auto* p = std::get_if<cursor::replace_properties_op>(&sop)) {
        if (has_reserved(p->props)) {
            return nereus::error(cursor::errc::reserved_property);
        }
    }
    if (auto v = e_->nd_state.validate(sop); !v) {
        return nereus::error(v.error());
    }
    if (!e_->nd_state.changes(sop)) {
        return res(cursor::ack_status::already_acked);
    }
    e_->nd_state.apply(sop);
    return res(cursor::ack_status::ok);
}

void managed_cursor::ack(cursor::fence f, offset entry, op_callback done) {
    if (auto a = ledger_->admit(operation::ack); !a) {
        done(nereus::error(a.error()));
        return;
    }
    ledger_->touch(e_->name);
    if (e_->durable) {
        e_->c->ack(f, entry, wrap(std::move(done)));
        return;
    }
    done(nd_apply(f, cursor::ack_range_op{entry, entry + 1}, true));
}

void managed_cursor::ack_ranges(std::span<const cursor::cursor::fenced_range> ranges,
                                cursor::cursor::range_callback done) {
    if (ranges.empty()) {
        return;
    }
    if (auto a = ledger_->admit(operation::ack); !a) {
        for (std::size_t i = 0; i < ranges.size(); ++i) {
            done(i, nereus::error(a.error()));
        }
        return;
    }
    ledger_->touch(e_->name);
    if (e_->durable) {
        e_->c->ack_ranges(ranges, [l = ledger_, done = std::move(done)](
                                      std::size_t i, result<cursor::op_result> r) {
            if (!r) {
                l->note_error(r.error());
            }
            done(i, std::move(r));
        });
        return;
    }
    for (std::size_t i = 0; i < ranges.size(); ++i) {
        const auto& g = ranges[i];
        if (g.first >= g.end) {
            done(i, nereus::error(cursor::errc::invalid_argument));
            continue;
        }
        done(i, nd_apply(g.f, cursor::ack_range_op{g.first, g.end}, true));
    }
}

void managed_cursor::ack_batch_index(cursor::fence f,
                                     offset entry,
                                     cursor::batch_bits acked,
                                     op_callback done) {
    if (auto a = ledger_->admit(operation::ack_batch_index); !a) {
        done(nereus::error(a.error()));
        return;
    }
    ledger_->touch(e_->name);
    if (e_->durable) {
        e_->c->ack_batch_index(f, entry, std::move(acked), wrap(std::move(done)));
        return;
    }
    done(nd_apply(f, cursor::ack_batch_op{entry, std::move(acked)}, true));
}

void managed_cursor::ack_cumulative(cursor::fence f,
                                    offset entry,
                                    std::optional<std::uint32_t> batch_index,
                                    std::uint32_t batch_size,
                                    cursor::property_map props,
                                    op_callback done) {
    if (auto a = ledger_->admit(operation::ack_cumulative); !a) {
        done(nereus::error(a.error()));
        return;
    }
    if (batch_index) {
        if (auto a = ledger_->admit(operation::ack_batch_index); !a) {
            done(nereus::error(a.error()));
            return;
        }
    }
    if (!props.empty()) {
        if (auto a = ledger_->admit(operation::property_write); !a) {
            done(nereus::error(a.error()));
            return;
        }
    }
    ledger_->touch(e_->name);
    if (e_->durable) {
        e_->c->ack_cumulative(f, entry, batch_index, batch_size, std::move(props),
                              wrap(std::move(done)));
        return;
    }
    cursor::ack_cumulative_op op;
    op.entry = entry;
    if (batch_index) {
        op.prefix_end = *batch_index + 1;
        op.batch_size = batch_size;
    }
    op.props = std::move(props);
    done(nd_apply(f, op, true));
}

result<cursor::op_result> managed_cursor::ack_sync(cursor::fence f, offset entry) {
    return wait([&](op_callback cb) { ack(f, entry, std::move(cb)); });
}

result<cursor::op_result> managed_cursor::ack_batch_index_sync(cursor::fence f,
                                                               offset entry,
                                                               cursor::batch_bits acked) {
    return wait(
        [&](op_callback cb) { ack_batch_index(f, entry, std::move(acked), std::move(cb)); });
}

result<cursor::op_result> managed_cursor::ack_cumulative_sync(cursor::fence f,
                                                              offset entry,
                                                              std::optional<std::uint32_t> bi,
                                                              std::uint32_t batch_size,
                                                              cursor::property_map props) {
    return wait([&](op_callback cb) {
        ack_cumulative(f, entry, bi, batch_size, std::move(props), std::move(cb));
    });
}

result<cursor::op_result> managed_cursor::ack_in_transaction(std::uint64_t, cursor::fence, offset) {
    return nereus::error(errc::unsupported);
}

// ---------------------------------------------------------------- fence operations

result<cursor::op_result> managed_cursor::fence_op(
    operation op,
    std::function<void(cursor::cursor&, cursor::fence, cursor::cursor::op_callback)> durable,
    const nd_op& non_durable) {
    NEREUS_TRY(ledger_->admit(op));
    ledger_->touch(e_->name);
    if (!e_->durable) {
        return non_durable(current_fence());
    }
    auto r = wait([&](op_callback cb) { durable(*e_->c, e_->c->current_fence(), std::move(cb)); });
    if (!r) {
        ledger_->note_error(r.error());
    }
    return r;
}

result<cursor::op_result> managed_cursor::reset(cursor::reset_target target) {
    NEREUS_TRY(ledger_->admit(operation::reset));
    ledger_stream& s = ledger_->stream();
    if (!e_->durable) {
        const offset end = s.end();
        const offset start = s.start();
        cursor::op_result res;
        offset mdo = 0;
        switch (target.where) {
            case cursor::reset_target::kind::to_offset:
                if (target.at > end) {
                    return nereus::error(cursor::errc::offset_beyond_end);
                }
                mdo = std::max(target.at, start);
                res.clamped = target.at < start;
                break;
            case cursor::reset_target::kind::to_time: {
                auto lk = s.lookup(target.publish_time);
                if (!lk) {
                    return nereus::error(lk.error());
                }
                mdo = lk->at;
                res.clamped = lk->clamped;
                break;
            }
            case cursor::reset_target::kind::earliest:
                mdo = start;
                break;
            case cursor::reset_target::kind::latest:
                mdo = end;
                break;
        }
        const std::lock_guard lock(e_->mu);
        auto props = e_->nd_state.properties();
        e_->nd_state = cursor::cursor_state(mdo);
        for (auto& [k, v] : props) {
            e_->nd_state.put_property(k, v);
        }
        e_->nd_fence.epoch += 1;
        res.current = e_->nd_fence;
        res.mark_delete = mdo;
        res.position = mdo;
        return res;
    }
    // Protect the target from before the reset's CAS: a trim either sees the reservation (and
    // stops below it) or has already raised start() (and the reset clamps, reported).
    offset reservation = 0;
    {
        const std::lock_guard rlock(ledger_->rmu_);
        const std::lock_guard lock(ledger_->mu_);
        switch (target.where) {
            case cursor::reset_target::kind::to_offset:
                reservation = std::max(target.at, s.start());
                break;
            case cursor::reset_target::kind::latest:
                reservation = s.end();
                break;
            default:
                reservation = s.start();
                break;
        }
        ledger_->reservations_.insert(reservation);
    }
    auto drop = [&] {
        const std::lock_guard lock(ledger_->mu_);
        if (auto it = ledger_->reservations_.find(reservation);
            it != ledger_->reservations_.end()) {
            ledger_->reservations_.erase(it);
        }
    };
    ledger_->touch(e_->name);
    auto r = wait(
        [&](op_callback cb) { e_->c->reset(e_->c->current_fence(), target, wrap(std::move(cb))); });
    if (!r || r->status != cursor::ack_status::ok) {
        drop();
        return r;
    }
    if (e_->c->life() == cursor::lifecycle::protection_pending) {
        if (ledger_->crash_at("protect.reset_pending")) {
            return nereus::error(errc::injected_crash);
        }
        auto fin = ledger_->finalize_protection(e_);
        drop();
        if (!fin) {
            return nereus::error(fin.error());
        }
        r->current = e_->c->current_fence();
    } else {
        drop();
    }
    return r;
}

result<cursor::op_result> managed_cursor::clear_backlog() {
    return fence_op(
        operation::clear_backlog,
        [](cursor::cursor& c, cursor::fence f, cursor::cursor::op_callback cb) {
            c.clear_backlog(f, std::move(cb));
        },
        [this](cursor::fence) -> result<cursor::op_result> {
            const offset end = ledger_->stream().end();
            const std::lock_guard lock(e_->mu);
            const offset mdo = std::max(end, e_->nd_state.mark_delete());
            auto props = e_->nd_state.properties();
            e_->nd_state = cursor::cursor_state(mdo);
            for (auto& [k, v] : props) {
                e_->nd_state.put_property(k, v);
            }
            e_->nd_fence.epoch += 1;
            cursor::op_result res;
            res.current = e_->nd_fence;
            res.mark_delete = res.position = mdo;
            return res;
        });
}

result<cursor::op_result> managed_cursor::skip(std::uint64_t n) {
    return fence_op(
        operation::skip,
        [n](cursor::cursor& c, cursor::fence f, cursor::cursor::op_callback cb) {
            c.skip(f, n, std::move(cb));
        },
        [this, n](cursor::fence) -> result<cursor::op_result> {
            const offset end = ledger_->stream().end();
            const std::lock_guard lock(e_->mu);
            e_->nd_state.advance_to(e_->nd_state.skip_target(n, end));
            e_->nd_fence.epoch += 1;
            cursor::op_result res;
            res.current = e_->nd_fence;
            res.mark_delete = res.position = e_->nd_state.mark_delete();
            return res;
        });
}

result<cursor::op_result> managed_cursor::set_properties(cursor::property_map props) {
    return fence_op(
        operation::property_write,
        [props](cursor::cursor& c, cursor::fence f, cursor::cursor::op_callback cb) {
            c.set_properties(f, props, std::move(cb));
        },
        [this, props](cursor::fence f) {
            return nd_apply(f, cursor::replace_properties_op{props}, false);
        });
}

result<cursor::op_result> managed_cursor::put_property(std::string key, std::string value) {
    return fence_op(
        operation::property_write,
        [key, value](cursor::cursor& c, cursor::fence f, cursor::cursor::op_callback cb) {
            c.put_property(f, key, value, std::move(cb));
        },
        [this, key, value](cursor::fence f) {
            return nd_apply(f, cursor::put_property_op{key, value}, false);
        });
}

result<cursor::op_result> managed_cursor::remove_property(std::string key) {
    return fence_op(
        operation::property_write,
        [key](cursor::cursor& c, cursor::fence f, cursor::cursor::op_callback cb) {
            c.remove_property(f, key, std::move(cb));
        },
        [this, key](cursor::fence f) {
            return nd_apply(f, cursor::remove_property_op{key}, false);
        });
}

}  // namespace nereus::ledger
