#include "nereus/meta/detail/local_store.h"

#include "nereus/base/assert.h"
#include "nereus/base/thread_name.h"
#include "nereus/meta/errc.h"
#include "nereus/meta/logger.h"

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <variant>

namespace nereus::meta::detail {
namespace {

using clock = std::chrono::steady_clock;
constexpr auto min_ttl = std::chrono::milliseconds(1);
constexpr auto max_ttl = std::chrono::milliseconds(std::chrono::hours(24));

struct multi_req {
    std::vector<op> ops;
    store::callback<multi_result> done;
};
struct get_req {
    std::string key;
    store::callback<std::optional<record>> done;
};
struct list_req {
    std::string prefix;
    store::callback<std::vector<keyed_record>> done;
};
struct open_req {
    std::chrono::milliseconds ttl;
    store::callback<session_id> done;
};
struct keep_alive_req {
    session_id session;
    store::callback<void> done;
};
struct close_req {
    session_id session;
    store::callback<void> done;
};
// Internal: the session's deadline passed.
struct expire_req {
    session_id session;
};

using request =
    std::variant<multi_req, get_req, list_req, open_req, keep_alive_req, close_req, expire_req>;

struct watch_entry {
    std::string prefix;
    watch_callback callback;
    // Guarded by watch_registry::callback_mu.
    bool active = true;
};

struct watch_registry {
    // Held by the callback thread while it runs any callback. cancel() takes it too, so once
    // cancel() returns that watch's callback never runs again. Recursive because cancel() may
    // run inside a callback.
    std::recursive_mutex callback_mu;
    // Guards the fields below.
    std::mutex mu;
    std::map<std::uint64_t, std::shared_ptr<watch_entry>> entries;
    std::uint64_t next_id = 1;
    // Set once all watches have ended (store closed or failed).
    std::optional<std::error_code> ended;
};

struct session_state {
    std::chrono::milliseconds ttl;
    clock::time_point deadline;
};

// A decided request, waiting for its group's commit.
struct decision {
    // Runs the completion: with the decided result when called with {}, else with that error.
    std::function<void(std::error_code)> complete;
    // Staged durable changes or session state (a failed commit makes its outcome unknown).
    bool wrote = false;
    // Was decided against state that includes changes of this group not yet committed.
    bool saw_pending = false;
    std::vector<watch_event> events;
};

template <class T>
std::function<void(std::error_code)> completion(store::callback<T> done, result<T> r) {
    return [done = std::move(done), r = std::move(r)](std::error_code override) mutable {
        if (override) {
            done(nereus::error(override));
        } else {
            done(std::move(r));
        }
    };
}

std::error_code check_key(const std::string& key) {
    if (key.empty() || key.size() > max_key_size) {
        return errc::invalid_argument;
    }
    return {};
}

std::error_code check_ops(const std::vector<op>& ops) {
    if (ops.empty() || ops.size() > max_multi_ops) {
        return errc::invalid_argument;
    }
    for (const op& o : ops) {
        if (const auto* c = std::get_if<check>(&o)) {
            if (auto ec = check_key(c->key)) {
                return ec;
            }
        } else if (const auto* p = std::get_if<put>(&o)) {
            if (auto ec = check_key(p->key)) {
                return ec;
            }
            if (p->value.size() > max_value_size) {
                return errc::invalid_argument;
            }
        } else if (const auto* e = std::get_if<erase>(&o)) {
            if (auto ec = check_key(e->key)) {
                return ec;
            }
        }
    }
    return {};
}

// The state one group is decided against: the committed state (backend + committed sessions)
// plus the effects of the group's earlier requests. Lives on the committer thread only.
class group {
public:
    group(backend& be,
          version revision,
          std::uint64_t next_session,
          std::unordered_map<session_id, session_state>& sessions)
        : be_(be),
          revision_(revision),
          next_session_(next_session),
          start_next_session_(next_session),
          sessions_(sessions) {}

    // The key's state as of now in this group.
    result<const std::optional<record>*> read(const std::string& key) {
        if (auto it = slots_.find(key); it != slots_.end()) {
            return &it->second.current;
        }
        auto r = be_.read(key);
        if (!r) {
            return nereus::error(r.error());
        }
        auto [it, inserted] = slots_.emplace(key, slot{.base = *r, .current = *r});
        return &it->second.current;
    }

