#include "nereus/ledger/managed_ledger.h"

#include "nereus/cursor/cursor_keys.h"
#include "nereus/cursor/errc.h"
#include "nereus/cursor/sync.h"
#include "nereus/ledger/cursor_entry.h"
#include "nereus/ledger/errc.h"
#include "nereus/ledger/logger.h"
#include "nereus/ledger/managed_cursor.h"
#include "nereus/meta/errc.h"
#include "nereus/meta/store.h"
#include "nereus/meta/sync.h"
#include "nereus/storage/errc.h"
#include "nereus/storage/stream_store.h"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <future>

namespace nereus::ledger {
namespace {

constexpr int kMaxRetries = 16;
// Lost id-counter races allowed to one topic creation on top of kMaxRetries (load_registry).
constexpr int kMaxCounterRaces = 4096;

std::optional<std::uint64_t> parse_u64(std::string_view s) {
    std::uint64_t v = 0;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || p != s.data() + s.size()) {
        return std::nullopt;
    }
    return v;
}

}  // namespace

const char* to_string(ledger_state s) {
    switch (s) {
        case ledger_state::opening:
            return "OPENING";
        case ledger_state::writable:
            return "WRITABLE";
        case ledger_state::fenced:
            return "FENCED";
        case ledger_state::crashed:
            return "CRASHED";
        case ledger_state::closed:
            return "CLOSED";
    }
    return "?";
}

const char* to_string(operation op) {
    switch (op) {
        case operation::append:
            return "append";
        case operation::read:
            return "read";
        case operation::open_durable_cursor:
            return "open_durable_cursor";
        case operation::open_non_durable_cursor:
            return "open_non_durable_cursor";
        case operation::ack:
            return "ack";
        case operation::ack_cumulative:
            return "ack_cumulative";
        case operation::ack_batch_index:
            return "ack_batch_index";
        case operation::reset:
            return "reset";
        case operation::clear_backlog:
            return "clear_backlog";
        case operation::skip:
            return "skip";
        case operation::property_write:
            return "property_write";
        case operation::delete_cursor:
            return "delete_cursor";
        case operation::trim:
            return "trim";
        case operation::set_retention:
            return "set_retention";
        case operation::expire_idle:
            return "expire_idle";
        case operation::close:
            return "close";
    }
    return "?";
}

managed_ledger::managed_ledger(token, ledger_env env, std::string topic, ledger_options options)
    : env_(env),
      topic_(std::move(topic)),
      options_(std::move(options)),
      keys_(format::ledger_keys::make(topic_)) {}

managed_ledger::~managed_ledger() = default;

result<std::shared_ptr<managed_ledger>> managed_ledger::open_writable(ledger_env env,
                                                                      std::string topic,
                                                                      ledger_options options) {
    if (env.meta == nullptr || env.objects == nullptr || env.streams == nullptr ||
        env.owner == meta::no_session || topic.empty()) {
        return nereus::error(errc::invalid_argument);
    }
    auto l = std::make_shared<managed_ledger>(token{}, env, std::move(topic), std::move(options));
    l->opened_at_ = l->now();
    if (auto r = l->open_steps(); !r) {
        if (l->state_.load() == ledger_state::opening) {
            l->state_ = ledger_state::closed;
        }
        return nereus::error(r.error());
    }
    l->state_ = ledger_state::writable;
    NEREUS_LOG(ledger_log(), info, "ledger open topic={} ledger={} start={} end={} cursors={}",
               l->topic_, l->registry_.ledger_id, l->stream_->start(), l->stream_->end(),
               l->cursors_.size());
    return l;
}

std::int64_t managed_ledger::now() const {
    if (options_.clock) {
        return options_.clock();
    }
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
}

bool managed_ledger::crash_at(std::string_view step) {
    if (options_.fault_hook && options_.fault_hook(step)) {
        state_ = ledger_state::crashed;
        NEREUS_LOG(ledger_log(), info, "injected crash topic={} step={}", topic_, step);
        return true;
    }
    return false;
}

void managed_ledger::note_error(const std::error_code& ec) {
    if (ec == cursor::errc::owner_fenced || ec == errc::owner_fenced) {
        auto expected = ledger_state::writable;
        state_.compare_exchange_strong(expected, ledger_state::fenced);
    }
}

result<void> managed_ledger::admit(operation op) const {
    const capabilities& c = options_.caps;
    bool enabled = true;
    switch (op) {
        case operation::reset:
            enabled = c.reset;
            break;
        case operation::clear_backlog:
            enabled = c.clear_backlog;
            break;
        case operation::skip:
            enabled = c.skip;
            break;
        case operation::delete_cursor:
            enabled = c.delete_cursor;
            break;
        case operation::property_write:
            enabled = c.property_writes;
            break;
        case operation::open_non_durable_cursor:
            enabled = c.non_durable_cursors;
            break;
        case operation::ack_batch_index:
            enabled = c.batch_index_ack;
            break;
        case operation::set_retention:
            enabled = c.retention_changes;
            break;
        default:
            break;
    }
    if (!enabled) {
        return nereus::error(errc::not_admitted);
    }
    switch (state_.load()) {
        case ledger_state::writable:
            return {};
        case ledger_state::opening:
            return nereus::error(errc::not_admitted);
        case ledger_state::fenced:
            if (op == operation::close) {
                return {};
            }
            return nereus::error(errc::owner_fenced);
        case ledger_state::crashed:
            return nereus::error(errc::injected_crash);
        case ledger_state::closed:
            return nereus::error(errc::closed);
    }
    return nereus::error(errc::not_admitted);
}

