#include "nereus/meta/zk_store.h"

#include "nereus/base/assert.h"
#include "nereus/base/thread_name.h"
#include "nereus/meta/errc.h"
#include "nereus/meta/logger.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <future>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include <utility>
#include <variant>

// The C client declares its synchronous API only with THREADED (set by CMake).
#include <zookeeper/zookeeper.h>

namespace nereus::meta {
namespace {

using clock = std::chrono::steady_clock;

// Record header: format byte, then the key's generation (big-endian uint32). Spec:
// doc/format/meta.md, "ZooKeeper backend".
constexpr char record_format = 1;
constexpr std::size_t header_size = 5;
// Guard failures (another process wrote between our reads and our zoo_multi) before giving up.
constexpr int max_attempts = 64;
// The low word of an erase event's version: above every record dataVersion (an int32).
constexpr std::uint32_t erased_low = 0xffffffffU;

version pack(std::uint32_t generation, std::uint32_t data_version) {
    return (std::uint64_t{generation} << 32) | data_version;
}

std::string hex(std::string_view bytes) {
    static constexpr std::array<char, 16> digits = {'0', '1', '2', '3', '4', '5', '6', '7',
                                                    '8', '9', 'a', 'b', 'c', 'd', 'e', 'f'};
    std::string out;
    out.reserve(bytes.size() * 2);
    for (const char c : bytes) {
        const auto b = static_cast<unsigned char>(c);
        out.push_back(digits[b >> 4]);
        out.push_back(digits[b & 0xf]);
    }
    return out;
}

std::optional<std::string> unhex(std::string_view s) {
    if (s.size() % 2 != 0) {
        return std::nullopt;
    }
    auto nibble = [](char c) -> int {
        if (c >= '0' && c <= '9') {
            return c - '0';
        }
        if (c >= 'a' && c <= 'f') {
            return c - 'a' + 10;
        }
        return -1;
    };
    std::string out;
    out.reserve(s.size() / 2);
    for (std::size_t i = 0; i < s.size(); i += 2) {
        const int hi = nibble(s[i]);
        const int lo = nibble(s[i + 1]);
        if (hi < 0 || lo < 0) {
            return std::nullopt;
        }
        out.push_back(static_cast<char>((hi << 4) | lo));
    }
    return out;
}

std::string encode_record(std::uint32_t generation, const std::string& value) {
    std::string out;
    out.reserve(header_size + value.size());
    out.push_back(record_format);
    for (int shift = 24; shift >= 0; shift -= 8) {
        out.push_back(static_cast<char>((generation >> shift) & 0xffU));
    }
    out += value;
    return out;
}

bool is_guard_failure(int rc) {
    return rc == ZNONODE || rc == ZBADVERSION || rc == ZNODEEXISTS;
}

// A read that failed: nothing was written, so it is safe to retry.
std::error_code read_error(int rc) {
    if (rc == ZCLOSING) {
        return make_error_code(errc::closed);
    }
    return make_error_code(errc::unavailable);
}

const char* zk_error(int rc) {
    return zerror(rc);
}

struct key_read {
    std::int32_t slot_version = 0;  // the slot's dataVersion: how often the key was created
    bool present = false;
    std::uint32_t generation = 0;
    std::int32_t data_version = 0;
    session_id owner = no_session;
    std::string value;

    version ver() const {
        return present ? pack(generation, static_cast<std::uint32_t>(data_version)) : absent;
    }
};

}  // namespace

// One ZooKeeper connection (the store's own, or a nereus session's) and its state, as its
// watcher reports it. Heap-allocated: it is the watcher context until zookeeper_close returns.
struct zk_conn {
    zk_store::impl* owner = nullptr;
    zhandle_t* zh = nullptr;
    std::mutex mu;
    std::condition_variable cv;
    int state = 0;
    std::uint64_t sid = 0;  // set once connected, for a nereus session
    bool is_main = false;
};

struct zk_store::impl {
    // What a watch_handle holds: it may outlive the store (cancelling after the store is gone
    // is a no-op), so it reaches the store only through this gate, which the destructor
    // closes before the store goes away.
    struct cancel_gate {
        std::mutex mu;
        std::condition_variable idle;
        impl* store = nullptr;  // guarded by mu; null once the store is being destroyed
        int running = 0;        // cancels inside `store` now (guarded by mu)
    };
    std::shared_ptr<cancel_gate> gate = std::make_shared<cancel_gate>();

    struct zsession {
        std::unique_ptr<zk_conn> conn;
        std::chrono::milliseconds ttl{0};
        clock::time_point deadline;
        // Ephemeral keys this store created for the session, with their generation.
        std::map<std::string, std::uint32_t> owned;
    };
    struct watcher {
        std::string prefix;
        std::shared_ptr<watch_callback> cb;
    };

    zk_store_options opt;
    std::string keys_dir;
    std::string sessions_dir;
    std::unique_ptr<zk_conn> main;
    // Worker-confined (recover_main): the new session being connected after `main` expired,
    // when the next attempt may start and when this one is given up, and whether the expiry
    // was already reported.
    std::unique_ptr<zk_conn> next_main;
    clock::time_point next_main_attempt{};
    clock::time_point next_main_deadline{};
    bool main_expiry_reported = false;

    // The worker: runs tasks one at a time, in submission order.
    std::mutex mu;
    std::condition_variable cv;
    std::deque<std::function<void()>> tasks;
    bool stopping = false;
    std::thread worker;
    // Worker-confined.
    std::map<session_id, zsession> sessions;
    std::vector<char> buf = std::vector<char>(max_value_size + header_size + 64);

    // The callback thread.
    std::mutex dmu;
    std::condition_variable dcv;
    std::deque<std::function<void()>> dq;
    bool dstop = false;
    std::thread delivery;
    std::thread::id delivery_id;
    std::mutex running_mu;  // held while a callback runs (cancel waits on it)

    std::mutex wmu;
    std::map<std::uint64_t, watcher> watchers;
    std::uint64_t next_watch = 1;

    // What watchers last heard about each key under a watched prefix (worker-confined), so that
    // the re-read after a ZooKeeper notification reports only what changed, once.
    struct known {
        bool present = false;
        version ver = absent;
        std::uint32_t generation = 0;
    };
    std::map<std::string, known> known_keys;

