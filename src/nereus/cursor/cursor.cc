#include "nereus/cursor/cursor.h"

#include "nereus/base/assert.h"
#include "nereus/base/crc32c.h"
#include "nereus/cursor/commit_timer.h"
#include "nereus/cursor/errc.h"
#include "nereus/cursor/logger.h"
#include "nereus/cursor/op_merge.h"
#include "nereus/cursor/snapshot_guard.h"
#include "nereus/cursor/stream_view.h"
#include "nereus/meta/errc.h"
#include "nereus/meta/store.h"
#include "nereus/objects/errc.h"
#include "nereus/objects/object_store.h"

#include <algorithm>
#include <atomic>
#include <type_traits>
#include <utility>

namespace nereus::cursor {

const char* to_string(lifecycle l) {
    switch (l) {
        case lifecycle::protection_pending:
            return "PROTECTION_PENDING";
        case lifecycle::active:
            return "ACTIVE";
        case lifecycle::deleted:
            return "DELETED";
    }
    return "?";
}

const char* to_string(ack_status s) {
    switch (s) {
        case ack_status::ok:
            return "ok";
        case ack_status::already_acked:
            return "already_acked";
        case ack_status::stale_generation:
            return "stale_generation";
        case ack_status::stale_epoch:
            return "stale_epoch";
        case ack_status::state_full:
            return "state_full";
    }
    return "?";
}

enum class req_kind : std::uint8_t {
    // grouped (share one CAS)
    op,
    flush,
    close,
    // alone (each rewrites the whole state or the root's fence)
    reset,
    clear,
    skip,
    activate,
    remove,
};

struct cursor::request {
    req_kind kind = req_kind::op;
    fence f;
    bool epoch_fenced = false;
    std::optional<state_op> op;
    reset_target target;
    std::uint64_t n = 0;
    op_callback done;