cursor::cursor_env managed_ledger::cursor_env() const {
    return cursor::cursor_env{
        .meta = env_.meta, .objects = env_.objects, .stream = stream_.get(), .owner = env_.owner};
}

cursor::cursor_id managed_ledger::cursor_id(const std::string& name) const {
    return cursor::cursor_id{std::to_string(registry_.ledger_id), name};
}

// ---------------------------------------------------------------- open

result<void> managed_ledger::open_steps() {
    NEREUS_TRY(load_registry());
    NEREUS_TRY(claim());
    if (crash_at("open.claimed")) {
        return nereus::error(errc::injected_crash);
    }
    auto info = env_.streams->info(storage::stream_id(registry_.stream_id));
    if (!info) {
        return nereus::error(info.error() == storage::errc::unknown_stream
                                 ? make_error_code(errc::stream_missing)
                                 : info.error());
    }
    // Trims delete whole segments below the target, so the stream never starts above the
    // logical start (or a pending trim's target). A stream that does lost entries the ledger
    // never trimmed (a segment file deleted or lost): fail closed, never read it as a trim.
    if (const offset allowed = root_.trim ? std::max(root_.start, root_.trim->target) : root_.start;
        info->first.value() > allowed) {
        NEREUS_LOG(ledger_log(), err,
                   "stream starts above the ledger's start: entries lost topic={} stream={} "
                   "stream_first={} ledger_start={}",
                   topic_, registry_.stream_id, info->first.value(), allowed);
        return nereus::error(errc::stream_missing);
    }
    stream_ =
        std::make_shared<ledger_stream>(env_.streams, storage::stream_id(registry_.stream_id),
                                        options_.time_index_block, root_.start, info->end.value());
    if (root_.has_trimmed_time) {
        stream_->set_trimmed_max_time(root_.trimmed_max_time);
    }
    NEREUS_TRY(stabilize());
    if (crash_at("open.stabilized")) {
        return nereus::error(errc::injected_crash);
    }
    NEREUS_TRY(recover_pending());
    if (crash_at("open.recovered")) {
        return nereus::error(errc::injected_crash);
    }
    return revalidate();
}

result<void> managed_ledger::load_registry() {
    meta::store& m = *env_.meta;
    // A lost race for the id counter means another topic's creation won it (progress), so it
    // does not use up an attempt: many topics created at once (each open on its own thread)
    // each retry about once per creation ahead of them. Bounded all the same.
    int counter_races = 0;
    for (int attempt = 0; attempt < kMaxRetries; ++attempt) {
        auto g = meta::get_sync(m, keys_.registry);
        if (!g) {
            return nereus::error(g.error());
        }
        if (!*g) {
            if (!options_.create_if_missing) {
                return nereus::error(errc::topic_not_found);
            }
            auto counter = meta::get_sync(m, std::string(format::kIdCounterKey));
            if (!counter) {
                return nereus::error(counter.error());
            }
            std::uint64_t last = 0;
            if (*counter) {
                auto v = parse_u64((*counter)->value);
                if (!v) {
                    return nereus::error(errc::corrupt_record);
                }
                last = *v;
            }
            const std::uint64_t id = last + 1;
            format::retention_root root;
            root.policy = options_.retention;
            std::vector<meta::op> ops;
            ops.emplace_back(meta::put{std::string(format::kIdCounterKey), std::to_string(id),
                                       *counter ? (*counter)->ver : meta::absent});
            ops.emplace_back(meta::put{
                keys_.registry,
                format::encode(format::registry_record{id, id, format::topic_state::creating}),
                meta::absent});
            ops.emplace_back(meta::put{keys_.retention, format::encode(root), meta::absent});
            auto r = meta::multi_sync(m, std::move(ops));
            if (!r && r.error() != meta::errc::unknown_outcome) {
                return nereus::error(r.error());
            }
            if (r && !r->applied && r->failed_op == 2) {
                return nereus::error(errc::corrupt_record);  // a root without a registry
            }
            if (r && !r->applied && r->failed_op == 0 && ++counter_races < kMaxCounterRaces) {
                --attempt;
            }
            continue;  // re-read: ours, a concurrent creator's, or retry
        }
        auto rec = format::decode_registry((*g)->value);
        if (!rec) {
            return nereus::error(rec.error());
        }
        if (rec->state == format::topic_state::creating) {
            auto c = env_.streams->create_stream(storage::stream_id(rec->stream_id));
            if (!c && c.error() != storage::errc::stream_exists) {
                return nereus::error(c.error());
            }
            auto live = *rec;
            live.state = format::topic_state::live;
            auto r = meta::cas_sync(m, keys_.registry, (*g)->ver, format::encode(live));
            if (!r && r.error() != meta::errc::unknown_outcome) {
                return nereus::error(r.error());
            }
            continue;
        }
        registry_ = *rec;
        registry_version_ = (*g)->ver;
        return {};
    }
    return nereus::error(meta::errc::unavailable);
}