    // ---- plumbing ----

    void post(std::function<void()> f) {
        const std::lock_guard lock(dmu);
        dq.push_back(std::move(f));
        dcv.notify_one();
    }

    template <class T>
    void complete(callback<T> done, result<T> r) {
        post([done = std::move(done), r = std::move(r)]() mutable { done(std::move(r)); });
    }

    // Queues `task` for the worker; when the store is stopping, runs `refuse` instead.
    void submit(std::function<void()> task, std::function<void()> refuse) {
        {
            const std::lock_guard lock(mu);
            if (!stopping) {
                tasks.push_back(std::move(task));
                cv.notify_one();
                return;
            }
        }
        refuse();
    }

    void delivery_loop() {
        for (;;) {
            std::function<void()> f;
            {
                std::unique_lock lock(dmu);
                dcv.wait(lock, [&] { return !dq.empty() || dstop; });
                if (dq.empty()) {
                    return;
                }
                f = std::move(dq.front());
                dq.pop_front();
            }
            const std::lock_guard running(running_mu);
            f();
        }
    }

    void emit(const std::vector<watch_event>& events) {
        const std::lock_guard lock(wmu);
        for (const auto& ev : events) {
            for (const auto& [id, w] : watchers) {
                if (ev.key.starts_with(w.prefix)) {
                    post([this, id = id, ev] { deliver(id, ev); });
                }
            }
        }
    }

    void deliver(std::uint64_t id, const result<watch_event>& ev) {
        std::shared_ptr<watch_callback> cb;
        {
            const std::lock_guard lock(wmu);
            auto it = watchers.find(id);
            if (it == watchers.end()) {
                return;
            }
            cb = it->second.cb;
        }
        (*cb)(ev);
    }

    void cancel(std::uint64_t id) {
        {
            const std::lock_guard lock(wmu);
            watchers.erase(id);
        }
        if (std::this_thread::get_id() != delivery_id) {
            const std::lock_guard wait_for_running(running_mu);
        }
    }

    // ---- connections ----

    static void on_event(zhandle_t* /*zh*/, int type, int state, const char* /*path*/, void* ctx) {
        auto* c = static_cast<zk_conn*>(ctx);
        if (type != ZOO_SESSION_EVENT) {
            return;
        }
        std::uint64_t sid = 0;
        {
            const std::lock_guard lock(c->mu);
            c->state = state;
            sid = c->sid;
        }
        c->cv.notify_all();
        if (c->is_main && c->owner != nullptr &&
            (state == ZOO_EXPIRED_SESSION_STATE || state == ZOO_CONNECTED_STATE)) {
            // The store's own session is gone (this process or the server stalled past its
            // timeout), and with it the server-side watches; or a replacement connected. The
            // worker ends every watch and opens or installs a new session (recover_main).
            auto* self = c->owner;
            self->submit([self] { self->recover_main(); }, [] {});
            return;
        }
        if (state == ZOO_EXPIRED_SESSION_STATE && sid != 0 && c->owner != nullptr) {
            // The server expired a nereus session (this process stalled): end it on the worker.
            auto* self = c->owner;
            self->submit([self, sid] { self->end_session(session_id{sid}); }, [] {});
        }
    }

    // Starts a connection (zookeeper_init does not wait for it).
    result<std::unique_ptr<zk_conn>> start_connect(std::chrono::milliseconds timeout,
                                                   bool is_session) {
        auto c = std::make_unique<zk_conn>();
        c->owner = this;
        c->is_main = !is_session;
        const int ms = static_cast<int>(std::clamp<std::int64_t>(timeout.count(), 1, 1 << 30));
        c->zh = zookeeper_init(opt.hosts.c_str(), &impl::on_event, ms, nullptr, c.get(), 0);
        if (c->zh == nullptr) {
            NEREUS_LOG(meta_log(), err, "zk: zookeeper_init({}) failed: errno {}", opt.hosts,
                       errno);
            return nereus::error(errc::invalid_argument);
        }
        return c;
    }

    // Connects, waiting up to opt.connect_timeout.
    result<std::unique_ptr<zk_conn>> connect(std::chrono::milliseconds timeout, bool is_session) {
        auto started = start_connect(timeout, is_session);
        if (!started) {
            return started;
        }
        auto c = std::move(*started);
        bool ok = false;
        {
            std::unique_lock lock(c->mu);
            ok = c->cv.wait_for(lock, opt.connect_timeout, [&] {
                return c->state == ZOO_CONNECTED_STATE || c->state == ZOO_EXPIRED_SESSION_STATE ||
                       c->state == ZOO_AUTH_FAILED_STATE;
            });
            ok = ok && c->state == ZOO_CONNECTED_STATE;
        }
        if (!ok) {
            NEREUS_LOG(meta_log(), err, "zk: no connection to {} within {} ms", opt.hosts,
                       opt.connect_timeout.count());
            zookeeper_close(c->zh);
            return nereus::error(errc::unavailable);
        }
        return c;
    }

    static int state_of(zk_conn& c) {
        const std::lock_guard lock(c.mu);
        return c.state;
    }

    zhandle_t* zh() const { return main->zh; }

    // Worker: when the store's own session has expired, ends every watch with unavailable
    // (events may have been missed; the caller re-lists and watches again) and replaces the
    // connection with a new session. The main session owns no ephemeral keys (those belong to
    // nereus sessions, each its own connection), so nothing is lost with it. The new session
    // connects in the background (its CONNECTED event brings the worker back here): until it
    // does, requests fail at once as the expired handle refuses them (unavailable). An attempt
    // that has not connected within connect_timeout is dropped, and attempts start at most once
    // a second. Watches added before the new session is installed end too (they could not arm).
    void recover_main() {
        if (state_of(*main) != ZOO_EXPIRED_SESSION_STATE) {
            return;
        }
        const auto now = clock::now();
        if (!main_expiry_reported) {
            main_expiry_reported = true;
            NEREUS_LOG(meta_log(), warn, "zk: the store's session {:x} expired; reconnecting",
                       zoo_client_id(main->zh)->client_id);
            end_watches(errc::unavailable);
            known_keys.clear();
        }
        if (next_main) {
            const int st = state_of(*next_main);
            if (st == ZOO_CONNECTED_STATE) {
                zookeeper_close(main->zh);
                main = std::move(next_main);
                main_expiry_reported = false;
                end_watches(errc::unavailable);
                known_keys.clear();
                NEREUS_LOG(meta_log(), info, "zk: new store session {:x}",
                           zoo_client_id(main->zh)->client_id);
                return;
            }
            if (st != ZOO_EXPIRED_SESSION_STATE && st != ZOO_AUTH_FAILED_STATE &&
                now < next_main_deadline) {
                return;  // still connecting
            }
            zookeeper_close(next_main->zh);
            next_main.reset();
        }
        if (now < next_main_attempt) {
            return;
        }
        next_main_attempt = now + std::chrono::seconds(1);
        next_main_deadline = now + opt.connect_timeout;
        if (auto c = start_connect(opt.session_timeout, false)) {
            next_main = std::move(*c);
        }
    }