    [[nodiscard]] bool alone() const { return kind >= req_kind::reset; }
};

struct cursor::commit {
    std::vector<request> members;
    std::vector<state_op> ops;               // delta path: applied to state_ on success
    std::optional<cursor_state> next_state;  // whole-state path
    format::root_record next_root;           // its state field is unused
    std::string root_bytes;
    std::vector<meta::op> multi;
    std::optional<std::string> protected_snapshot;
    std::optional<std::string> replaced_snapshot;
    std::vector<std::uint64_t> erasing;  // stale delta seqs this multi erases
    offset_range new_stale;              // delta seqs that become stale when it applies
    std::map<offset, std::uint32_t> staged_redeliveries;
    op_result fence_result;
    int unknown_retries = 0;
};

namespace {

bool is_ack(const state_op& op) {
    return std::holds_alternative<ack_range_op>(op) || std::holds_alternative<ack_batch_op>(op) ||
           std::holds_alternative<ack_cumulative_op>(op);
}

bool reserved(const std::string& key) {
    return key.starts_with(reserved_property_prefix);
}

bool has_reserved_key(const state_op& op) {
    if (const auto* p = std::get_if<put_property_op>(&op)) {
        return reserved(p->key);
    }
    if (const auto* p = std::get_if<remove_property_op>(&op)) {
        return reserved(p->key);
    }
    const property_map* m = nullptr;
    if (const auto* p = std::get_if<replace_properties_op>(&op)) {
        m = &p->props;
    } else if (const auto* c = std::get_if<ack_cumulative_op>(&op)) {
        m = &c->props;
    }
    if (m != nullptr) {
        for (const auto& [k, v] : *m) {
            if (reserved(k)) {
                return true;
            }
        }
    }
    return false;
}

// The highest entry offset an ack op names (must lie below the stream end).
std::optional<offset> acked_entry(const state_op& op) {
    if (const auto* r = std::get_if<ack_range_op>(&op)) {
        return r->end - 1;
    }
    if (const auto* b = std::get_if<ack_batch_op>(&op)) {
        return b->entry;
    }
    if (const auto* c = std::get_if<ack_cumulative_op>(&op)) {
        return c->entry;
    }
    return std::nullopt;
}

std::error_code map_object_error(std::error_code ec) {
    if (ec == objects::errc::not_found) {
        return make_error_code(errc::snapshot_missing);
    }
    if (ec == objects::errc::corrupt_object) {
        return make_error_code(errc::corrupt_snapshot);
    }
    if (ec == objects::errc::unsupported_version) {
        return make_error_code(errc::unsupported_format);
    }
    return ec;
}

meta::op check_owner(meta::session_id owner) {
    return meta::check_session{.session = owner};
}

// The object that holds a spilled root's snapshot (derived from the root's short reference).
std::string snapshot_object(const cursor_keys& keys, const format::root_record& r) {
    return keys.snapshot_name(r.generation, r.snapshot.seq, r.snapshot.writer, r.snapshot.nonce);
}

// Stale delta seqs as sorted, disjoint, merged ranges (cursor::stale_deltas_).
void add_seqs(std::vector<offset_range>& v, std::uint64_t begin, std::uint64_t end) {
    if (begin >= end) {
        return;
    }
    if (v.empty() || v.back().end < begin) {  // the common case: appended in ascending order
        v.push_back({begin, end});
        return;
    }
    if (v.back().end == begin) {
        v.back().end = end;
        return;
    }
    // General case: insert, then merge every range that overlaps or touches [begin, end).
    auto it = std::lower_bound(v.begin(), v.end(), begin,
                               [](const offset_range& r, std::uint64_t x) { return r.end < x; });
    auto last = it;
    while (last != v.end() && last->begin <= end) {
        begin = std::min(begin, last->begin);
        end = std::max(end, last->end);
        ++last;
    }
    it = v.erase(it, last);
    v.insert(it, offset_range{begin, end});
}

void remove_seq(std::vector<offset_range>& v, std::uint64_t seq) {
    auto it = std::upper_bound(v.begin(), v.end(), seq,
                               [](std::uint64_t x, const offset_range& r) { return x < r.end; });
    if (it == v.end() || seq < it->begin) {
        return;
    }
    if (it->begin + 1 == it->end) {
        v.erase(it);
    } else if (seq == it->begin) {
        ++it->begin;
    } else if (seq + 1 == it->end) {
        --it->end;
    } else {
        const offset_range tail{seq + 1, it->end};
        it->end = seq;
        v.insert(it + 1, tail);
    }
}

// Process-wide: with the writer's owner session it makes every snapshot name unique.
std::atomic<std::uint64_t> g_snapshot_nonce{0};

}  // namespace

// ---------------------------------------------------------------------------------------------
// construction, create, open, recovery

cursor::cursor(token, cursor_env env, cursor_id id, cursor_keys keys, cursor_options options)
    : env_(env), id_(std::move(id)), keys_(std::move(keys)), options_(std::move(options)) {}

cursor::~cursor() = default;

void cursor::install(loaded l) {
    state_ = std::move(l.root.state);
    l.root.state = cursor_state();
    root_ = std::move(l.root);
    root_version_ = l.version;
    for (auto seq : l.stale_deltas) {  // ascending (listed in key order): O(1) each
        add_seqs(stale_deltas_, seq, seq + 1);
    }
}

void cursor::load(const cursor_env& env,
                  const cursor_keys& keys,
                  std::string root_bytes,
                  meta::version version,
                  callback<loaded> done) {
    auto root = format::decode_root(root_bytes);
    if (!root) {
        NEREUS_LOG(cursor_log(), err, "cursor root {} is corrupt: {}", keys.root,
                   root.error().message());
        done(nereus::error(root.error()));
        return;
    }
    auto l = std::make_shared<loaded>();
    l->root = std::move(*root);
    l->version = version;
    if (l->root.spilled) {
        const auto& ref = l->root.snapshot;
        const std::string name = snapshot_object(keys, l->root);
        auto obj = env.objects->get(name);
        if (!obj) {
            const auto ec = map_object_error(obj.error());
            NEREUS_LOG(cursor_log(), err, "cursor {}: snapshot {} unreadable: {}", keys.root, name,
                       ec.message());
            done(nereus::error(ec));
            return;
        }
        if (obj->bytes.size() != ref.size || obj->checksum != ref.checksum) {
            NEREUS_LOG(cursor_log(), err,
                       "cursor {}: snapshot {} has size {} crc {:08x}, root expects {} {:08x}",
                       keys.root, name, obj->bytes.size(), obj->checksum, ref.size, ref.checksum);
            done(nereus::error(errc::snapshot_mismatch));
            return;
        }
        auto snap = format::decode_snapshot(
            std::string_view(reinterpret_cast<const char*>(obj->bytes.data()), obj->bytes.size()));
        if (!snap) {
            NEREUS_LOG(cursor_log(), err, "cursor {}: snapshot {} does not decode: {}", keys.root,
                       name, snap.error().message());
            done(nereus::error(snap.error()));
            return;
        }
        if (snap->first.identity != keys.root || snap->first.generation != l->root.generation ||
            snap->first.seq != ref.seq) {
            done(nereus::error(errc::snapshot_mismatch));
            return;
        }
        l->root.state = std::move(snap->second);
    }
    const std::string prefix = keys.delta_prefix;
    env.meta->list(prefix, [l, keys, done = std::move(done)](
                               result<std::vector<meta::keyed_record>> r) mutable {
        if (!r) {
            done(nereus::error(r.error()));
            return;
        }
        // Spilled: the deltas are exactly the sequence numbers snapshot.seq + 1 .. commit_seq.
        const std::uint64_t first = l->root.spilled ? l->root.snapshot.seq + 1 : 0;
        const std::uint64_t next = l->root.spilled ? l->root.commit_seq + 1 : 0;
        std::uint64_t want = first;
        for (const auto& kr : *r) {
            auto seq = keys.delta_seq(kr.key);
            if (!seq) {
                NEREUS_LOG(cursor_log(), warn, "cursor {}: ignoring foreign key {}", keys.root,
                           kr.key);
                continue;
            }
            if (*seq < first || *seq >= next) {
                l->stale_deltas.push_back(*seq);
                continue;
            }
            if (*seq != want) {
                NEREUS_LOG(cursor_log(), err, "cursor {}: delta {} missing", keys.root, want);
                done(nereus::error(errc::delta_missing));
                return;
            }
            // The generation and seq are bound into the delta's checksum: a delta of another
            // generation or under another key does not decode.
            auto d = format::decode_delta(kr.rec.value, l->root.generation, *seq);
            if (!d) {
                NEREUS_LOG(cursor_log(), err, "cursor {}: delta {} is corrupt: {}", keys.root, *seq,
                           d.error().message());
                done(nereus::error(d.error()));
                return;
            }
            l->root.delta_bytes += kr.rec.value.size();
            for (const auto& op : d->ops) {
                if (!l->root.state.validate(op)) {
                    done(nereus::error(errc::corrupt_delta));
                    return;
                }
                l->root.state.apply(op);
            }
            ++want;
        }
        if (want != next) {
            NEREUS_LOG(cursor_log(), err, "cursor {}: delta {} missing", keys.root, want);
            done(nereus::error(errc::delta_missing));
            return;
        }
        done(std::move(*l));
    });
}

void cursor::create(cursor_env env,
                    cursor_id id,
                    initial_position where,
                    cursor_options options,
                    callback<std::shared_ptr<cursor>> done) {
    auto keys = cursor_keys::make(options.key_prefix, id);
    if (!keys) {
        done(nereus::error(keys.error()));
        return;
    }
    struct ctx {
        cursor_env env;
        cursor_id id;
        cursor_keys keys;
        cursor_options options;
        initial_position where;
        callback<std::shared_ptr<cursor>> done;
        format::root_record root;
        std::string bytes;
        meta::version expected = meta::absent;
        int retries = 0;
    };
    auto x = std::make_shared<ctx>(
        ctx{env, std::move(id), std::move(*keys), std::move(options), where, std::move(done)});
    auto finish = [x](meta::version v) {
        auto c = std::make_shared<cursor>(token{}, x->env, x->id, x->keys, x->options);
        // Deltas of a deleted generation are stale now; list them for the GC.
        x->env.meta->list(
            x->keys.delta_prefix, [x, c, v](result<std::vector<meta::keyed_record>> r) mutable {
                loaded l;
                l.root = std::move(x->root);
                l.version = v;
                if (r) {
                    for (const auto& kr : *r) {
                        if (auto seq = x->keys.delta_seq(kr.key)) {
                            l.stale_deltas.push_back(*seq);
                        }
                    }
                }
                c->install(std::move(l));
                if (auto g = c->collect_garbage(); !g) {
                    NEREUS_LOG(cursor_log(), warn, "cursor {}: snapshot GC: {}", x->keys.root,
                               g.error().message());
                }
                NEREUS_LOG(cursor_log(), info, "cursor created {} generation={} mdo={}",
                           x->keys.root, c->root_.generation, c->state_.mark_delete());
                x->done(std::move(c));
            });
    };
    // Sends the creation CAS; an unknown outcome is resolved by re-reading the root.
    // The function holds itself only weakly (a strong self-capture is a cycle that leaked it and
    // the ctx on every create): it is kept alive by the pending callbacks, and whoever calls
    // (*send)() holds a strong reference, so the lock() below always succeeds.
    auto send = std::make_shared<std::function<void()>>();
    *send = [x, finish, self = std::weak_ptr<std::function<void()>>(send)] {
        auto send = self.lock();
        std::vector<meta::op> ops;
        ops.emplace_back(check_owner(x->env.owner));
        ops.emplace_back(
            meta::put{.key = x->keys.root, .value = x->bytes, .expected = x->expected});
        x->env.meta->multi(std::move(ops), [x, finish, send](result<meta::multi_result> r) {
            if (r && r->applied) {
                finish(r->versions[1]);
                return;
            }
            if (r) {
                x->done(
                    nereus::error(r->failed_op == 0 ? errc::owner_fenced : errc::cursor_exists));
                return;
            }
            if (r.error() != meta::errc::unknown_outcome ||
                ++x->retries > x->options.max_unknown_retries) {
                x->done(nereus::error(r.error()));
                return;
            }
            x->env.meta->get(x->keys.root,
                             [x, finish, send](result<std::optional<meta::record>> g) {
                                 if (!g) {
                                     x->done(nereus::error(g.error()));
                                 } else if (*g && (*g)->value == x->bytes) {
                                     finish((*g)->ver);
                                 } else if ((*g ? (*g)->ver : meta::absent) == x->expected) {
                                     (*send)();
                                 } else {
                                     x->done(nereus::error(errc::cursor_exists));
                                 }
                             });
        });
    };
    x->env.meta->get(x->keys.root, [x, send](result<std::optional<meta::record>> r) {
        if (!r) {
            x->done(nereus::error(r.error()));
            return;
        }
        format::root_record root;
        root.generation = 1;
        if (*r) {
            auto old = format::decode_root((*r)->value);
            if (!old) {
                x->done(nereus::error(old.error()));
                return;
            }
            if (old->life != lifecycle::deleted) {
                x->done(nereus::error(errc::cursor_exists));
                return;
            }
            root.generation = old->generation + 1;
            // commit_seq continues, so the old generation's delta numbers are never reused.
            root.commit_seq = old->commit_seq;
            x->expected = (*r)->ver;
        }
        const stream_view& s = *x->env.stream;
        offset mdo = 0;
        switch (x->where.where) {
            case initial_position::kind::earliest:
                mdo = s.start();
                break;
            case initial_position::kind::latest:
                mdo = s.end();  // sampled immediately before the creation CAS
                break;
            case initial_position::kind::at_offset:
                if (x->where.at > s.end()) {
                    x->done(nereus::error(errc::offset_beyond_end));
                    return;
                }
                if (x->where.at < s.start()) {
                    x->done(nereus::error(errc::invalid_argument));
                    return;
                }
                mdo = x->where.at;
                break;
        }
        root.epoch = 1;
        root.life = lifecycle::protection_pending;
        root.commit_seq += 1;
        root.writer = meta::raw(x->env.owner);
        root.state = cursor_state(mdo);
        x->bytes = format::encode_root(root);
        x->root = std::move(root);
        (*send)();
    });
}

void cursor::open(cursor_env env,
                  cursor_id id,
                  cursor_options options,
                  callback<std::shared_ptr<cursor>> done) {
    auto keys = cursor_keys::make(options.key_prefix, id);
    if (!keys) {
        done(nereus::error(keys.error()));
        return;
    }
    auto c =
        std::make_shared<cursor>(token{}, env, std::move(id), std::move(*keys), std::move(options));
    env.meta->get(c->keys_.root, [c, done = std::move(done)](
                                     result<std::optional<meta::record>> r) mutable {
        if (!r) {
            done(nereus::error(r.error()));
            return;
        }
        if (!*r) {
            done(nereus::error(errc::cursor_not_found));
            return;
        }
        load(c->env_, c->keys_, std::move((*r)->value), (*r)->ver,
             [c, done = std::move(done)](result<loaded> l) mutable {
                 if (!l) {
                     done(nereus::error(l.error()));
                     return;
                 }
                 if (l->root.life == lifecycle::deleted) {
                     done(nereus::error(errc::cursor_deleted));
                     return;
                 }
                 c->install(std::move(*l));
                 if (auto g = c->collect_garbage(); !g) {
                     NEREUS_LOG(cursor_log(), warn, "cursor {}: snapshot GC: {}", c->keys_.root,
                                g.error().message());
                 }
                 NEREUS_LOG(cursor_log(), info,
                            "cursor opened {} generation={} epoch={} mdo={} ranges={} spilled={}",
                            c->keys_.root, c->root_.generation, c->root_.epoch,
                            c->state_.mark_delete(), c->state_.ranges().size(), c->root_.spilled);
                 done(std::move(c));
             });
    });
}

result<std::size_t> cursor::collect_garbage() {
    auto names = env_.objects->list(keys_.object_prefix);
    if (!names) {
        return nereus::error(names.error());
    }
    std::size_t removed = 0;
    for (const auto& name : *names) {
        {
            const std::lock_guard lock(mu_);
            if ((root_.spilled && name == snapshot_object(keys_, root_)) ||
                snapshot_guard::is_protected(name)) {
                continue;
            }
        }
        if (auto r = env_.objects->remove(name); r) {
            ++removed;
        } else if (r.error() != objects::errc::not_found) {
            return nereus::error(r.error());
        }
    }
    return removed;
}

// ---------------------------------------------------------------------------------------------
// requests

void cursor::run(std::vector<completion>& out) {
    for (auto& f : out) {
        f();
    }
    out.clear();
}

op_result cursor::result_with(ack_status s) const {
    op_result r;
    r.status = s;
    r.current = fence{root_.generation, root_.epoch};
    r.mark_delete = state_.mark_delete();
    r.position = state_.mark_delete();
    r.root_version = root_version_;
    return r;
}

std::size_t cursor::inline_limit() const {
    return std::min(options_.spill_threshold_bytes, meta::max_value_size - 4096);
}

std::optional<result<op_result>> cursor::pre_check(const request& r) const {
    if (closed_) {
        return result<op_result>(nereus::error(errc::closed));
    }
    if (broken_) {
        return result<op_result>(nereus::error(broken_));
    }
    // Admission (doc/cursor-lifecycle.md): a DELETED generation admits nothing.
    if (root_.life == lifecycle::deleted) {
        return result<op_result>(nereus::error(errc::cursor_deleted));
    }
    if (r.kind == req_kind::flush || r.kind == req_kind::close) {
        return std::nullopt;
    }
    if (r.f.generation < root_.generation) {
        return result<op_result>(result_with(ack_status::stale_generation));
    }
    if (r.f.generation > root_.generation) {
        return result<op_result>(nereus::error(errc::invalid_argument));
    }
    if (r.epoch_fenced) {
        if (r.f.epoch < root_.epoch) {
            return result<op_result>(result_with(ack_status::stale_epoch));
        }
        if (r.f.epoch > root_.epoch) {
            return result<op_result>(nereus::error(errc::invalid_argument));
        }
    }
    if (r.op) {
        if (has_reserved_key(*r.op)) {
            return result<op_result>(nereus::error(errc::reserved_property));
        }
        if (auto e = acked_entry(*r.op); e && *e >= env_.stream->end()) {
            return result<op_result>(nereus::error(errc::offset_beyond_end));
        }
        if (auto v = state_.validate(*r.op); !v) {
            return result<op_result>(nereus::error(v.error()));
        }
    }
    if (r.kind == req_kind::reset && r.target.where == reset_target::kind::to_offset &&
        r.target.at > env_.stream->end()) {
        return result<op_result>(nereus::error(errc::offset_beyond_end));
    }
    return std::nullopt;
}

void cursor::submit(request r) {
    std::vector<completion> out;
    {
        const std::lock_guard lock(mu_);
        if (auto rej = pre_check(r)) {
            out.emplace_back([done = std::move(r.done), res = std::move(*rej)] { done(res); });
        } else {
            queue_.push_back(std::move(r));
            pump(out);
        }
    }
    run(out);
}

void cursor::ack(fence f, offset entry, op_callback done) {
    request r;
    r.f = f;
    r.epoch_fenced = true;
    r.op = ack_range_op{entry, entry + 1};
    r.done = std::move(done);
    submit(std::move(r));
}

void cursor::submit_all(std::vector<request>& rs) {
    std::vector<completion> out;
    {
        const std::lock_guard lock(mu_);
        for (auto& r : rs) {
            if (auto rej = pre_check(r)) {
                out.emplace_back([done = std::move(r.done), res = std::move(*rej)] { done(res); });
            } else {
                queue_.push_back(std::move(r));
            }
        }
        pump(out);
    }
    rs.clear();
    run(out);
}

void cursor::ack_ranges(std::span<const fenced_range> ranges, range_callback done) {
    if (ranges.empty()) {
        return;
    }
    // One heap join per call (not per range): each request's callback is a pointer and an
    // index, small enough for std::function's inline buffer. Freed by the last completion.
    struct join {
        range_callback done;
        std::atomic<std::size_t> left;
    };
    auto* j = new join{std::move(done), ranges.size()};
    std::vector<request> rs;
    rs.reserve(ranges.size());
    for (std::size_t i = 0; i < ranges.size(); ++i) {
        const auto& g = ranges[i];
        if (g.first >= g.end) {
            j->done(i, nereus::error(errc::invalid_argument));
            if (j->left.fetch_sub(1) == 1) {
                delete j;
            }
            continue;
        }
        request r;
        r.f = g.f;
        r.epoch_fenced = true;
        r.op = ack_range_op{g.first, g.end};
        r.done = [j, i](result<op_result> res) {
            j->done(i, std::move(res));
            if (j->left.fetch_sub(1) == 1) {
                delete j;
            }
        };
        rs.push_back(std::move(r));
    }
    submit_all(rs);
}

void cursor::ack_batch_index(fence f, offset entry, batch_bits acked, op_callback done) {
    request r;
    r.f = f;
    r.epoch_fenced = true;
    r.op = ack_batch_op{entry, std::move(acked)};
    r.done = std::move(done);
    submit(std::move(r));
}

void cursor::ack_cumulative(fence f,
                            offset entry,
                            std::optional<std::uint32_t> batch_index,
                            std::uint32_t batch_size,
                            property_map props,
                            op_callback done) {
    ack_cumulative_op op;
    op.entry = entry;
    if (batch_index) {
        if (*batch_index >= batch_size) {
            done(nereus::error(errc::invalid_argument));
            return;
        }
        op.prefix_end = *batch_index + 1;
        op.batch_size = batch_size;
    }
    op.props = std::move(props);
    request r;
    r.f = f;
    r.epoch_fenced = true;
    r.op = std::move(op);
    r.done = std::move(done);
    submit(std::move(r));
}

void cursor::reset(fence f, reset_target target, op_callback done) {
    request r;
    r.kind = req_kind::reset;
    r.f = f;
    r.target = target;
    r.done = std::move(done);
    submit(std::move(r));
}

void cursor::clear_backlog(fence f, op_callback done) {
    request r;
    r.kind = req_kind::clear;
    r.f = f;
    r.done = std::move(done);
    submit(std::move(r));
}

void cursor::skip(fence f, std::uint64_t n, op_callback done) {
    request r;
    r.kind = req_kind::skip;
    r.f = f;
    r.n = n;
    r.done = std::move(done);
    submit(std::move(r));
}

void cursor::set_properties(fence f, property_map props, op_callback done) {
    request r;
    r.f = f;
    r.op = replace_properties_op{std::move(props)};
    r.done = std::move(done);
    submit(std::move(r));
}

void cursor::put_property(fence f, std::string key, std::string value, op_callback done) {
    request r;
    r.f = f;
    r.op = put_property_op{std::move(key), std::move(value)};
    r.done = std::move(done);
    submit(std::move(r));
}

void cursor::remove_property(fence f, std::string key, op_callback done) {
    request r;
    r.f = f;
    r.op = remove_property_op{std::move(key)};
    r.done = std::move(done);
    submit(std::move(r));
}

void cursor::activate(fence f, op_callback done) {
    request r;
    r.kind = req_kind::activate;
    r.f = f;
    r.done = std::move(done);
    submit(std::move(r));
}

void cursor::remove(fence f, op_callback done) {
    request r;
    r.kind = req_kind::remove;
    r.f = f;
    r.done = std::move(done);
    submit(std::move(r));
}

void cursor::flush(op_callback done) {
    request r;
    r.kind = req_kind::flush;
    r.done = std::move(done);
    submit(std::move(r));
}

void cursor::close(op_callback done) {
    request r;
    r.kind = req_kind::close;
    r.done = std::move(done);
    submit(std::move(r));
}

void cursor::record_redelivery(offset entry) {
    const std::lock_guard lock(mu_);
    if (closed_ || broken_ || root_.life == lifecycle::deleted || state_.is_acked(entry)) {
        return;
    }
    ++pending_redeliveries_[entry];
}

// ---------------------------------------------------------------------------------------------
// the commit pipeline (all with mu_ held)

void cursor::pump(std::vector<completion>& out) {
    if (holding_) {
        return;  // the callbacks of the last CAS are running; the next group is formed after them
    }
    while (!in_flight_ && !queue_.empty()) {
        if (queue_.front().alone()) {
            request r = std::move(queue_.front());
            queue_.pop_front();
            if (auto rej = pre_check(r)) {
                out.emplace_back([done = std::move(r.done), res = std::move(*rej)] { done(res); });
                continue;
            }
            start_fence_op(std::move(r), out);
        } else {
            if (linger()) {
                return;
            }
            start_group(out);
        }
    }
}

bool cursor::linger() {
    // A closed-loop client with W requests in flight re-issues them as their completions fire;
    // taking the queue at once would send a small group and leave the rest for the next CAS,
    // so groups would alternate small and large. Wait briefly for the queue to reach the last
    // group's size instead (like storage's journaled_store). Bounded; never for a lone requester.
    const std::size_t target = std::min(last_group_, options_.max_group);
    if (linger_expired_ || options_.max_commit_linger.count() <= 0 || target <= 1 ||
        queue_.size() >= target || closed_ || broken_) {
        return false;
    }
    const auto delay = std::min<std::chrono::steady_clock::duration>(options_.max_commit_linger,
                                                                     last_cas_latency_ / 2);
    if (delay.count() <= 0) {
        return false;
    }
    if (!linger_armed_) {
        linger_armed_ = true;
        const std::uint64_t token = ++linger_token_;
        // The timer keeps the handle alive until the group is sent (like an in-flight CAS).
        commit_timer::schedule(
            commit_timer::clock::now() + delay,
            [self = shared_from_this(), token] { self->on_linger_timer(token); });
    }
    return true;
}

void cursor::on_linger_timer(std::uint64_t token) {
    std::vector<completion> out;
    {
        const std::lock_guard lock(mu_);
        if (!linger_armed_ || token != linger_token_) {
            return;  // the group already started
        }
        linger_armed_ = false;
        linger_expired_ = true;
        pump(out);
    }
    run(out);
}

void cursor::complete_then_pump(std::unique_lock<std::mutex>& lock, std::vector<completion>& out) {
    holding_ = true;
    lock.unlock();
    run(out);
    lock.lock();
    holding_ = false;
    pump(out);
    lock.unlock();
    run(out);
}

bool cursor::start_group(std::vector<completion>& out) {
    auto c = std::make_shared<commit>();
    linger_armed_ = false;  // a pending timer finds nothing to do
    linger_expired_ = false;
    std::size_t taken = 0;
    std::size_t budget = state_.estimated_bytes();
    bool force = false;
    bool closing = false;
    // Batch sizes named in this group per entry (pre_check compares with the confirmed state
    // only; two acks of one entry in a group must agree too).
    std::map<offset, std::uint32_t> batch_sizes;
    while (!queue_.empty() && !queue_.front().alone() && !closing &&
           c->members.size() < options_.max_group) {
        request r = std::move(queue_.front());
        queue_.pop_front();
        ++taken;
        if (auto rej = pre_check(r)) {
            out.emplace_back([done = std::move(r.done), res = std::move(*rej)] { done(res); });
            continue;
        }
        if (!r.op) {  // flush or close
            force = true;
            closing = r.kind == req_kind::close;
            c->members.push_back(std::move(r));
            continue;
        }
        const state_op& op = *r.op;
        // Acks are monotonic: one that changes nothing now never will; confirm it at once.
        if (is_ack(op) && !state_.changes(op)) {
            out.emplace_back([done = std::move(r.done),
                              res = result_with(ack_status::already_acked)] { done(res); });
            continue;
        }
        std::size_t cost = cursor_state::op_cost(op);
        if (const auto* ar = std::get_if<ack_range_op>(&op)) {
            // Touching an existing range (or MDO) cannot add a range.
            if (ar->begin <= state_.mark_delete() || state_.ranges().contains(ar->begin - 1) ||
                state_.ranges().contains(ar->end)) {
                cost = 0;
            }
        }
        if (budget + cost > options_.max_state_bytes) {
            out.emplace_back([done = std::move(r.done), res = result_with(ack_status::state_full)] {
                done(res);
            });
            continue;
        }
        if (const auto* b = std::get_if<ack_batch_op>(&op)) {
            auto [it, fresh] = batch_sizes.emplace(b->entry, b->acked.size());
            if (!fresh && it->second != b->acked.size()) {
                out.emplace_back(
                    [done = std::move(r.done)] { done(nereus::error(errc::invalid_argument)); });
                continue;
            }
        }
        budget += cost;
        c->ops.push_back(op);
        c->members.push_back(std::move(r));
    }
    last_group_ = taken;
    // One range op per run of adjacent acks, one batch op per entry (op_merge.h).
    c->ops = merge_ops(state_, std::move(c->ops));
    if (!pending_redeliveries_.empty() && (!c->ops.empty() || force)) {
        for (const auto& [e, n] : pending_redeliveries_) {
            if (state_.is_acked(e)) {
                continue;
            }
            auto it = state_.redeliveries().find(e);
            const std::uint32_t durable = it == state_.redeliveries().end() ? 0 : it->second;
            c->ops.push_back(redelivery_op{e, durable + n});
        }
        c->staged_redeliveries = std::move(pending_redeliveries_);
        pending_redeliveries_.clear();
    }
    if (c->ops.empty()) {
        for (auto& m : c->members) {
            if (m.kind == req_kind::close) {
                closed_ = true;
            }
            out.emplace_back(
                [done = std::move(m.done), res = result_with(ack_status::ok)] { done(res); });
        }
        return false;
    }
    c->next_root = root_;
    c->next_root.commit_seq += 1;
    c->next_root.writer = meta::raw(env_.owner);
    if (!root_.spilled) {
        cursor_state next = state_;  // inline: the state is small
        for (const auto& op : c->ops) {
            next.apply(op);
        }
        start_full_commit(std::move(c), std::move(next), out);
        return true;
    }
    // The delta of CAS number commit_seq is d/<commit_seq>.
    format::delta_record d{root_.generation, c->next_root.commit_seq, c->ops};
    std::string delta = format::encode_delta(d);
    const std::uint64_t compact_at = std::max<std::uint64_t>(inline_limit(), root_.snapshot.size);
    const std::uint64_t live_after = c->next_root.commit_seq - root_.snapshot.seq;
    if (delta.size() > options_.max_delta_bytes || root_.delta_bytes + delta.size() >= compact_at ||
        live_after > options_.max_live_deltas) {
        // Compaction: a new snapshot of the whole state (amortized over the deltas it replaces).
        cursor_state next = state_;
        for (const auto& op : c->ops) {
            next.apply(op);
        }
        start_full_commit(std::move(c), std::move(next), out);
        return true;
    }
    c->next_root.delta_bytes += delta.size();
    c->root_bytes = format::encode_root(c->next_root);
    c->multi.emplace_back(check_owner(env_.owner));
    c->multi.emplace_back(
        meta::put{.key = keys_.root, .value = c->root_bytes, .expected = root_version_});
    c->multi.emplace_back(meta::put{.key = keys_.delta_key(c->next_root.commit_seq),
                                    .value = std::move(delta),
                                    .expected = meta::absent});
    append_gc_erases(*c, options_.gc_erases_per_commit);
    send(std::move(c));
    return true;
}

void cursor::start_fence_op(request r, std::vector<completion>& out) {
    auto c = std::make_shared<commit>();
    c->next_root = root_;
    c->next_root.commit_seq += 1;
    c->next_root.writer = meta::raw(env_.owner);
    const offset end = env_.stream->end();
    const offset start = env_.stream->start();
    const offset old_mdo = state_.mark_delete();
    cursor_state next;
    op_result& fr = c->fence_result;
    switch (r.kind) {
        case req_kind::reset: {
            offset mdo = 0;
            switch (r.target.where) {
                case reset_target::kind::to_offset:
                    mdo = r.target.at;
                    if (mdo < start) {
                        mdo = start;
                        fr.clamped = true;
                    }
                    break;
                case reset_target::kind::to_time: {
                    auto lk = env_.stream->find_by_time(r.target.publish_time);
                    mdo = lk.at;
                    fr.clamped = lk.clamped;
                    break;
                }
                case reset_target::kind::earliest:
                    mdo = start;
                    break;
                case reset_target::kind::latest:
                    mdo = end;
                    break;
            }
            next = cursor_state(mdo);
            for (const auto& [k, v] : state_.properties()) {
                next.put_property(k, v);
            }
            c->next_root.epoch += 1;
            if (mdo < old_mdo && root_.life == lifecycle::active) {
                c->next_root.life = lifecycle::protection_pending;
            }
            pending_redeliveries_.clear();
            fr.position = mdo;
            break;
        }
        case req_kind::clear: {
            const offset mdo = std::max(end, old_mdo);  // linearized here, just before the CAS
            next = cursor_state(mdo);
            for (const auto& [k, v] : state_.properties()) {
                next.put_property(k, v);
            }
            c->next_root.epoch += 1;
            pending_redeliveries_.clear();
            fr.position = mdo;
            break;
        }
        case req_kind::skip: {
            const offset mdo = state_.skip_target(r.n, end);
            next = state_;
            next.advance_to(mdo);
            c->next_root.epoch += 1;
            fr.position = next.mark_delete();
            break;
        }
        case req_kind::activate:
            if (root_.life == lifecycle::active) {
                out.emplace_back(
                    [done = std::move(r.done), res = result_with(ack_status::ok)] { done(res); });
                return;
            }
            c->next_root.life = lifecycle::active;
            fr.position = old_mdo;
            // A whole-state commit even when spilled: in spilled mode every CAS after the
            // snapshot writes exactly one delta (the deltas are snapshot.seq + 1 .. commit_seq),
            // so a root-only change is written as a fresh snapshot (activation is rare).
            next = state_;
            break;
        case req_kind::remove:
            c->next_root.life = lifecycle::deleted;
            pending_redeliveries_.clear();
            next = cursor_state();
            break;
        default:
            NEREUS_ASSERT(false, "not a fence op");
    }
    c->members.push_back(std::move(r));
    start_full_commit(std::move(c), std::move(next), out);
}

void cursor::start_full_commit(std::shared_ptr<commit> c,
                               cursor_state next,
                               std::vector<completion>& out) {
    auto& nr = c->next_root;
    nr.spilled = false;
    nr.snapshot = format::snapshot_ref();
    nr.delta_bytes = 0;
    nr.state = std::move(next);
    if (root_.spilled) {
        c->new_stale = {root_.snapshot.seq + 1, root_.commit_seq + 1};
        c->replaced_snapshot = snapshot_object(keys_, root_);
    }
    std::string bytes = format::encode_root(nr);
    if (bytes.size() <= inline_limit()) {
        c->root_bytes = std::move(bytes);
    } else {
        const std::string snap =
            format::encode_snapshot({keys_.root, nr.generation, nr.commit_seq}, nr.state);
        nr.spilled = true;
        nr.snapshot = format::snapshot_ref{.seq = nr.commit_seq,
                                           .writer = meta::raw(env_.owner),
                                           .nonce = 0,
                                           .size = snap.size(),
                                           .checksum = crc32c::value(snap.data(), snap.size())};
        // Written FIRST and durable before the root CAS can reference it. A name is unique per
        // (writer session, process-wide nonce); should one be taken anyway (a session id reused
        // by another process), the next nonce is tried: an existing object is never adopted.
        result<objects::put_outcome> put = nereus::error(errc::snapshot_mismatch);
        std::string name;
        for (int attempt = 0; attempt < 4; ++attempt) {
            nr.snapshot.nonce = g_snapshot_nonce.fetch_add(1, std::memory_order_relaxed);
            name = snapshot_object(keys_, nr);
            snapshot_guard::protect(name);
            put = env_.objects->put_if_absent(
                name, bytes_view(reinterpret_cast<const std::byte*>(snap.data()), snap.size()));
            if (put && *put == objects::put_outcome::created) {
                break;
            }
            snapshot_guard::release(name);
            NEREUS_LOG(cursor_log(), err, "cursor {}: snapshot {} put failed: {}", keys_.root, name,
                       put ? "name taken" : put.error().message());
            if (!put) {
                break;
            }
        }
        if (!put || *put != objects::put_outcome::created) {
            c->next_state = std::move(nr.state);
            fail_commit(c, put ? make_error_code(errc::snapshot_mismatch) : put.error(), out);
            return;
        }
        c->protected_snapshot = name;
        c->root_bytes = format::encode_root(nr);  // nr.spilled: the state is not encoded
    }
    c->next_state = std::move(nr.state);
    nr.state = cursor_state();
    c->multi.emplace_back(check_owner(env_.owner));
    c->multi.emplace_back(
        meta::put{.key = keys_.root, .value = c->root_bytes, .expected = root_version_});
    const bool deleting = nr.life == lifecycle::deleted;
    append_gc_erases(*c, deleting ? meta::max_multi_ops - 8 : options_.gc_erases_per_commit);
    send(std::move(c));
}

void cursor::append_gc_erases(commit& c, std::size_t limit) {
    // Stale deltas first (lowest seqs first), then (for a delete) the ones this commit makes
    // stale.
    auto take = [&](std::uint64_t begin, std::uint64_t end) {
        for (auto seq = begin; seq < end; ++seq) {
            if (c.erasing.size() >= limit || c.multi.size() + 1 >= meta::max_multi_ops) {
                return false;
            }
            c.multi.emplace_back(
                meta::erase{.key = keys_.delta_key(seq), .expected = meta::any_version});
            c.erasing.push_back(seq);
        }
        return true;
    };
    for (const auto& r : stale_deltas_) {
        if (!take(r.begin, r.end)) {
            return;
        }
    }
    if (c.next_root.life == lifecycle::deleted) {
        take(c.new_stale.begin, c.new_stale.end);
    }
}

void cursor::send(std::shared_ptr<commit> c) {
    in_flight_ = true;
    ++cas_sent_;
    sent_at_ = std::chrono::steady_clock::now();
    auto ops = c->multi;
    env_.meta->multi(std::move(ops), [self = shared_from_this(), c](result<meta::multi_result> r) {
        self->on_multi(c, std::move(r));
    });
}

void cursor::on_multi(const std::shared_ptr<commit>& c, result<meta::multi_result> r) {
    std::vector<completion> out;
    {
        std::unique_lock lock(mu_);
        last_cas_latency_ = std::chrono::steady_clock::now() - sent_at_;
        if (!r) {
            if (r.error() == meta::errc::unknown_outcome) {
                resolve_unknown(c);
                return;
            }
            fail_commit(c, r.error(), out);
            if (r.error() == meta::errc::closed || r.error() == meta::errc::store_failed) {
                break_handle(r.error(), out);
            }
        } else if (r->applied) {
            on_applied(c, r->versions.at(1), out);
        } else if (r->failed_op == 0) {
            NEREUS_LOG(cursor_log(), warn, "cursor {}: owner session {} fenced; handle stops",
                       keys_.root, meta::raw(env_.owner));
            fail_commit(c, make_error_code(errc::owner_fenced), out);
            break_handle(make_error_code(errc::owner_fenced), out);
        } else {
            on_lost_race(c);
            return;
        }
        complete_then_pump(lock, out);
    }
}

void cursor::resolve_unknown(std::shared_ptr<commit> c) {
    // Never guess: re-read the root. Our exact bytes (unique by commit_seq and writer) mean the
    // CAS applied; the version we expected means it did not (send it again); else we lost a race.
    env_.meta->get(
        keys_.root, [self = shared_from_this(), c](result<std::optional<meta::record>> g) {
            std::vector<completion> out;
            {
                std::unique_lock lock(self->mu_);
                if (!g) {
                    self->fail_commit(c, g.error(), out);
                    self->break_handle(g.error(), out);
                } else if (*g && (*g)->value == c->root_bytes) {
                    self->on_applied(c, (*g)->ver, out);
                } else if (*g && (*g)->ver == self->root_version_) {
                    if (++c->unknown_retries > self->options_.max_unknown_retries) {
                        self->fail_commit(c, make_error_code(meta::errc::unknown_outcome), out);
                    } else {
                        self->send(c);
                        return;
                    }
                } else {
                    self->on_lost_race(c);
                    return;
                }
                self->complete_then_pump(lock, out);
            }
        });
}

void cursor::on_applied(const std::shared_ptr<commit>& c,
                        meta::version v,
                        std::vector<completion>& out) {
    root_version_ = v;
    if (c->next_state) {
        state_ = std::move(*c->next_state);
        c->next_state.reset();
    } else {
        for (const auto& op : c->ops) {
            state_.apply(op);
        }
    }
    root_ = std::move(c->next_root);
    root_.state = cursor_state();
    if (c->protected_snapshot) {
        snapshot_guard::release(*c->protected_snapshot);
    }
    if (c->replaced_snapshot && !c->replaced_snapshot->empty() &&
        !(root_.spilled && snapshot_object(keys_, root_) == *c->replaced_snapshot)) {
        // No root references it any more: remove it now (else the next open's GC does).
        if (auto rm = env_.objects->remove(*c->replaced_snapshot); !rm) {
            NEREUS_LOG(cursor_log(), warn, "cursor {}: removing old snapshot {}: {}", keys_.root,
                       *c->replaced_snapshot, rm.error().message());
        }
    }
    add_seqs(stale_deltas_, c->new_stale.begin, c->new_stale.end);
    for (auto s : c->erasing) {
        remove_seq(stale_deltas_, s);
    }
    in_flight_ = false;
    for (auto& m : c->members) {
        op_result res = result_with(ack_status::ok);
        if (m.alone()) {
            res.position = c->fence_result.position;
            res.clamped = c->fence_result.clamped;
        }
        if (m.kind == req_kind::close) {
            closed_ = true;
        }
        out.emplace_back([done = std::move(m.done), res] { done(res); });
    }
    c->members.clear();
}

void cursor::on_lost_race(std::shared_ptr<commit> c) {
    // Another writer changed the root: reload the whole state, then requeue the requests; the
    // pre-check then rebases those whose generation and epoch still match and completes the
    // others with the fence's status.
    env_.meta->get(
        keys_.root, [self = shared_from_this(), c](result<std::optional<meta::record>> g) {
            auto finish = [self, c](result<loaded> l) {
                std::vector<completion> out;
                {
                    const std::lock_guard lock(self->mu_);
                    if (!l) {
                        self->fail_commit(c, l.error(), out);
                        self->break_handle(l.error(), out);
                    } else {
                        if (c->protected_snapshot) {
                            snapshot_guard::release(*c->protected_snapshot);
                            (void)self->env_.objects->remove(*c->protected_snapshot);
                            c->protected_snapshot.reset();
                        }
                        for (const auto& [e, n] : c->staged_redeliveries) {
                            self->pending_redeliveries_[e] += n;
                        }
                        self->install(std::move(*l));
                        self->in_flight_ = false;
                        for (auto it = c->members.rbegin(); it != c->members.rend(); ++it) {
                            self->queue_.push_front(std::move(*it));
                        }
                        c->members.clear();
                    }
                    self->pump(out);
                }
                run(out);
            };
            if (!g) {
                finish(nereus::error(g.error()));
                return;
            }
            if (!*g) {
                finish(nereus::error(errc::cursor_not_found));
                return;
            }
            load(self->env_, self->keys_, std::move((*g)->value), (*g)->ver, finish);
        });
}

void cursor::fail_commit(const std::shared_ptr<commit>& c,
                         std::error_code ec,
                         std::vector<completion>& out) {
    if (c->protected_snapshot) {
        // The CAS failed for certain: the snapshot is an orphan for the GC.
        snapshot_guard::release(*c->protected_snapshot);
        c->protected_snapshot.reset();
    }
    for (const auto& [e, n] : c->staged_redeliveries) {
        pending_redeliveries_[e] += n;
    }
    c->staged_redeliveries.clear();
    in_flight_ = false;
    for (auto& m : c->members) {
        out.emplace_back([done = std::move(m.done), ec] { done(nereus::error(ec)); });
    }
    c->members.clear();
}

void cursor::break_handle(std::error_code ec, std::vector<completion>& out) {
    if (!broken_) {
        broken_ = ec;
    }
    while (!queue_.empty()) {
        request r = std::move(queue_.front());
        queue_.pop_front();
        out.emplace_back([done = std::move(r.done), ec] { done(nereus::error(ec)); });
    }
}

// ---------------------------------------------------------------------------------------------
// reads

fence cursor::current_fence() const {
    const std::lock_guard lock(mu_);
    return {root_.generation, root_.epoch};
}

lifecycle cursor::life() const {
    const std::lock_guard lock(mu_);
    return root_.life;
}

offset cursor::mark_delete() const {
    const std::lock_guard lock(mu_);
    return state_.mark_delete();
}

bool cursor::is_acked(offset entry) const {
    const std::lock_guard lock(mu_);
    return state_.is_acked(entry);
}

std::optional<batch_bits> cursor::remaining(offset entry) const {
    const std::lock_guard lock(mu_);
    if (const auto* b = state_.remaining(entry)) {
        return *b;
    }
    return std::nullopt;
}

offset cursor::next_unacked(offset from) const {
    const std::lock_guard lock(mu_);
    return state_.next_unacked(from);
}

std::uint64_t cursor::backlog() const {
    const offset end = env_.stream->end();
    const std::lock_guard lock(mu_);
    return state_.backlog(end);
}

std::uint32_t cursor::redelivery_count(offset entry) const {
    const std::lock_guard lock(mu_);
    std::uint32_t n = 0;
    if (auto it = state_.redeliveries().find(entry); it != state_.redeliveries().end()) {
        n += it->second;
    }
    if (!state_.is_acked(entry)) {
        if (auto it = pending_redeliveries_.find(entry); it != pending_redeliveries_.end()) {
            n += it->second;
        }
    }
    return n;
}

cursor_snapshot cursor::snapshot() const {
    const std::lock_guard lock(mu_);
    cursor_snapshot s;
    s.generation = root_.generation;
    s.epoch = root_.epoch;
    s.life = root_.life;
    s.mark_delete = state_.mark_delete();
    s.ranges = state_.ranges().to_vector();
    s.batches = state_.batches();
    s.properties = state_.properties();
    s.redeliveries = state_.redeliveries();
    for (const auto& [e, n] : pending_redeliveries_) {
        if (!state_.is_acked(e)) {
            s.redeliveries[e] += n;
        }
    }
    s.spilled = root_.spilled;
    s.root_version = root_version_;
    s.cas_sent = cas_sent_;
    return s;
}

std::size_t cursor::resident_bytes() const {
    const std::lock_guard lock(mu_);
    std::size_t b = state_.ranges().memory_bytes();
    for (const auto& [e, bits] : state_.batches()) {
        b += 64 + bits.words().size() * 8;
    }
    b += state_.redeliveries().size() * 48;
    return b;
}

}  // namespace nereus::cursor