result<void> managed_ledger::claim() {
    meta::store& m = *env_.meta;
    for (int attempt = 0; attempt < kMaxRetries; ++attempt) {
        auto g = meta::get_sync(m, keys_.retention);
        if (!g) {
            return nereus::error(g.error());
        }
        if (!*g) {
            return nereus::error(errc::corrupt_record);
        }
        auto root = format::decode_retention((*g)->value);
        if (!root) {
            return nereus::error(root.error());
        }
        auto next = *root;
        next.owner = meta::raw(env_.owner);
        next.claim_epoch += 1;
        const std::string bytes = format::encode(next);
        std::vector<meta::op> ops;
        ops.emplace_back(meta::check_session{env_.owner});
        ops.emplace_back(meta::put{keys_.owner, topic_, meta::absent, env_.owner});
        ops.emplace_back(meta::put{keys_.retention, bytes, (*g)->ver});
        auto r = meta::multi_sync(m, std::move(ops));
        if (!r) {
            if (r.error() == meta::errc::session_expired) {
                return nereus::error(errc::owner_fenced);
            }
            if (r.error() == meta::errc::unknown_outcome) {
                continue;  // re-read: the owner key then tells whether we hold it
            }
            return nereus::error(r.error());
        }
        if (!r->applied) {
            if (r->failed_op == 0) {
                return nereus::error(errc::owner_fenced);
            }
            if (r->failed_op == 1) {
                // The owner key exists. After an unknown outcome it may be our own claim.
                auto o = meta::get_sync(m, keys_.owner);
                auto cur = meta::get_sync(m, keys_.retention);
                if (o && *o && (*o)->owner == env_.owner && cur && *cur) {
                    auto mine = format::decode_retention((*cur)->value);
                    if (mine && mine->owner == meta::raw(env_.owner)) {
                        owner_version_ = (*o)->ver;
                        root_ = *mine;
                        root_version_ = (*cur)->ver;
                        return {};
                    }
                }
                return nereus::error(errc::owned_elsewhere);
            }
            continue;  // the root changed under us: re-read
        }
        owner_version_ = r->versions[1];
        root_ = std::move(next);
        root_version_ = r->versions[2];
        return {};
    }
    return nereus::error(meta::errc::unavailable);
}

result<void> managed_ledger::stabilize() {
    meta::store& m = *env_.meta;
    if (auto a = meta::get_sync(m, keys_.activity); a && *a) {
        auto rec = format::decode_activity((*a)->value);
        if (!rec) {
            return nereus::error(rec.error());
        }
        for (const auto& [n, t] : rec->last_active) {
            persisted_activity_[n] = t;
        }
        activity_version_ = (*a)->ver;
    } else if (!a) {
        return nereus::error(a.error());
    }
    const std::string prefix = options_.cursor.key_prefix + "/" +
                               cursor::escape_name(std::to_string(registry_.ledger_id)) + "/";
    auto keys = meta::list_sync(m, prefix);
    if (!keys) {
        return nereus::error(keys.error());
    }
    for (const auto& kr : *keys) {
        const std::string_view rest = std::string_view(kr.key).substr(prefix.size());
        if (rest.find('/') != std::string_view::npos) {
            continue;  // a delta record
        }
        auto name = format::unescape_name(rest);
        if (!name || name->empty()) {
            return nereus::error(errc::corrupt_record);
        }
        auto c = cursor::open_sync(cursor_env(), cursor_id(*name), options_.cursor);
        if (!c) {
            if (c.error() == cursor::errc::cursor_deleted) {
                continue;
            }
            NEREUS_LOG(ledger_log(), err, "cursor recovery failed topic={} cursor={}: {}", topic_,
                       *name, c.error().message());
            return nereus::error(c.error());
        }
        auto e = std::make_shared<cursor_entry>();
        e->name = *name;
        e->c = std::move(*c);
        e->created.requested = e->created.started_at = e->c->mark_delete();
        const std::lock_guard lock(mu_);
        cursors_[*name] = e;
        auto it = persisted_activity_.find(*name);
        activity_[*name] = std::max(it == persisted_activity_.end() ? 0 : it->second, opened_at_);
    }
    return {};
}