    void end_watches(errc e) {
        const std::lock_guard lock(wmu);
        for (const auto& [id, w] : watchers) {
            post([cb = w.cb, e] { (*cb)(nereus::error(e)); });
        }
        watchers.clear();
    }

    // ---- remote changes (worker) ----

    static void on_node_event(
        zhandle_t* /*zh*/, int type, int /*state*/, const char* path, void* ctx) {
        if (type == ZOO_SESSION_EVENT || path == nullptr) {
            return;
        }
        auto* self = static_cast<impl*>(ctx);
        std::string p(path);
        self->submit([self, p] { self->refresh(p); }, [] {});
    }

    bool watched(const std::string& key) {
        const std::lock_guard lock(wmu);
        return std::any_of(watchers.begin(), watchers.end(),
                           [&](const auto& w) { return key.starts_with(w.second.prefix); });
    }

    // Sets an exists-watch on the key's record (it fires on create, change and delete).
    bool arm(const std::string& key) {
        Stat st{};
        const std::string rpath = record_path(slot_path(key));
        const int rc = zoo_wexists(zh(), rpath.c_str(), &impl::on_node_event, this, &st);
        if (rc != ZOK && rc != ZNONODE) {
            NEREUS_LOG(meta_log(), warn, "zk: watch {}: {}", rpath, zk_error(rc));
            return false;
        }
        return true;
    }

    // Arms the key and reads its current state.
    std::optional<known> arm_and_read(const std::string& key) {
        if (!arm(key)) {
            return std::nullopt;
        }
        auto r = read_record(record_path(slot_path(key)));
        if (!r) {
            return std::nullopt;
        }
        known k;
        if (*r) {
            k = known{.present = true, .ver = (*r)->ver(), .generation = (*r)->generation};
        }
        return k;
    }

    // Lists the slots (setting a child watch: a new key makes a new slot) and returns the keys.
    std::vector<std::string> watch_slots() {
        String_vector children{};
        const int rc =
            zoo_wget_children(zh(), keys_dir.c_str(), &impl::on_node_event, this, &children);
        std::vector<std::string> keys;
        if (rc != ZOK) {
            NEREUS_LOG(meta_log(), warn, "zk: watch {}: {}", keys_dir, zk_error(rc));
            return keys;
        }
        for (std::int32_t i = 0; i < children.count; ++i) {
            if (auto k = unhex(children.data[i])) {
                keys.push_back(std::move(*k));
            }
        }
        deallocate_String_vector(&children);
        return keys;
    }

    // A new watch: the present state of its keys is the baseline (no events for it).
    void arm_prefix(const std::string& prefix) {
        for (const auto& key : watch_slots()) {
            if (key.starts_with(prefix) && !known_keys.contains(key)) {
                if (auto k = arm_and_read(key)) {
                    known_keys[key] = *k;
                }
            }
        }
    }

    // Reports what changed for `key` since watchers last heard of it.
    void report(const std::string& key, const known& now) {
        known& before = known_keys[key];
        std::vector<watch_event> events;
        if (before.present && (!now.present || now.generation != before.generation)) {
            events.push_back(watch_event{
                .key = key, .kind = event_kind::erase, .ver = pack(before.generation, erased_low)});
        }
        if (now.present && (!before.present || now.ver != before.ver)) {
            events.push_back(watch_event{.key = key, .kind = event_kind::put, .ver = now.ver});
        }
        before = now;
        emit(events);
    }

    // A ZooKeeper notification: re-read and report the difference.
    void refresh(const std::string& path) {
        if (path == keys_dir) {
            for (const auto& key : watch_slots()) {
                if (!known_keys.contains(key) && watched(key)) {
                    if (auto k = arm_and_read(key)) {
                        report(key, *k);
                    }
                }
            }
            return;
        }
        const std::string head = keys_dir + "/";
        constexpr std::string_view tail = "/r";
        if (!path.starts_with(head) || !path.ends_with(tail) ||
            path.size() < head.size() + tail.size()) {
            return;
        }
        auto key = unhex(
            std::string_view(path).substr(head.size(), path.size() - head.size() - tail.size()));
        if (!key || !watched(*key)) {
            return;
        }
        if (auto k = arm_and_read(*key)) {
            report(*key, *k);
        }
    }

    // This store's own change of `key` (already emitted): remember it, so the notification it
    // causes reports nothing, and keep a watch on the key.
    void note_own(const std::string& key, const known& now) {
        if (!watched(key)) {
            return;
        }
        if (!known_keys.contains(key)) {
            arm(key);
        }
        known_keys[key] = now;
    }

    // ---- paths ----

    std::string slot_path(const std::string& key) const { return keys_dir + "/" + hex(key); }
    static std::string record_path(const std::string& slot) { return slot + "/r"; }
    std::string marker_path(session_id s) const {
        std::array<char, 17> b{};
        auto [end, ec] = std::to_chars(b.data(), b.data() + 16, raw(s), 16);
        (void)ec;
        std::string h(b.data(), end);
        return sessions_dir + "/" + std::string(16 - h.size(), '0') + h;
    }

    // ---- reads (worker) ----