    // Requires: read(key) succeeded earlier in this group.
    void write(const std::string& key, std::optional<record> after) {
        auto it = slots_.find(key);
        NEREUS_ASSERT(it != slots_.end(), "meta group write without read key={}", key);
        it->second.current = std::move(after);
        it->second.dirty = true;
        dirty_ = true;
    }

    // Deletes an ephemeral key of `owner` without decoding it (it may be corrupt: its owner is
    // gone either way).
    void erase_owned(const std::string& key, session_id owner) {
        auto it = slots_.find(key);
        if (it == slots_.end()) {
            it = slots_.emplace(key, slot{.base = record{.owner = owner}}).first;
        }
        it->second.current.reset();
        it->second.dirty = true;
        dirty_ = true;
    }

    result<std::vector<keyed_record>> scan(const std::string& prefix) {
        auto base = be_.scan(prefix);
        if (!base) {
            return nereus::error(base.error());
        }
        if (!dirty_slots()) {
            return base;
        }
        std::map<std::string, record> merged;
        for (auto& kr : *base) {
            merged.emplace(std::move(kr.key), std::move(kr.rec));
        }
        for (const auto& [key, s] : slots_) {
            if (!s.dirty || !key.starts_with(prefix)) {
                continue;
            }
            if (s.current) {
                merged[key] = *s.current;
            } else {
                merged.erase(key);
            }
        }
        std::vector<keyed_record> out;
        out.reserve(merged.size());
        for (auto& [key, rec] : merged) {
            out.push_back(keyed_record{.key = key, .rec = std::move(rec)});
        }
        return out;
    }

    result<std::vector<std::string>> ephemeral_keys(session_id owner) {
        auto base = be_.ephemeral_keys(owner);
        if (!base) {
            return nereus::error(base.error());
        }
        std::set<std::string> keys(base->begin(), base->end());
        for (const auto& [key, s] : slots_) {
            if (!s.dirty) {
                continue;
            }
            if (s.current && s.current->owner == owner) {
                keys.insert(key);
            } else {
                keys.erase(key);
            }
        }
        return std::vector<std::string>(keys.begin(), keys.end());
    }

    version revision() const { return revision_; }
    void reset_revision(version v) { revision_ = v; }
    version next_revision() { return ++revision_; }

    bool alive(session_id s) const {
        if (s == no_session || closed_.contains(s)) {
            return false;
        }
        return opened_.contains(s) || sessions_.contains(s);
    }
    session_id open(std::chrono::milliseconds ttl, clock::time_point now) {
        const session_id id{next_session_++};
        opened_.emplace(id, session_state{.ttl = ttl, .deadline = now + ttl});
        return id;
    }
    // Requires: alive(s).
    void touch(session_id s, clock::time_point now) {
        auto it = opened_.find(s);
        if (it == opened_.end()) {
            it = sessions_.find(s);
        }
        it->second.deadline = now + it->second.ttl;
    }
    void end(session_id s) { closed_.insert(s); }

    bool dirty_slots() const { return dirty_; }
    // True when the group has changes not yet committed (a later decision may depend on them).
    bool pending() const { return dirty_ || !opened_.empty() || !closed_.empty(); }

    // The durable part of the group; nullopt when there is nothing to write.
    std::optional<commit_batch> batch(version committed_revision) const {
        commit_batch b;
        for (const auto& [key, s] : slots_) {
            if (!s.dirty || (!s.base && !s.current)) {
                continue;
            }
            b.changes.push_back(change{
                .key = key, .old_owner = s.base ? s.base->owner : no_session, .after = s.current});
        }
        if (b.changes.empty() && next_session_ == start_next_session_ &&
            revision_ == committed_revision) {
            return std::nullopt;
        }
        b.revision = revision_;
        b.next_session = next_session_;
        return b;
    }

    std::uint64_t next_session() const { return next_session_; }

    // Applies the group's session changes to the committed session table.
    void apply_sessions() {
        for (auto& [id, st] : opened_) {
            sessions_.emplace(id, st);
        }
        for (session_id id : closed_) {
            sessions_.erase(id);
        }
    }

private:
    struct slot {
        std::optional<record> base;  // committed state (owner is what the backend indexed)
        std::optional<record> current;
        bool dirty = false;
    };