result<void> managed_ledger::recover_pending() {
    const std::lock_guard rlock(rmu_);
    if (root_.trim) {
        const offset target = root_.trim->target;
        // The floor the recorded trim was computed with: cursors it records for eviction count
        // at their eviction target.
        std::optional<offset> fl;
        {
            const std::lock_guard lock(mu_);
            for (const auto& [n, e] : cursors_) {
                offset m = e->c->mark_delete();
                for (const auto& ev : root_.trim->evictions) {
                    if (ev.cursor == n && ev.generation == e->c->current_fence().generation) {
                        m = std::max(m, ev.to);
                    }
                }
                fl = fl ? std::min(*fl, m) : m;
            }
        }
        const offset floor = fl ? *fl : stream_->end();
        auto info = env_.streams->info(storage::stream_id(registry_.stream_id));
        if (!info) {
            return nereus::error(info.error());
        }
        if (floor >= target || info->first.value() > floor) {
            NEREUS_TRY(complete_trim_locked(*root_.trim, nullptr));
        } else {
            // Nothing the floor needs was removed yet: roll the trim back. A recorded eviction
            // whose advance already happened (the cursor is at its target, still at the
            // recorded epoch) gets its epoch bump finished and stays in the history.
            auto next = root_;
            for (const auto& ev : root_.trim->evictions) {
                std::shared_ptr<cursor_entry> e;
                {
                    const std::lock_guard lock(mu_);
                    if (auto it = cursors_.find(ev.cursor); it != cursors_.end()) {
                        e = it->second;
                    }
                }
                if (!e || e->c->current_fence().generation != ev.generation ||
                    e->c->mark_delete() < ev.to) {
                    continue;  // gone, recreated, or not advanced: nothing happened
                }
                auto r = settle_eviction(*e->c, ev.to, ev.epoch);
                if (!r && r.error() != cursor::errc::cursor_deleted) {
                    return nereus::error(r.error());
                }
                next.history.push_back(ev);
            }
            while (next.history.size() > format::retention_root::kMaxHistory) {
                next.history.erase(next.history.begin());
            }
            next.trim.reset();
            NEREUS_TRY(write_root(next));
        }
    }
    // A cursor below start (a PROTECTION_PENDING one cannot be unless the floor protocol was
    // bypassed) is advanced to start like a trim completion: recorded pending with its epoch,
    // then a fenced eviction that keeps its acks above start, then the history.
    std::vector<std::shared_ptr<cursor_entry>> pending;
    bool below = false;
    {
        const std::lock_guard lock(mu_);
        for (const auto& [n, e] : cursors_) {
            if (e->c->life() == cursor::lifecycle::protection_pending) {
                pending.push_back(e);
            }
            below = below || e->c->mark_delete() < root_.start;
        }
    }
    if (below) {
        NEREUS_TRY(complete_trim_locked(format::pending_trim{root_.start, {}}, nullptr));
    }
    NEREUS_TRY(finalize_floor_locked());
    if (crash_at("open.floor_finalized")) {
        return nereus::error(errc::injected_crash);
    }
    for (const auto& e : pending) {
        auto r = cursor::activate_sync(*e->c, e->c->current_fence());
        if (!r) {
            return nereus::error(r.error());
        }
    }
    return {};
}

result<void> managed_ledger::revalidate() {
    std::vector<meta::op> ops;
    ops.emplace_back(meta::check_session{env_.owner});
    ops.emplace_back(meta::check{keys_.owner, owner_version_});
    ops.emplace_back(meta::check{keys_.registry, registry_version_});
    {
        const std::lock_guard rlock(rmu_);
        ops.emplace_back(meta::check{keys_.retention, root_version_});
    }
    auto r = meta::multi_sync(*env_.meta, std::move(ops));
    if (!r) {
        return nereus::error(r.error());
    }
    if (!r->applied) {
        return nereus::error(errc::owner_fenced);
    }
    return {};
}

// ---------------------------------------------------------------- retention root

result<void> managed_ledger::write_root(const format::retention_root& next) {
    const std::string bytes = format::encode(next);
    for (int attempt = 0; attempt < kMaxRetries; ++attempt) {
        std::vector<meta::op> ops;
        ops.emplace_back(meta::check_session{env_.owner});
        ops.emplace_back(meta::check{keys_.owner, owner_version_});
        ops.emplace_back(meta::put{keys_.retention, bytes, root_version_});
        auto r = meta::multi_sync(*env_.meta, std::move(ops));
        if (!r) {
            if (r.error() != meta::errc::unknown_outcome) {
                return nereus::error(r.error());
            }
            auto g = meta::get_sync(*env_.meta, keys_.retention);
            if (g && *g && (*g)->value == bytes) {
                root_ = next;
                root_version_ = (*g)->ver;
                return {};
            }
            if (g && *g && (*g)->ver == root_version_) {
                continue;  // not applied: send again
            }
            note_error(make_error_code(errc::owner_fenced));
            return nereus::error(errc::owner_fenced);
        }
        if (!r->applied) {
            // We hold the owner key: any other writer means ownership was lost.
            state_ = ledger_state::fenced;
            return nereus::error(errc::owner_fenced);
        }
        root_ = next;
        root_version_ = r->versions[2];
        return {};
    }
    return nereus::error(meta::errc::unavailable);
}

offset managed_ledger::floor_locked() const {
    const std::lock_guard lock(mu_);
    std::optional<offset> f;
    for (const auto& [n, e] : cursors_) {
        const offset m = e->c->mark_delete();
        f = f ? std::min(*f, m) : m;
    }
    for (const offset r : reservations_) {
        f = f ? std::min(*f, r) : r;
    }
    return std::max(stream_->start(), f ? *f : stream_->end());
}

offset managed_ledger::protection_floor() const {
    const std::lock_guard rlock(rmu_);
    return floor_locked();
}