    // Reads the record at `rpath`; nullopt when absent.
    result<std::optional<key_read>> read_record(const std::string& rpath) {
        int len = static_cast<int>(buf.size());
        Stat st{};
        const int rc = zoo_get(zh(), rpath.c_str(), 0, buf.data(), &len, &st);
        if (rc == ZNONODE) {
            return std::optional<key_read>();
        }
        if (rc != ZOK) {
            NEREUS_LOG(meta_log(), warn, "zk: get {}: {}", rpath, zk_error(rc));
            return nereus::error(read_error(rc));
        }
        if (len < static_cast<int>(header_size) || st.dataLength != len ||
            buf[0] != record_format) {
            NEREUS_LOG(meta_log(), err, "zk: corrupt record {} ({} bytes)", rpath, st.dataLength);
            return nereus::error(errc::corrupt_record);
        }
        key_read r;
        r.present = true;
        r.generation = 0;
        for (std::size_t i = 1; i < header_size; ++i) {
            r.generation = (r.generation << 8) | static_cast<unsigned char>(buf[i]);
        }
        r.data_version = st.version;
        r.owner = session_id{static_cast<std::uint64_t>(st.ephemeralOwner)};
        r.value.assign(buf.data() + header_size, static_cast<std::size_t>(len) - header_size);
        return std::optional<key_read>(std::move(r));
    }

    // Reads a key's slot and record consistently, creating the slot when missing (a slot
    // without a record is an absent key).
    result<key_read> read_key(const std::string& key) {
        const std::string slot = slot_path(key);
        const std::string rpath = record_path(slot);
        for (int attempt = 0; attempt < max_attempts; ++attempt) {
            Stat pst{};
            int rc = zoo_exists(zh(), slot.c_str(), 0, &pst);
            if (rc == ZNONODE) {
                rc = zoo_create(zh(), slot.c_str(), "", 0, &ZOO_OPEN_ACL_UNSAFE, ZOO_PERSISTENT,
                                nullptr, 0);
                if (rc != ZOK && rc != ZNODEEXISTS) {
                    NEREUS_LOG(meta_log(), warn, "zk: create slot {}: {}", slot, zk_error(rc));
                    return nereus::error(read_error(rc));
                }
                continue;
            }
            if (rc != ZOK) {
                return nereus::error(read_error(rc));
            }
            auto rec = read_record(rpath);
            if (!rec) {
                return nereus::error(rec.error());
            }
            key_read out;
            if (*rec) {
                out = std::move(**rec);
            }
            out.slot_version = pst.version;
            // The slot was read first: a record of a later creation means a re-create raced
            // the two reads; read again.
            if (out.present && out.generation != static_cast<std::uint32_t>(pst.version)) {
                continue;
            }
            return out;
        }
        return nereus::error(errc::unavailable);
    }

    // ---- requests (worker) ----

    void run_get(const std::string& key, callback<std::optional<record>>& done) {
        if (key.empty() || key.size() > max_key_size) {
            complete(std::move(done),
                     result<std::optional<record>>(nereus::error(errc::invalid_argument)));
            return;
        }
        auto r = read_record(record_path(slot_path(key)));
        if (!r) {
            complete(std::move(done), result<std::optional<record>>(nereus::error(r.error())));
            return;
        }
        std::optional<record> out;
        if (*r) {
            out = record{.value = std::move((*r)->value), .ver = (*r)->ver(), .owner = (*r)->owner};
        }
        complete(std::move(done), result<std::optional<record>>(std::move(out)));
    }

    void run_list(const std::string& prefix, callback<std::vector<keyed_record>>& done) {
        using R = result<std::vector<keyed_record>>;
        if (prefix.size() > max_key_size) {
            complete(std::move(done), R(nereus::error(errc::invalid_argument)));
            return;
        }
        String_vector children{};
        const int rc = zoo_get_children(zh(), keys_dir.c_str(), 0, &children);
        if (rc != ZOK) {
            NEREUS_LOG(meta_log(), warn, "zk: list {}: {}", keys_dir, zk_error(rc));
            complete(std::move(done), R(nereus::error(read_error(rc))));
            return;
        }
        const std::string hp = hex(prefix);
        std::vector<std::string> names;
        for (std::int32_t i = 0; i < children.count; ++i) {
            std::string_view name(children.data[i]);
            if (name.starts_with(hp)) {
                names.emplace_back(name);
            }
        }
        deallocate_String_vector(&children);
        std::sort(names.begin(), names.end());  // hex digits sort as the bytes they encode
        std::vector<keyed_record> out;
        for (const auto& name : names) {
            auto key = unhex(name);
            if (!key) {
                continue;  // not ours
            }
            auto r = read_record(record_path(keys_dir + "/" + name));
            if (!r) {
                complete(std::move(done), R(nereus::error(r.error())));
                return;
            }
            if (*r) {
                out.push_back(keyed_record{.key = std::move(*key),
                                           .rec = record{.value = std::move((*r)->value),
                                                         .ver = (*r)->ver(),
                                                         .owner = (*r)->owner}});
            }
        }
        complete(std::move(done), R(std::move(out)));
    }

    static const std::string& key_of(const op& o) {
        static const std::string none;
        return std::visit(
            [](const auto& x) -> const std::string& {
                using T = std::decay_t<decltype(x)>;
                if constexpr (std::is_same_v<T, check_session>) {
                    return none;
                } else {
                    return x.key;
                }
            },
            o);
    }

    // Validates `ops`; returns the one owner its puts name (no_session when none).
    static result<session_id> validate(const std::vector<op>& ops) {
        if (ops.empty() || ops.size() > max_multi_ops) {
            return nereus::error(errc::invalid_argument);
        }
        session_id owner = no_session;
        for (const auto& o : ops) {
            if (std::holds_alternative<check_session>(o)) {
                continue;
            }
            const std::string& k = key_of(o);
            if (k.empty() || k.size() > max_key_size) {
                return nereus::error(errc::invalid_argument);
            }
            if (const auto* p = std::get_if<put>(&o)) {
                if (p->value.size() > max_value_size) {
                    return nereus::error(errc::invalid_argument);
                }
                if (p->owner != no_session) {
                    if (owner != no_session && owner != p->owner) {
                        // One zoo_multi runs on one ZooKeeper session.
                        return nereus::error(errc::invalid_argument);
                    }
                    owner = p->owner;
                }
            }
        }
        return owner;
    }

    // The simulated state of one key during a multi.
    struct sim {
        key_read initial;
        bool present = false;
        version ver = absent;
        std::string value;
        bool written = false;          // a put changed the current incarnation's value
        bool deleted_initial = false;  // the incarnation read was erased
        bool created = false;          // the final record was created by this multi
        session_id created_owner = no_session;
    };