    backend& be_;
    std::map<std::string, slot> slots_;
    bool dirty_ = false;
    version revision_;
    std::uint64_t next_session_;
    const std::uint64_t start_next_session_;
    std::unordered_map<session_id, session_state>& sessions_;
    std::unordered_map<session_id, session_state> opened_;
    std::unordered_set<session_id> closed_;
};

void deliver_events(watch_registry& reg, const std::vector<watch_event>& events) {
    std::vector<std::shared_ptr<watch_entry>> snapshot;
    {
        const std::lock_guard lock(reg.mu);
        snapshot.reserve(reg.entries.size());
        for (const auto& [id, entry] : reg.entries) {
            snapshot.push_back(entry);
        }
    }
    for (const watch_event& ev : events) {
        const result<watch_event> delivered(ev);
        for (const auto& w : snapshot) {
            if (w->active && ev.key.starts_with(w->prefix)) {
                w->callback(delivered);
            }
        }
    }
}

// Runs on the callback thread: ends every watch with `ec`.
void end_watches(watch_registry& reg, std::error_code ec) {
    std::map<std::uint64_t, std::shared_ptr<watch_entry>> entries;
    {
        const std::lock_guard lock(reg.mu);
        if (reg.ended) {
            return;
        }
        reg.ended = ec;
        entries.swap(reg.entries);
    }
    for (auto& [id, w] : entries) {
        if (w->active) {
            w->active = false;
            w->callback(nereus::error(ec));
        }
    }
}

}  // namespace

struct local_store::impl {
    impl(std::unique_ptr<backend> b, local_store_options o)
        : be(std::move(b)),
          opts(o),
          revision(be->recovered_revision()),
          next_session(be->recovered_next_session()) {
        if (opts.max_group == 0) {
            opts.max_group = 1;
        }
    }

    void submit(request r);
    void post(std::function<void()> task);
    void committer_loop();
    void delivery_loop();
    void run_group(std::vector<request>& reqs);
    decision decide(group& g, request& r, clock::time_point now);
    decision decide_multi(group& g, multi_req& r);
    // Deletes the session's ephemeral keys in `g` and ends it.
    result<std::vector<watch_event>> end_session(group& g, session_id s);
    std::optional<clock::time_point> next_deadline() const;

    std::unique_ptr<backend> be;
    local_store_options opts;
    std::shared_ptr<watch_registry> watches = std::make_shared<watch_registry>();

    // Request queue, guarded by mu.
    std::mutex mu;
    std::condition_variable cv;
    std::deque<request> queue;
    bool stopping = false;
    bool committer_done = false;

    // Committer-thread state.
    version revision;
    std::uint64_t next_session;
    std::unordered_map<session_id, session_state> sessions;
    std::error_code failed;

    // Callback queue, guarded by dmu.
    std::mutex dmu;
    std::condition_variable dcv;
    std::deque<std::function<void()>> dqueue;
    bool dstop = false;