result<void> managed_ledger::finalize_floor_locked() {
    const offset f = std::max(floor_locked(), root_.start);
    if (f == root_.floor) {
        return {};
    }
    auto next = root_;
    next.floor = f;
    return write_root(next);
}

result<void> managed_ledger::finalize_protection(const std::shared_ptr<cursor_entry>& e) {
    const std::lock_guard rlock(rmu_);
    NEREUS_TRY(finalize_floor_locked());
    if (crash_at("protect.floor_written")) {
        return nereus::error(errc::injected_crash);
    }
    auto r = cursor::activate_sync(*e->c, e->c->current_fence());
    if (!r) {
        note_error(r.error());
        return nereus::error(r.error());
    }
    return {};
}

result<offset> managed_ledger::retention_boundary_locked() {
    const retention_policy& p = root_.policy;
    const offset s = stream_->start();
    offset bt = s;
    offset bs = s;
    if (p.time_ms >= 0) {
        auto lk = stream_->lookup(now() - p.time_ms);
        if (!lk) {
            return nereus::error(lk.error());
        }
        bt = lk->clamped ? s : lk->at;
    }
    if (p.size_bytes >= 0) {
        auto b = stream_->size_boundary(static_cast<std::uint64_t>(p.size_bytes));
        if (!b) {
            return nereus::error(b.error());
        }
        bs = *b;
    }
    return std::max(bt, bs);
}

// Advances `c` to MDO >= `to` as a fenced eviction: a cumulative ack through to - 1 (individual
// acks and batch bits above `to` are kept; stale fences re-read and retry), then skip(0), which
// publishes a new epoch so that no delivery stamped before the eviction can ack at the new one.
// Never a reset: a reset would drop the acks above `to` and redeliver acked messages.
result<void> managed_ledger::evict(cursor::cursor& c, offset to) {
    for (int attempt = 0; attempt < kMaxRetries && c.mark_delete() < to; ++attempt) {
        auto r = cursor::ack_cumulative_sync(c, c.current_fence(), to - 1);
        if (!r) {
            return nereus::error(r.error());
        }
    }
    if (c.mark_delete() < to) {
        return nereus::error(meta::errc::unavailable);
    }
    if (crash_at("evict.advanced")) {
        return nereus::error(errc::injected_crash);
    }
    return bump_epoch(c);
}

result<void> managed_ledger::bump_epoch(cursor::cursor& c) {
    auto r = cursor::skip_sync(c, c.current_fence(), 0);
    if (!r) {
        return nereus::error(r.error());
    }
    return {};
}

result<void> managed_ledger::settle_eviction(cursor::cursor& c,
                                             offset to,
                                             std::uint64_t recorded_epoch) {
    if (c.mark_delete() < to) {
        return evict(c, to);
    }
    if (c.current_fence().epoch <= recorded_epoch) {
        // Advanced, but the epoch bump did not happen (a crash between the two CASes): finish
        // it. Once done the epoch is above the recorded one, so this runs at most once.
        return bump_epoch(c);
    }
    return {};
}

result<void> managed_ledger::complete_trim_locked(format::pending_trim p, trim_report* report) {
    stream_->raise_start(p.target);
    std::vector<std::shared_ptr<cursor_entry>> all;
    {
        const std::lock_guard lock(mu_);
        for (const auto& [n, e] : cursors_) {
            all.push_back(e);
        }
    }
    auto named = [&p](const cursor_entry& e, std::uint64_t generation) {
        return std::any_of(p.evictions.begin(), p.evictions.end(), [&](const eviction& ev) {
            return ev.cursor == e.name && ev.generation == generation;
        });
    };
    // A cursor below the target that the record does not name is recorded (pending, with its
    // epoch) before it is touched, so that a crash between its advance and its epoch bump is
    // finished by the next open like any recorded eviction.
    std::vector<eviction> unrecorded;
    for (const auto& e : all) {
        const cursor::fence f = e->c->current_fence();
        const offset mdo = e->c->mark_delete();
        if (mdo < p.target && !named(*e, f.generation)) {
            unrecorded.push_back(eviction{e->name, f.generation, mdo, p.target, f.epoch});
        }
    }
    if (!unrecorded.empty()) {
        p.evictions.insert(p.evictions.end(), unrecorded.begin(), unrecorded.end());
        auto next = root_;
        next.trim = p;
        NEREUS_TRY(write_root(next));
        if (crash_at("trim.advances_recorded")) {
            return nereus::error(errc::injected_crash);
        }
    }
    for (const auto& e : all) {
        const cursor::fence f = e->c->current_fence();
        std::optional<offset> to;
        std::uint64_t epoch = 0;
        for (const auto& ev : p.evictions) {
            if (ev.cursor == e->name && ev.generation == f.generation) {
                to = std::max({to.value_or(0), ev.to, p.target});
                epoch = std::max(epoch, ev.epoch);
            }
        }
        if (!to) {
            continue;  // not behind: at or above the target when the record was written
        }
        auto r = settle_eviction(*e->c, *to, epoch);
        if (!r) {
            if (r.error() == cursor::errc::cursor_deleted) {
                continue;
            }
            note_error(r.error());
            return nereus::error(r.error());
        }
    }
    if (crash_at("trim.evicted")) {
        return nereus::error(errc::injected_crash);
    }
    auto first =
        env_.streams->trim(storage::stream_id(registry_.stream_id), storage::offset(p.target));
    if (!first) {
        return nereus::error(first.error());
    }
    if (crash_at("trim.storage_trimmed")) {
        return nereus::error(errc::injected_crash);
    }
    auto next = root_;
    next.start = std::max(next.start, p.target);
    next.trim.reset();
    for (const auto& ev : p.evictions) {
        next.history.push_back(ev);
    }
    while (next.history.size() > format::retention_root::kMaxHistory) {
        next.history.erase(next.history.begin());
    }
    const offset f = floor_locked();
    next.floor = std::max(f, next.start);
    NEREUS_TRY(write_root(next));
    if (report != nullptr) {
        report->start_after = next.start;
        report->physical_first = first->value();
        report->floor = next.floor;
        report->evicted = std::move(p.evictions);
    }
    return {};
}