    void run_multi(std::vector<op>& ops, callback<multi_result>& done) {
        using R = result<multi_result>;
        auto owner = validate(ops);
        if (!owner) {
            complete(std::move(done), R(nereus::error(owner.error())));
            return;
        }
        zsession* owner_session = nullptr;
        if (*owner != no_session) {
            auto it = sessions.find(*owner);
            if (it == sessions.end() || state_of(*it->second.conn) == ZOO_EXPIRED_SESSION_STATE) {
                complete(std::move(done), R(nereus::error(errc::session_expired)));
                return;
            }
            owner_session = &it->second;
        }
        for (int attempt = 0; attempt < max_attempts; ++attempt) {
            // 1. Read every key named and every session checked.
            std::vector<std::string> keys;
            std::map<std::string, sim> state;
            for (const auto& o : ops) {
                if (std::holds_alternative<check_session>(o)) {
                    continue;
                }
                const std::string& k = key_of(o);
                if (state.contains(k)) {
                    continue;
                }
                auto r = read_key(k);
                if (!r) {
                    complete(std::move(done), R(nereus::error(r.error())));
                    return;
                }
                sim s;
                s.present = r->present;
                s.ver = r->ver();
                s.value = r->value;
                s.initial = std::move(*r);
                keys.push_back(k);
                state.emplace(k, std::move(s));
            }
            std::map<session_id, bool> alive;
            for (const auto& o : ops) {
                const auto* cs = std::get_if<check_session>(&o);
                if (cs == nullptr || alive.contains(cs->session)) {
                    continue;
                }
                bool live = false;
                if (cs->session != no_session) {
                    Stat st{};
                    const int rc = zoo_exists(zh(), marker_path(cs->session).c_str(), 0, &st);
                    if (rc != ZOK && rc != ZNONODE) {
                        complete(std::move(done), R(nereus::error(read_error(rc))));
                        return;
                    }
                    live = rc == ZOK;
                }
                alive.emplace(cs->session, live);
            }

            // 2. Decide the ops on that state.
            multi_result res;
            res.versions.assign(ops.size(), absent);
            std::vector<watch_event> events;
            std::optional<std::size_t> failed;
            version failed_found = absent;
            auto matches = [](version expected, version found) {
                return expected == any_version ? found != absent : found == expected;
            };
            for (std::size_t i = 0; i < ops.size() && !failed; ++i) {
                const op& o = ops[i];
                if (const auto* cs = std::get_if<check_session>(&o)) {
                    if (!alive[cs->session]) {
                        failed = i;
                    }
                    continue;
                }
                sim& s = state.at(key_of(o));
                const version found = s.present ? s.ver : absent;
                if (const auto* c = std::get_if<check>(&o)) {
                    if (!matches(c->expected, found)) {
                        failed = i;
                        failed_found = found;
                    }
                } else if (const auto* p = std::get_if<put>(&o)) {
                    if (p->expected != any_version && found != p->expected) {
                        failed = i;
                        failed_found = found;
                        continue;
                    }
                    if (s.present && !s.created) {
                        s.written = true;
                        s.ver = pack(s.initial.generation,
                                     static_cast<std::uint32_t>(s.initial.data_version) + 1);
                    } else if (!s.present) {
                        s.created = true;
                        s.created_owner = p->owner;
                        s.ver = pack(static_cast<std::uint32_t>(s.initial.slot_version) + 1, 0);
                    }
                    s.present = true;
                    s.value = p->value;
                    events.push_back(
                        watch_event{.key = p->key, .kind = event_kind::put, .ver = s.ver});
                } else if (const auto* e = std::get_if<erase>(&o)) {
                    if (e->expected != any_version && found != e->expected) {
                        failed = i;
                        failed_found = found;
                        continue;
                    }
                    if (s.present) {
                        const std::uint32_t g =
                            s.created ? static_cast<std::uint32_t>(s.initial.slot_version) + 1
                                      : s.initial.generation;
                        if (!s.created) {
                            s.deleted_initial = true;
                        }
                        s.present = false;
                        s.created = false;
                        s.written = false;
                        s.ver = absent;
                        events.push_back(watch_event{
                            .key = e->key, .kind = event_kind::erase, .ver = pack(g, erased_low)});
                    }
                }
            }
            if (failed) {
                res.applied = false;
                res.failed_op = failed;
                res.versions[*failed] = failed_found;
                complete(std::move(done), R(std::move(res)));
                return;
            }

            // 3. One zoo_multi: the net writes, each guarded by the state read.
            std::deque<std::string> strs;
            std::deque<Stat> stats;
            std::deque<std::array<char, 16>> path_bufs;
            std::vector<zoo_op_t> zops;
            zops.reserve(keys.size() * 3 + alive.size());
            auto keep = [&](std::string s) -> const std::string& {
                strs.push_back(std::move(s));
                return strs.back();
            };
            for (const auto& k : keys) {
                const sim& s = state.at(k);
                const std::string& slot = keep(slot_path(k));
                const std::string& rpath = keep(record_path(slot));
                const key_read& in = s.initial;
                const bool create_record = s.present && (s.created || !in.present);
                zoo_op_t z{};
                if (create_record) {
                    // Every creation bumps the slot: the new record's generation.
                    stats.emplace_back();
                    zoo_set_op_init(&z, slot.c_str(), "", 0, in.slot_version, &stats.back());
                } else {
                    zoo_check_op_init(&z, slot.c_str(), in.slot_version);
                }
                zops.push_back(z);
                if (in.present && s.deleted_initial) {
                    zoo_delete_op_init(&z, rpath.c_str(), in.data_version);
                    zops.push_back(z);
                } else if (in.present && s.written) {
                    const std::string& data = keep(encode_record(in.generation, s.value));
                    stats.emplace_back();
                    zoo_set_op_init(&z, rpath.c_str(), data.data(), static_cast<int>(data.size()),
                                    in.data_version, &stats.back());
                    zops.push_back(z);
                } else if (in.present) {
                    zoo_check_op_init(&z, rpath.c_str(), in.data_version);
                    zops.push_back(z);
                }
                if (create_record) {
                    const std::string& data = keep(
                        encode_record(static_cast<std::uint32_t>(in.slot_version) + 1, s.value));
                    path_bufs.emplace_back();
                    zoo_create_op_init(
                        &z, rpath.c_str(), data.data(), static_cast<int>(data.size()),
                        &ZOO_OPEN_ACL_UNSAFE,
                        s.created_owner != no_session ? ZOO_EPHEMERAL : ZOO_PERSISTENT,
                        path_bufs.back().data(), static_cast<int>(path_bufs.back().size()));
                    zops.push_back(z);
                }
            }
            for (const auto& [sid, live] : alive) {
                zoo_op_t z{};
                zoo_check_op_init(&z, keep(marker_path(sid)).c_str(), -1);
                zops.push_back(z);
            }
            std::vector<zoo_op_result_t> results(zops.size());
            zk_conn& conn = owner_session != nullptr ? *owner_session->conn : *main;
            if (opt.before_multi) {
                opt.before_multi();
            }
            const int rc =
                zoo_multi(conn.zh, static_cast<int>(zops.size()), zops.data(), results.data());
            if (is_guard_failure(rc)) {
                continue;  // someone else wrote in between: read and decide again
            }
            if (rc != ZOK) {
                std::error_code ec = make_error_code(errc::unknown_outcome);
                if (rc == ZINVALIDSTATE || rc == ZBADARGUMENTS || rc == ZMARSHALLINGERROR) {
                    // Refused by the client before sending: nothing was applied.
                    ec = make_error_code(owner_session != nullptr ? errc::session_expired
                                                                  : errc::unavailable);
                } else if (rc == ZCLOSING) {
                    ec = make_error_code(errc::closed);
                }
                NEREUS_LOG(meta_log(), warn, "zk: multi of {} ops: {} -> {}", ops.size(),
                           zk_error(rc), ec.message());
                complete(std::move(done), R(nereus::error(ec)));
                return;
            }

            // Applied.
            for (const auto& k : keys) {
                const sim& s = state.at(k);
                if (s.initial.present && s.deleted_initial && s.initial.owner != no_session) {
                    if (auto it = sessions.find(s.initial.owner); it != sessions.end()) {
                        it->second.owned.erase(k);
                    }
                }
                if (s.present && s.created && s.created_owner != no_session) {
                    sessions.at(s.created_owner).owned[k] =
                        static_cast<std::uint32_t>(s.initial.slot_version) + 1;
                }
            }
            for (const auto& k : keys) {
                const sim& s = state.at(k);
                if (s.written || s.created || s.deleted_initial) {
                    const std::uint32_t g =
                        s.created ? static_cast<std::uint32_t>(s.initial.slot_version) + 1
                                  : s.initial.generation;
                    note_own(k, s.present ? known{.present = true, .ver = s.ver, .generation = g}
                                          : known{});
                }
            }
            res.applied = true;
            for (std::size_t i = 0; i < ops.size(); ++i) {
                if (std::holds_alternative<check_session>(ops[i])) {
                    continue;
                }
                const sim& s = state.at(key_of(ops[i]));
                res.versions[i] = s.present ? s.ver : absent;
            }
            emit(events);
            complete(std::move(done), R(std::move(res)));
            return;
        }
        complete(std::move(done), R(nereus::error(errc::unavailable)));
    }