    std::thread committer;
    std::thread delivery;
};

namespace {

// The completion of `r` with error `ec`, or an empty function for internal requests.
std::function<void()> failed_completion(request& r, std::error_code ec) {
    return std::visit(
        [ec](auto& q) -> std::function<void()> {
            if constexpr (requires { q.done; }) {
                return [done = std::move(q.done), ec]() {
                    done(nereus::error(ec));
                };
            } else {
                return {};
            }
        },
        r);
}

}  // namespace

void local_store::impl::submit(request r) {
    {
        const std::lock_guard lock(mu);
        if (!committer_done) {
            queue.push_back(std::move(r));
            cv.notify_one();
            return;
        }
    }
    if (auto c = failed_completion(r, errc::closed)) {
        post(std::move(c));
    }
}

void local_store::impl::post(std::function<void()> task) {
    const std::lock_guard lock(dmu);
    dqueue.push_back(std::move(task));
    dcv.notify_one();
}

std::optional<clock::time_point> local_store::impl::next_deadline() const {
    std::optional<clock::time_point> next;
    for (const auto& [id, st] : sessions) {
        if (!next || st.deadline < *next) {
            next = st.deadline;
        }
    }
    return next;
}

void local_store::impl::committer_loop() {
    std::vector<request> reqs;
    for (;;) {
        {
            std::unique_lock lock(mu);
            for (;;) {
                if (!queue.empty()) {
                    break;
                }
                if (stopping) {
                    committer_done = true;
                    return;
                }
                const auto deadline = failed ? std::nullopt : next_deadline();
                if (!deadline) {
                    cv.wait(lock);
                } else if (*deadline <= clock::now() ||
                           cv.wait_until(lock, *deadline) == std::cv_status::timeout) {
                    break;  // a session is due to expire
                }
            }
            while (!queue.empty() && reqs.size() < opts.max_group) {
                reqs.push_back(std::move(queue.front()));
                queue.pop_front();
            }
        }
        run_group(reqs);
        reqs.clear();
    }
}

void local_store::impl::delivery_loop() {
    for (;;) {
        std::function<void()> task;
        {
            std::unique_lock lock(dmu);
            dcv.wait(lock, [&] { return !dqueue.empty() || dstop; });
            if (dqueue.empty()) {
                return;
            }
            task = std::move(dqueue.front());
            dqueue.pop_front();
        }
        const std::lock_guard cb_lock(watches->callback_mu);
        task();
    }
}

void local_store::impl::run_group(std::vector<request>& reqs) {
    if (failed) {
        for (request& r : reqs) {
            if (auto c = failed_completion(r, errc::store_failed)) {
                post(std::move(c));
            }
        }
        return;
    }
    const auto now = clock::now();
    std::vector<request> work;
    work.reserve(reqs.size() + 1);
    for (const auto& [id, st] : sessions) {
        if (st.deadline <= now) {
            work.emplace_back(expire_req{id});
        }
    }
    for (request& r : reqs) {
        work.push_back(std::move(r));
    }

    group g(*be, revision, next_session, sessions);
    std::vector<decision> decisions;
    decisions.reserve(work.size());
    for (request& r : work) {
        decisions.push_back(decide(g, r, now));
    }

    commit_status status{.applied = true};
    if (auto batch = g.batch(revision)) {
        status = be->commit(*batch);
        NEREUS_ASSERT(status.applied || status.ec,
                      "meta backend commit neither applied nor failed");
    }
    if (status.applied) {
        revision = g.revision();
        next_session = g.next_session();
        g.apply_sessions();
    }
    if (status.ec) {
        const bool fatal = be->commit_failure_is_fatal();
        NEREUS_LOG(meta_log(), err, "meta commit failed requests={} applied={} fatal={}: {}",
                   decisions.size(), status.applied, fatal, status.ec.message());
        if (fatal) {
            failed = status.ec;
        }
    }

    // One task per group: events and completions run in commit order, a write's events
    // before its completion.
    const bool fatal = status.ec && be->commit_failure_is_fatal();
    post([reg = watches, ds = std::move(decisions), status, fatal]() mutable {
        for (decision& d : ds) {
            if (status.applied && !d.events.empty()) {
                deliver_events(*reg, d.events);
            }
            if (!d.complete) {
                continue;
            }
            std::error_code override;
            if (status.ec) {
                if (d.wrote) {
                    override = status.ec;
                } else if (d.saw_pending && !status.applied) {
                    override = fatal ? make_error_code(errc::store_failed)
                                     : make_error_code(errc::unavailable);
                }
            }
            d.complete(override);
        }
        if (fatal) {
            end_watches(*reg, errc::store_failed);
        }
    });
}

decision local_store::impl::decide(group& g, request& r, clock::time_point now) {
    if (auto* q = std::get_if<multi_req>(&r)) {
        return decide_multi(g, *q);
    }
    decision d;
    d.saw_pending = g.pending();
    if (auto* q = std::get_if<get_req>(&r)) {
        if (auto ec = check_key(q->key)) {
            d.saw_pending = false;
            d.complete = completion<std::optional<record>>(std::move(q->done), nereus::error(ec));
            return d;
        }
        auto cur = g.read(q->key);
        d.complete = completion<std::optional<record>>(
            std::move(q->done), cur ? result<std::optional<record>>(**cur)
                                    : result<std::optional<record>>(nereus::error(cur.error())));
    } else if (auto* q = std::get_if<list_req>(&r)) {
        if (q->prefix.size() > max_key_size) {
            d.saw_pending = false;
            d.complete = completion<std::vector<keyed_record>>(
                std::move(q->done), nereus::error(errc::invalid_argument));
            return d;
        }
        d.complete = completion<std::vector<keyed_record>>(std::move(q->done), g.scan(q->prefix));
    } else if (auto* q = std::get_if<open_req>(&r)) {
        if (q->ttl < min_ttl || q->ttl > max_ttl) {
            d.saw_pending = false;
            d.complete =
                completion<session_id>(std::move(q->done), nereus::error(errc::invalid_argument));
            return d;
        }
        d.wrote = true;  // the session counter is durable: ids are never reused
        d.complete = completion<session_id>(std::move(q->done), g.open(q->ttl, now));
    } else if (auto* q = std::get_if<keep_alive_req>(&r)) {
        if (!g.alive(q->session)) {
            d.complete = completion<void>(std::move(q->done), nereus::error(errc::session_expired));
            return d;
        }
        g.touch(q->session, now);
        d.complete = completion<void>(std::move(q->done), {});
    } else if (auto* q = std::get_if<close_req>(&r)) {
        if (!g.alive(q->session)) {
            d.complete = completion<void>(std::move(q->done), nereus::error(errc::session_expired));
            return d;
        }
        auto events = end_session(g, q->session);
        if (!events) {
            NEREUS_LOG(meta_log(), err,
                       "meta session closed session={} but its ephemeral keys "
                       "could not be listed: {}",
                       raw(q->session), events.error().message());
            d.wrote = true;
            d.complete = completion<void>(std::move(q->done), nereus::error(events.error()));
            return d;
        }
        d.wrote = true;
        d.events = std::move(*events);
        d.complete = completion<void>(std::move(q->done), {});
        NEREUS_LOG(meta_log(), debug, "meta session closed session={} ephemeral_keys={}",
                   raw(q->session), d.events.size());
    } else if (auto* q = std::get_if<expire_req>(&r)) {
        auto events = end_session(g, q->session);
        if (!events) {
            // The session is dead either way; its ephemeral keys stay until the next open
            // purges them (they belong to no live session, and check_session fails).
            NEREUS_LOG(meta_log(), err,
                       "meta session expired session={} but its ephemeral keys "
                       "could not be listed: {}",
                       raw(q->session), events.error().message());
            d.wrote = true;
            return d;
        }
        d.wrote = true;
        d.events = std::move(*events);
        NEREUS_LOG(meta_log(), info, "meta session expired session={} ephemeral_keys={}",
                   raw(q->session), d.events.size());
    }
    return d;
}

result<std::vector<watch_event>> local_store::impl::end_session(group& g, session_id s) {
    auto keys = g.ephemeral_keys(s);
    // The session ends even when its keys cannot be listed, so it can never be revived.
    g.end(s);
    if (!keys) {
        return nereus::error(keys.error());
    }
    std::vector<watch_event> events;
    events.reserve(keys->size());
    for (const std::string& key : *keys) {
        g.erase_owned(key, s);
        events.push_back(
            watch_event{.key = key, .kind = event_kind::erase, .ver = g.next_revision()});
    }
    return events;
}

decision local_store::impl::decide_multi(group& g, multi_req& r) {
    decision d;
    if (auto ec = check_ops(r.ops)) {
        d.complete = completion<multi_result>(std::move(r.done), nereus::error(ec));
        return d;
    }
    d.saw_pending = g.pending();
    const version start_revision = g.revision();
    // This multi's own writes, on top of the group.
    std::map<std::string, std::optional<record>> local;
    auto view = [&](const std::string& key) -> result<const std::optional<record>*> {
        if (auto it = local.find(key); it != local.end()) {
            return &it->second;
        }
        return g.read(key);
    };
    auto fail = [&](std::error_code ec) {
        g.reset_revision(start_revision);
        d.events.clear();
        d.complete = completion<multi_result>(std::move(r.done), nereus::error(ec));
        return std::move(d);
    };
    multi_result res;
    res.versions.assign(r.ops.size(), absent);
    auto conflict = [&](std::size_t i, version found) {
        g.reset_revision(start_revision);
        d.events.clear();
        std::fill(res.versions.begin(), res.versions.end(), absent);
        res.failed_op = i;
        res.versions[i] = found;
        d.complete = completion<multi_result>(std::move(r.done), std::move(res));
        return std::move(d);
    };
    auto matches = [](version expected, version found) {
        return expected == any_version ? found != absent : found == expected;
    };

    for (std::size_t i = 0; i < r.ops.size(); ++i) {
        op& o = r.ops[i];
        if (auto* c = std::get_if<check>(&o)) {
            auto cur = view(c->key);
            if (!cur) {
                return fail(cur.error());
            }
            const version found = **cur ? (**cur)->ver : absent;
            if (!matches(c->expected, found)) {
                return conflict(i, found);
            }
            res.versions[i] = found;
        } else if (auto* p = std::get_if<put>(&o)) {
            auto cur = view(p->key);
            if (!cur) {
                return fail(cur.error());
            }
            const version found = **cur ? (**cur)->ver : absent;
            if (p->expected != any_version && found != p->expected) {
                return conflict(i, found);
            }
            if (p->owner != no_session && !g.alive(p->owner)) {
                return fail(errc::session_expired);
            }
            const version v = g.next_revision();
            const session_id owner = **cur ? (**cur)->owner : p->owner;
            local[p->key] = record{.value = std::move(p->value), .ver = v, .owner = owner};
            res.versions[i] = v;
            d.events.push_back(watch_event{.key = p->key, .kind = event_kind::put, .ver = v});
        } else if (auto* e = std::get_if<erase>(&o)) {
            auto cur = view(e->key);
            if (!cur) {
                return fail(cur.error());
            }
            const version found = **cur ? (**cur)->ver : absent;
            if (e->expected != any_version && found != e->expected) {
                return conflict(i, found);
            }
            if (found != absent) {
                local[e->key] = std::nullopt;
                d.events.push_back(watch_event{
                    .key = e->key, .kind = event_kind::erase, .ver = g.next_revision()});
            }
        } else if (auto* s = std::get_if<check_session>(&o)) {
            if (!g.alive(s->session)) {
                return conflict(i, absent);
            }
        }
    }

    // Every key in `local` was read through the group first, so the group has its slot.
    for (auto& [key, after] : local) {
        g.write(key, std::move(after));
    }
    d.wrote = !local.empty();
    res.applied = true;
    d.complete = completion<multi_result>(std::move(r.done), std::move(res));
    return d;
}

local_store::local_store(std::unique_ptr<backend> be, local_store_options options)
    : impl_(std::make_unique<impl>(std::move(be), options)) {
    impl_->delivery = std::thread([this] {
        set_thread_name("meta-deliver");
        impl_->delivery_loop();
    });
    impl_->committer = std::thread([this] {
        set_thread_name("meta-commit");
        impl_->committer_loop();
    });
}

local_store::~local_store() {
    NEREUS_ASSERT(!is_callback_thread(), "meta store destroyed from its own callback thread");
    {
        const std::lock_guard lock(impl_->mu);
        impl_->stopping = true;
        impl_->cv.notify_all();
    }
    impl_->committer.join();
    impl_->post([reg = impl_->watches] { end_watches(*reg, errc::closed); });
    {
        const std::lock_guard lock(impl_->dmu);
        impl_->dstop = true;
        impl_->dcv.notify_all();
    }
    impl_->delivery.join();
}

void local_store::multi(std::vector<op> ops, callback<multi_result> done) {
    impl_->submit(multi_req{.ops = std::move(ops), .done = std::move(done)});
}

void local_store::get(std::string key, callback<std::optional<record>> done) {
    impl_->submit(get_req{.key = std::move(key), .done = std::move(done)});
}

void local_store::list(std::string prefix, callback<std::vector<keyed_record>> done) {
    impl_->submit(list_req{.prefix = std::move(prefix), .done = std::move(done)});
}

watch_handle local_store::watch(std::string prefix, watch_callback callback) {
    auto reg = impl_->watches;
    std::uint64_t id = 0;
    {
        const std::lock_guard lock(reg->mu);
        if (reg->ended) {
            impl_->post([cb = std::move(callback), ec = *reg->ended] { cb(nereus::error(ec)); });
            return {};
        }
        id = reg->next_id++;
        reg->entries.emplace(
            id, std::make_shared<watch_entry>(
                    watch_entry{.prefix = std::move(prefix), .callback = std::move(callback)}));
    }
    return watch_handle([weak = std::weak_ptr<watch_registry>(reg), id] {
        auto r = weak.lock();
        if (!r) {
            return;
        }
        const std::lock_guard cb_lock(r->callback_mu);
        const std::lock_guard lock(r->mu);
        if (auto it = r->entries.find(id); it != r->entries.end()) {
            it->second->active = false;
            r->entries.erase(it);
        }
    });
}

void local_store::open_session(std::chrono::milliseconds ttl, callback<session_id> done) {
    impl_->submit(open_req{.ttl = ttl, .done = std::move(done)});
}

void local_store::keep_alive(session_id session, callback<void> done) {
    impl_->submit(keep_alive_req{.session = session, .done = std::move(done)});
}

void local_store::close_session(session_id session, callback<void> done) {
    impl_->submit(close_req{.session = session, .done = std::move(done)});
}

bool local_store::is_callback_thread() const {
    return std::this_thread::get_id() == impl_->delivery.get_id();
}

}  // namespace nereus::meta::detail