result<trim_report> managed_ledger::trim() {
    NEREUS_TRY(admit(operation::trim));
    const std::lock_guard rlock(rmu_);
    trim_report report;
    report.start_before = root_.start;
    if (root_.trim) {
        NEREUS_TRY(complete_trim_locked(*root_.trim, &report));
    }
    const offset end = stream_->end();
    const offset start = root_.start;
    std::vector<eviction> evictions;
    std::optional<offset> floor;
    {
        const std::lock_guard lock(mu_);
        const std::uint64_t limit = root_.policy.backlog_limit_entries;
        for (const auto& [n, e] : cursors_) {
            offset m = e->c->mark_delete();
            if (limit > 0 && end > m + limit) {
                const cursor::fence fc = e->c->current_fence();
                evictions.push_back(eviction{n, fc.generation, m, end - limit, fc.epoch});
                m = end - limit;
            }
            floor = floor ? std::min(*floor, m) : m;
        }
        for (const offset r : reservations_) {
            floor = floor ? std::min(*floor, r) : r;
        }
    }
    const offset f = std::max(start, floor ? *floor : end);
    auto boundary = retention_boundary_locked();
    if (!boundary) {
        return nereus::error(boundary.error());
    }
    const offset target = std::max(start, std::min(f, *boundary));
    report.floor = f;
    if (target == start && evictions.empty()) {
        if (f != root_.floor) {
            auto next = root_;
            next.floor = f;
            NEREUS_TRY(write_root(next));
        }
        auto info = env_.streams->info(storage::stream_id(registry_.stream_id));
        report.start_after = start;
        report.physical_first = info ? info->first.value() : start;
        return report;
    }
    auto next = root_;
    next.trim = format::pending_trim{target, evictions};
    next.floor = std::max(f, target);
    if (target > start) {
        auto m = stream_->max_time(start, target);
        if (!m) {
            return nereus::error(m.error());
        }
        if (*m) {
            next.trimmed_max_time =
                next.has_trimmed_time ? std::max(next.trimmed_max_time, **m) : **m;
            next.has_trimmed_time = true;
        }
    }
    NEREUS_TRY(write_root(next));
    if (next.has_trimmed_time) {
        stream_->set_trimmed_max_time(next.trimmed_max_time);
    }
    stream_->raise_start(target);
    if (crash_at("trim.recorded")) {
        return nereus::error(errc::injected_crash);
    }
    NEREUS_TRY(complete_trim_locked(*next.trim, &report));
    NEREUS_LOG(ledger_log(), info, "trim topic={} start {}->{} physical_first={} evicted={}",
               topic_, report.start_before, report.start_after, report.physical_first,
               report.evicted.size());
    return report;
}

result<void> managed_ledger::set_retention(const retention_policy& policy) {
    NEREUS_TRY(admit(operation::set_retention));
    const std::lock_guard rlock(rmu_);
    auto next = root_;
    next.policy = policy;
    return write_root(next);
}

ledger_info managed_ledger::info() const {
    ledger_info i;
    i.ledger_id = registry_.ledger_id;
    i.stream_id = registry_.stream_id;
    i.start = stream_->start();
    i.end = stream_->end();
    auto si = env_.streams->info(storage::stream_id(registry_.stream_id));
    i.physical_first = si ? si->first.value() : i.start;
    const std::lock_guard rlock(rmu_);
    i.floor = root_.floor;
    i.claim_epoch = root_.claim_epoch;
    i.retention = root_.policy;
    i.eviction_history = root_.history;
    return i;
}

// ---------------------------------------------------------------- appends