    // ---- sessions (worker) ----

    void run_open_session(std::chrono::milliseconds ttl, callback<session_id>& done) {
        using R = result<session_id>;
        if (ttl < std::chrono::milliseconds(1) || ttl > std::chrono::hours(24)) {
            complete(std::move(done), R(nereus::error(errc::invalid_argument)));
            return;
        }
        auto c = connect(ttl, true);
        if (!c) {
            complete(std::move(done), R(nereus::error(c.error())));
            return;
        }
        const clientid_t* id = zoo_client_id((*c)->zh);
        const session_id sid{static_cast<std::uint64_t>(id->client_id)};
        const std::string marker = marker_path(sid);
        const int rc = zoo_create((*c)->zh, marker.c_str(), "", 0, &ZOO_OPEN_ACL_UNSAFE,
                                  ZOO_EPHEMERAL, nullptr, 0);
        if (rc != ZOK) {
            NEREUS_LOG(meta_log(), warn, "zk: session marker {}: {}", marker, zk_error(rc));
            zookeeper_close((*c)->zh);
            complete(std::move(done), R(nereus::error(errc::unavailable)));
            return;
        }
        {
            const std::lock_guard lock((*c)->mu);
            (*c)->sid = raw(sid);
        }
        // The server's granularity: a ttl below the negotiated session timeout (at least two
        // ticks) is rounded up to it, as the server itself would not expire the session sooner.
        const auto effective = std::max(ttl, std::chrono::milliseconds(zoo_recv_timeout((*c)->zh)));
        sessions.emplace(sid, zsession{.conn = std::move(*c),
                                       .ttl = effective,
                                       .deadline = clock::now() + effective,
                                       .owned = {}});
        complete(std::move(done), R(sid));
    }

    // Closes the session's ZooKeeper session (the server deletes its ephemeral nodes) and
    // reports the deletion of the ephemeral keys this store created for it.
    void end_session(session_id sid) {
        auto it = sessions.find(sid);
        if (it == sessions.end()) {
            return;
        }
        zk_conn& c = *it->second.conn;
        {
            const std::lock_guard lock(c.mu);
            c.sid = 0;
        }
        zookeeper_close(c.zh);
        std::vector<watch_event> events;
        for (const auto& [key, generation] : it->second.owned) {
            auto r = read_record(record_path(slot_path(key)));
            if (r && (!*r || (*r)->generation != generation)) {
                events.push_back(watch_event{
                    .key = key, .kind = event_kind::erase, .ver = pack(generation, erased_low)});
                if (auto k = known_keys.find(key);
                    k != known_keys.end() && k->second.generation == generation) {
                    k->second = known{};
                }
            }
        }
        sessions.erase(it);
        emit(events);
    }

    void run_keep_alive(session_id sid, callback<void>& done) {
        auto it = sessions.find(sid);
        if (it == sessions.end() || state_of(*it->second.conn) == ZOO_EXPIRED_SESSION_STATE) {
            end_session(sid);
            complete(std::move(done), result<void>(nereus::error(errc::session_expired)));
            return;
        }
        it->second.deadline = clock::now() + it->second.ttl;
        complete(std::move(done), result<void>());
    }