void managed_ledger::append(bytes_view payload,
                            const append_options& options,
                            append_callback done) {
    if (options.deliver_at || options.txn_id) {
        done(nereus::error(errc::unsupported));
        return;
    }
    if (options.batch_size == 0) {
        done(nereus::error(errc::invalid_argument));
        return;
    }
    if (auto a = admit(operation::append); !a) {
        done(nereus::error(a.error()));
        return;
    }
    // The entry (header + payload) is staged in a per-thread buffer, not a fresh vector per
    // append (no malloc, no zero-fill): stream_store::append copies it into its commit group
    // before it returns. Entries over kMaxScratch get their own buffer, so a rare huge message
    // does not pin that much memory in every producing thread.
    constexpr std::size_t kMaxScratch = 1 << 20;
    thread_local std::vector<std::byte> scratch;
    std::vector<std::byte> big;
    const std::size_t n = format::kEntryHeaderSize + payload.size();
    std::vector<std::byte>& buf = n <= kMaxScratch ? scratch : big;
    if (buf.size() < n) {
        buf.resize(n);
    }
    format::encode_entry_header(
        {options.batch_size, options.publish_time},
        std::span<std::byte, format::kEntryHeaderSize>(buf.data(), format::kEntryHeaderSize));
    std::copy(payload.begin(), payload.end(), buf.begin() + format::kEntryHeaderSize);
    // The whole completion (ledger, caller's inline callback, publish time, size) is stored
    // inline in the store's pending append: no heap context per append.
    // A raw `this`, not shared_from_this(): that reference count, taken here and released by
    // the committer thread, moved its cache line between the two cores once per message (59 %
    // of this function's own samples). The caller keeps the ledger alive until `done` has run
    // (Requires in the header); `ledger` is not used after `done`.
    // Relocatable by copying when `done` is: the rest is a pointer and integers.
    const bool relocatable = done.relocatable();
    auto finish = [ledger = this, done = std::move(done), publish_time = options.publish_time,
                   n](result<storage::offset> r) mutable {
        if (!r) {
            done(nereus::error(r.error()));
            return;
        }
        ledger->stream_->on_appended(r->value(), publish_time, n);
        done(message_id{ledger->registry_.ledger_id, r->value(), -1});
    };
    static_assert(storage::append_completion::fits_inline<decltype(finish)>);
    // The payload's verified tail is also the staged entry's tail.
    const storage::stream_store::verified_tail tail{
        options.tail_crc, options.tail_len <= payload.size() ? options.tail_len : 0};
    env_.streams->append(
        storage::stream_id(registry_.stream_id), bytes_view(buf.data(), n), tail,
        storage::append_completion(relocatable_if{relocatable}, std::move(finish)));
}

result<message_id> managed_ledger::append_sync(bytes_view payload, const append_options& options) {
    std::promise<result<message_id>> p;
    auto f = p.get_future();
    append(payload, options, [&p](result<message_id> r) { p.set_value(std::move(r)); });
    return f.get();
}

// ---------------------------------------------------------------- cursors

result<std::shared_ptr<managed_cursor>> managed_ledger::open_cursor(
    const std::string& name, cursor::initial_position where, const subscription_options& options) {
    if (options.replicated || options.transactional || options.delayed_delivery) {
        return nereus::error(errc::unsupported);
    }
    NEREUS_TRY(admit(options.durable ? operation::open_durable_cursor
                                     : operation::open_non_durable_cursor));
    if (name.empty()) {
        return nereus::error(errc::invalid_argument);
    }
    auto e = std::make_shared<cursor_entry>();
    e->name = name;
    e->durable = options.durable;
    offset reservation = 0;
    {
        const std::lock_guard rlock(rmu_);
        const std::lock_guard lock(mu_);
        if (options.durable && cursors_.count(name) != 0) {
            return nereus::error(errc::cursor_exists);
        }
        const offset s = stream_->start();
        const offset end = stream_->end();
        switch (where.where) {
            case cursor::initial_position::kind::earliest:
                e->created.requested = s;
                reservation = s;
                break;
            case cursor::initial_position::kind::latest:
                e->created.requested = end;
                reservation = end;
                break;
            case cursor::initial_position::kind::at_offset:
                if (where.at > end) {
                    return nereus::error(cursor::errc::offset_beyond_end);
                }
                e->created.requested = where.at;
                if (where.at < s) {
                    e->created.clamped = true;
                    where = cursor::initial_position::at_offset(s);
                }
                reservation = where.at;
                break;
        }
        if (options.durable) {
            reservations_.insert(reservation);
        }
    }
    auto drop_reservation = [this, reservation] {
        const std::lock_guard lock(mu_);
        if (auto it = reservations_.find(reservation); it != reservations_.end()) {
            reservations_.erase(it);
        }
    };
    if (!options.durable) {
        offset mdo = e->created.requested;
        if (where.where == cursor::initial_position::kind::at_offset) {
            mdo = where.at;
        }
        e->nd_state = cursor::cursor_state(mdo);
        e->created.started_at = mdo;
        return std::make_shared<managed_cursor>(shared_from_this(), e);
    }
    auto c = cursor::create_sync(cursor_env(), cursor_id(name), where, options_.cursor);
    if (!c) {
        drop_reservation();
        note_error(c.error());
        if (c.error() == cursor::errc::cursor_exists) {
            return nereus::error(errc::cursor_exists);
        }
        return nereus::error(c.error());
    }
    e->c = std::move(*c);
    e->created.started_at = e->c->mark_delete();
    {
        const std::lock_guard lock(mu_);
        cursors_[name] = e;
        activity_[name] = now();
    }
    drop_reservation();  // the cursor's own MDO protects it from here on
    if (crash_at("protect.cursor_pending")) {
        return nereus::error(errc::injected_crash);
    }
    NEREUS_TRY(finalize_protection(e));
    return std::make_shared<managed_cursor>(shared_from_this(), e);
}