    void run_close_session(session_id sid, callback<void>& done) {
        if (!sessions.contains(sid)) {
            complete(std::move(done), result<void>(nereus::error(errc::session_expired)));
            return;
        }
        end_session(sid);
        complete(std::move(done), result<void>());
    }

    void expire_due() {
        const auto now = clock::now();
        std::vector<session_id> due;
        for (const auto& [sid, s] : sessions) {
            if (s.deadline <= now) {
                due.push_back(sid);
            }
        }
        for (const auto sid : due) {
            NEREUS_LOG(meta_log(), info, "zk: session {:x} expired (no keep_alive)", raw(sid));
            end_session(sid);
        }
    }

    void worker_loop() {
        for (;;) {
            expire_due();
            std::function<void()> t;
            {
                std::unique_lock lock(mu);
                if (tasks.empty()) {
                    if (stopping) {
                        break;
                    }
                    std::optional<clock::time_point> next;
                    for (const auto& [sid, s] : sessions) {
                        if (!next || s.deadline < *next) {
                            next = s.deadline;
                        }
                    }
                    if (next) {
                        cv.wait_until(lock, *next);
                    } else {
                        cv.wait(lock);
                    }
                    continue;
                }
                t = std::move(tasks.front());
                tasks.pop_front();
            }
            recover_main();
            t();
        }
        std::vector<session_id> all;
        for (const auto& [sid, s] : sessions) {
            all.push_back(sid);
        }
        for (const auto sid : all) {
            end_session(sid);
        }
        if (next_main) {
            zookeeper_close(next_main->zh);
        }
        zookeeper_close(main->zh);
    }