result<std::shared_ptr<managed_cursor>> managed_ledger::find_cursor(const std::string& name) {
    NEREUS_TRY(admit(operation::read));
    const std::lock_guard lock(mu_);
    auto it = cursors_.find(name);
    if (it == cursors_.end()) {
        return nereus::error(errc::cursor_not_found);
    }
    return std::make_shared<managed_cursor>(shared_from_this(), it->second);
}

std::vector<std::string> managed_ledger::cursor_names() const {
    const std::lock_guard lock(mu_);
    std::vector<std::string> out;
    for (const auto& [n, e] : cursors_) {
        out.push_back(n);
    }
    return out;
}

result<void> managed_ledger::delete_cursor(const std::string& name) {
    NEREUS_TRY(admit(operation::delete_cursor));
    const std::lock_guard rlock(rmu_);
    std::shared_ptr<cursor_entry> e;
    {
        const std::lock_guard lock(mu_);
        auto it = cursors_.find(name);
        if (it == cursors_.end()) {
            return nereus::error(errc::cursor_not_found);
        }
        e = it->second;
    }
    auto r = cursor::remove_sync(*e->c, e->c->current_fence());
    if (!r) {
        note_error(r.error());
        return nereus::error(r.error());
    }
    const std::lock_guard lock(mu_);
    cursors_.erase(name);
    activity_.erase(name);
    return {};
}

void managed_ledger::touch(const std::string& name) {
    const std::lock_guard lock(mu_);
    if (auto it = activity_.find(name); it != activity_.end()) {
        it->second = std::max(it->second, now());
    }
}

void managed_ledger::try_touch(const std::string& name) {
    const std::unique_lock lock(mu_, std::try_to_lock);
    if (!lock.owns_lock()) {
        return;
    }
    if (auto it = activity_.find(name); it != activity_.end()) {
        it->second = std::max(it->second, now());
    }
}

// ---------------------------------------------------------------- idle expiry

result<std::vector<std::string>> managed_ledger::expire_idle_cursors(
    std::chrono::milliseconds idle_timeout) {
    NEREUS_TRY(admit(operation::expire_idle));
    const std::int64_t t = now();
    std::vector<std::string> expired;
    if (t - opened_at_ < options_.idle_grace.count()) {
        return expired;  // a new owner first observes the subscriptions for a grace period
    }
    {
        const std::lock_guard lock(mu_);
        for (const auto& [n, e] : cursors_) {
            if (e->connected.load()) {
                continue;
            }
            std::int64_t last = opened_at_;
            if (auto it = activity_.find(n); it != activity_.end()) {
                last = std::max(last, it->second);
            }
            if (auto it = persisted_activity_.find(n); it != persisted_activity_.end()) {
                last = std::max(last, it->second);
            }
            if (t - last > idle_timeout.count()) {
                expired.push_back(n);
            }
        }
    }
    for (const auto& n : expired) {
        NEREUS_TRY(delete_cursor(n));
    }
    return expired;
}

result<void> managed_ledger::persist_activity() {
    format::activity_record rec;
    {
        const std::lock_guard lock(mu_);
        for (const auto& [n, t] : activity_) {
            rec.last_active.emplace_back(n, t);
        }
    }
    std::vector<meta::op> ops;
    ops.emplace_back(meta::check_session{env_.owner});
    ops.emplace_back(meta::check{keys_.owner, owner_version_});
    ops.emplace_back(meta::put{keys_.activity, format::encode(rec), meta::any_version});
    auto r = meta::multi_sync(*env_.meta, std::move(ops));
    if (!r) {
        return nereus::error(r.error());
    }
    if (!r->applied) {
        note_error(make_error_code(errc::owner_fenced));
        return nereus::error(errc::owner_fenced);
    }
    const std::lock_guard lock(mu_);
    for (const auto& [n, t] : rec.last_active) {
        persisted_activity_[n] = t;
    }
    return {};
}

result<void> managed_ledger::close() {
    NEREUS_TRY(admit(operation::close));
    const bool writable = state_.load() == ledger_state::writable;
    result<void> out;
    if (writable) {
        out = persist_activity();
    }
    std::vector<std::shared_ptr<cursor_entry>> all;
    {
        const std::lock_guard lock(mu_);
        for (const auto& [n, e] : cursors_) {
            all.push_back(e);
        }
    }
    for (const auto& e : all) {
        (void)cursor::close_sync(*e->c);
    }
    if (writable) {
        std::vector<meta::op> ops;
        ops.emplace_back(meta::check_session{env_.owner});
        ops.emplace_back(meta::erase{keys_.owner, owner_version_});
        auto r = meta::multi_sync(*env_.meta, std::move(ops));
        if (out && !r) {
            out = nereus::error(r.error());
        }
    }
    state_ = ledger_state::closed;
    return out;
}

}  // namespace nereus::ledger