    result<void> create_path(const std::string& path) {
        for (std::size_t pos = 1; pos <= path.size(); ++pos) {
            if (pos != path.size() && path[pos] != '/') {
                continue;
            }
            const std::string p = path.substr(0, pos);
            const int rc = zoo_create(zh(), p.c_str(), "", 0, &ZOO_OPEN_ACL_UNSAFE, ZOO_PERSISTENT,
                                      nullptr, 0);
            if (rc != ZOK && rc != ZNODEEXISTS) {
                NEREUS_LOG(meta_log(), err, "zk: create {}: {}", p, zk_error(rc));
                return nereus::error(read_error(rc));
            }
        }
        return {};
    }
};

result<zk_store_options> zk_store::parse_url(std::string_view url) {
    constexpr std::string_view scheme = "zk://";
    if (!url.starts_with(scheme)) {
        return nereus::error(errc::invalid_argument);
    }
    url.remove_prefix(scheme.size());
    zk_store_options o;
    if (auto q = url.find('?'); q != std::string_view::npos) {
        std::string_view query = url.substr(q + 1);
        url = url.substr(0, q);
        constexpr std::string_view st = "session_timeout_ms=";
        if (!query.starts_with(st)) {
            return nereus::error(errc::invalid_argument);
        }
        query.remove_prefix(st.size());
        std::int64_t ms = 0;
        auto [end, ec] = std::from_chars(query.data(), query.data() + query.size(), ms);
        if (ec != std::errc() || end != query.data() + query.size() || ms <= 0) {
            return nereus::error(errc::invalid_argument);
        }
        o.session_timeout = std::chrono::milliseconds(ms);
    }
    const auto slash = url.find('/');
    o.hosts = std::string(url.substr(0, slash));
    if (slash != std::string_view::npos && url.size() > slash + 1) {
        o.root = std::string(url.substr(slash));
    }
    if (o.hosts.empty() || o.root.empty() || o.root.front() != '/' || o.root.back() == '/' ||
        o.root.find("//") != std::string::npos) {
        return nereus::error(errc::invalid_argument);
    }
    return o;
}

result<std::unique_ptr<zk_store>> zk_store::open(zk_store_options options) {
    static std::once_flag quiet;
    std::call_once(quiet, [] { zoo_set_debug_level(ZOO_LOG_LEVEL_ERROR); });
    if (options.hosts.empty() || options.root.empty() || options.root.front() != '/' ||
        options.root.back() == '/') {
        return nereus::error(errc::invalid_argument);
    }
    auto i = std::make_unique<impl>();
    i->opt = std::move(options);
    i->keys_dir = i->opt.root + "/k";
    i->sessions_dir = i->opt.root + "/s";
    auto c = i->connect(i->opt.session_timeout, false);
    if (!c) {
        return nereus::error(c.error());
    }
    i->main = std::move(*c);
    for (const auto& p : {i->keys_dir, i->sessions_dir}) {
        if (auto r = i->create_path(p); !r) {
            zookeeper_close(i->main->zh);
            return nereus::error(r.error());
        }
    }
    NEREUS_LOG(meta_log(), info, "zk: connected to {} root {} (session {:x})", i->opt.hosts,
               i->opt.root, zoo_client_id(i->main->zh)->client_id);
    return std::unique_ptr<zk_store>(new zk_store(std::move(i)));
}

zk_store::zk_store(std::unique_ptr<impl> i) : impl_(std::move(i)) {
    impl_->delivery = std::thread([this] {
        { const std::lock_guard lock(impl_->dmu); }
        set_thread_name("zk-deliver");
        impl_->delivery_loop();
    });
    {
        const std::lock_guard lock(impl_->dmu);
        impl_->delivery_id = impl_->delivery.get_id();
    }
    impl_->worker = std::thread([this] {
        set_thread_name("zk-worker");
        impl_->worker_loop();
    });
}

zk_store::~zk_store() {
    NEREUS_ASSERT(!is_callback_thread(), "meta store destroyed from its own callback thread");
    {
        // From here on a watch_handle's cancel is a no-op (the watchers end with `closed`);
        // cancels already inside the store finish first.
        std::unique_lock lock(impl_->gate->mu);
        impl_->gate->store = nullptr;
        impl_->gate->idle.wait(lock, [this] { return impl_->gate->running == 0; });
    }
    {
        const std::lock_guard lock(impl_->mu);
        impl_->stopping = true;
        impl_->cv.notify_all();
    }
    impl_->worker.join();
    {
        const std::lock_guard lock(impl_->wmu);
        for (const auto& [id, w] : impl_->watchers) {
            impl_->post([cb = w.cb] { (*cb)(nereus::error(errc::closed)); });
        }
        impl_->watchers.clear();
    }
    {
        const std::lock_guard lock(impl_->dmu);
        impl_->dstop = true;
        impl_->dcv.notify_all();
    }
    impl_->delivery.join();
}

void zk_store::multi(std::vector<op> ops, callback<multi_result> done) {
    auto* i = impl_.get();
    auto shared = std::make_shared<std::pair<std::vector<op>, callback<multi_result>>>(
        std::move(ops), std::move(done));
    i->submit([i, shared] { i->run_multi(shared->first, shared->second); },
              [i, shared] {
                  i->complete(std::move(shared->second),
                              result<multi_result>(nereus::error(errc::closed)));
              });
}

void zk_store::get(std::string key, callback<std::optional<record>> done) {
    auto* i = impl_.get();
    auto shared = std::make_shared<std::pair<std::string, callback<std::optional<record>>>>(
        std::move(key), std::move(done));
    i->submit([i, shared] { i->run_get(shared->first, shared->second); },
              [i, shared] {
                  i->complete(std::move(shared->second),
                              result<std::optional<record>>(nereus::error(errc::closed)));
              });
}

void zk_store::list(std::string prefix, callback<std::vector<keyed_record>> done) {
    auto* i = impl_.get();
    auto shared = std::make_shared<std::pair<std::string, callback<std::vector<keyed_record>>>>(
        std::move(prefix), std::move(done));
    i->submit([i, shared] { i->run_list(shared->first, shared->second); },
              [i, shared] {
                  i->complete(std::move(shared->second),
                              result<std::vector<keyed_record>>(nereus::error(errc::closed)));
              });
}

watch_handle zk_store::watch(std::string prefix, watch_callback callback) {
    auto* i = impl_.get();
    std::uint64_t id = 0;
    std::string armed_prefix = prefix;
    {
        const std::lock_guard lock(i->wmu);
        id = i->next_watch++;
        i->watchers.emplace(
            id, impl::watcher{.prefix = std::move(prefix),
                              .cb = std::make_shared<watch_callback>(std::move(callback))});
    }
    // The worker sets the ZooKeeper watches for the prefix (after every request submitted
    // before, so this store's own earlier writes are part of the baseline).
    i->submit([i, p = std::move(armed_prefix)] { i->arm_prefix(p); }, [] {});
    {
        const std::lock_guard lock(i->gate->mu);
        i->gate->store = i;
    }
    return watch_handle([gate = std::weak_ptr<impl::cancel_gate>(i->gate), id] {
        auto g = gate.lock();
        if (!g) {
            return;
        }
        impl* store = nullptr;
        {
            const std::lock_guard lock(g->mu);
            if (g->store == nullptr) {
                return;
            }
            store = g->store;
            ++g->running;
        }
        // Not under g->mu: cancel may wait for a running callback, which may cancel too.
        store->cancel(id);
        {
            const std::lock_guard lock(g->mu);
            --g->running;
        }
        g->idle.notify_all();
    });
}

void zk_store::open_session(std::chrono::milliseconds ttl, callback<session_id> done) {
    auto* i = impl_.get();
    auto shared = std::make_shared<callback<session_id>>(std::move(done));
    i->submit([i, ttl, shared] { i->run_open_session(ttl, *shared); },
              [i, shared] {
                  i->complete(std::move(*shared), result<session_id>(nereus::error(errc::closed)));
              });
}

void zk_store::keep_alive(session_id session, callback<void> done) {
    auto* i = impl_.get();
    auto shared = std::make_shared<callback<void>>(std::move(done));
    i->submit([i, session, shared] { i->run_keep_alive(session, *shared); },
              [i, shared] {
                  i->complete(std::move(*shared), result<void>(nereus::error(errc::closed)));
              });
}

void zk_store::close_session(session_id session, callback<void> done) {
    auto* i = impl_.get();
    auto shared = std::make_shared<callback<void>>(std::move(done));
    i->submit([i, session, shared] { i->run_close_session(session, *shared); },
              [i, shared] {
                  i->complete(std::move(*shared), result<void>(nereus::error(errc::closed)));
              });
}

result<void> zk_store::expire_own_session_for_test() {
    auto* i = impl_.get();
    std::promise<result<void>> done;
    i->submit(
        [i, &done] {
            // The old connection may take the session back before the twin's close reaches the
            // server (it reconnects as soon as the twin displaces it): then try again. A request
            // on the old connection tells which happened.
            for (int attempt = 0; attempt < 20; ++attempt) {
                const clientid_t id = *zoo_client_id(i->main->zh);
                zk_conn twin;
                const int ms = static_cast<int>(i->opt.session_timeout.count());
                twin.zh = zookeeper_init(i->opt.hosts.c_str(), &impl::on_event, ms, &id, &twin, 0);
                if (twin.zh == nullptr) {
                    done.set_value(nereus::error(errc::invalid_argument));
                    return;
                }
                {
                    std::unique_lock lock(twin.mu);
                    twin.cv.wait_for(lock, i->opt.connect_timeout, [&] {
                        return twin.state == ZOO_CONNECTED_STATE ||
                               twin.state == ZOO_EXPIRED_SESSION_STATE;
                    });
                }
                // Closing a connected handle closes its session on the server.
                zookeeper_close(twin.zh);
                Stat st{};
                int rc = ZCONNECTIONLOSS;
                for (int probe = 0; probe < 20 && rc == ZCONNECTIONLOSS; ++probe) {
                    rc = zoo_exists(i->main->zh, i->opt.root.c_str(), 0, &st);
                }
                if (rc == ZSESSIONEXPIRED || rc == ZINVALIDSTATE ||
                    impl::state_of(*i->main) == ZOO_EXPIRED_SESSION_STATE) {
                    done.set_value(result<void>());
                    return;
                }
            }
            done.set_value(nereus::error(errc::unavailable));
        },
        [&done] { done.set_value(nereus::error(errc::closed)); });
    return done.get_future().get();
}

bool zk_store::is_callback_thread() const {
    return std::this_thread::get_id() == impl_->delivery_id;
}

}  // namespace nereus::meta
