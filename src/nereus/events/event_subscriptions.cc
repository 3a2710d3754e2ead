#include "nereus/events/event_subscriptions.h"

#include "nereus/client/client.h"
#include "nereus/events/admin_http.h"
#include "nereus/events/errc.h"
#include "nereus/events/logger.h"
#include "nereus/events/state_record.h"

#include <algorithm>
#include <boost/asio/use_future.hpp>
#include <boost/json.hpp>
#include <charconv>
#include <deque>
#include <future>
#include <map>
#include <mutex>
#include <random>
#include <thread>
#include <unistd.h>

namespace nereus::events {

namespace asio = boost::asio;
namespace json = boost::json;
using detail::state_record;
using namespace std::chrono_literals;

namespace {

constexpr int max_cas_attempts = 64;

std::int64_t now_ms() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
}

std::string default_holder() {
    char host[256] = {};
    ::gethostname(host, sizeof host - 1);
    std::random_device rd;
    std::string h =
        std::string(host) + "-" + std::to_string(::getpid()) + "-" + std::to_string(rd() % 1000000);
    std::replace(h.begin(), h.end(), ',', '_');
    return h;
}

// "persistent://tenant/ns/name" for a topic given as a name in `scope` or as a full name.
std::string full_topic(const std::string& scope, const std::string& topic) {
    if (topic.find("://") != std::string::npos) {
        return topic;
    }
    return "persistent://" + scope + "/" + topic;
}

// The admin path of a full topic name.
std::string admin_path(const std::string& full) {
    std::string_view rest = full;
    rest.remove_prefix(rest.find("://") + 3);
    const auto a = rest.find('/');
    const auto b = rest.find('/', a + 1);
    return "/admin/v2/persistent/" + std::string(rest.substr(0, b)) + "/" +
           detail::url_encode(rest.substr(b + 1));
}

// The entry of a "L:E" position text (E may be -1); nullopt when malformed.
std::optional<std::int64_t> entry_of_position(std::string_view s) {
    const auto c = s.find(':');
    if (c == std::string_view::npos) {
        return std::nullopt;
    }
    std::int64_t e = 0;
    auto tail = s.substr(c + 1);
    auto [p, ec] = std::from_chars(tail.data(), tail.data() + tail.size(), e);
    if (ec != std::errc()) {
        return std::nullopt;
    }
    return e;
}

std::int64_t json_int(const json::value& v, std::int64_t fallback) {
    if (v.is_int64()) {
        return v.get_int64();
    }
    if (v.is_uint64()) {
        return static_cast<std::int64_t>(v.get_uint64());
    }
    return fallback;
}

bool last_of_entry(const client::message& m) {
    const auto& id = m.id();
    return id.batch_index < 0 || id.batch_index + 1 >= id.batch_size;
}

std::int64_t msg_entry(const client::message& m) {
    return m.id().entry;
}

// One reader of one source partition in this process (a read-ahead buffer; never state).
struct part_reader {
    client::reader r;
    bool compacted = false;
    std::deque<client::message> buf;
    std::optional<std::future<result<client::message>>> pending;
    std::int64_t cursor_entry = 0;  // smallest entry the reader can still deliver after buf

    [[nodiscard]] std::int64_t lowest() const {
        return buf.empty() ? cursor_entry : msg_entry(buf.front());
    }
};

struct stats_info {
    std::int64_t ledger = -1;
    std::int64_t first_entry = 0;
    std::int64_t horizon = -1;                // compaction horizon entry (-1: no view)
    std::int64_t view_entries = -1;           // entries in the compacted view (-1: none)
    std::optional<std::int64_t> mark_delete;  // of the source subscription (nullopt: absent)
};

}  // namespace

struct sub_state {
    registration reg;
    policy pol;
    std::string source;                   // full topic name
    std::vector<std::string> partitions;  // full names of the partitions (or the topic)
    std::string source_sub;               // durable subscription on every partition
    std::string meta_topic;               // full name of the metadata topic
    std::string state_sub;                // its subscription holding the state record
    std::vector<part_reader> readers;
    std::optional<client::consumer> owner_claim;
    std::uint32_t rr = 0;
};

struct event_subscriptions::impl {
    host_options opts;
    client::client cl;
    std::unique_ptr<detail::admin_http> http;
    std::mutex mu;
    std::map<std::string, policy, std::less<>> policies;
    std::map<std::string, sub_state, std::less<>> subs;

    impl(host_options o, std::unique_ptr<detail::admin_http> h)
        : opts(std::move(o)),
          cl(client::client_options{.service_url = opts.service_url,
                                    .operation_timeout = opts.operation_timeout}),
          http(std::move(h)) {}

    // ---- plumbing ----

    template <class T>
    result<T> wait(std::future<result<T>>& f, deadline_t deadline) {
        if (f.wait_until(deadline) != std::future_status::ready) {
            return error(errc::timeout);
        }
        return f.get();
    }

    result<detail::http_reply> admin(std::string_view method,
                                     const std::string& target,
                                     std::string_view body,
                                     deadline_t deadline) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
            deadline - std::chrono::steady_clock::now());
        if (left <= 0ms) {
            return error(errc::timeout);
        }
        return http->request(method, target, body, std::min(left, opts.operation_timeout));
    }

    result<json::value> admin_json(const std::string& target, deadline_t deadline) {
        auto r = admin("GET", target, {}, deadline);
        if (!r) {
            return error(r.error());
        }
        if (r->status == 404) {
            return json::value();
        }
        if (r->status != 200) {
            NEREUS_LOG(events_log(), warn, "GET {}: {} {}", target, r->status, r->body);
            return error(errc::broker);
        }
        boost::system::error_code ec;
        auto v = json::parse(r->body, ec);
        if (ec) {
            return error(errc::broker);
        }
        return v;
    }

    // PUT/POST that may answer 409 "exists" (accepted as success when `conflict_ok`).
    result<void> admin_write(std::string_view method,
                             const std::string& target,
                             std::string_view body,
                             deadline_t deadline,
                             bool conflict_ok = true) {
        auto r = admin(method, target, body, deadline);
        if (!r) {
            return error(r.error());
        }
        if (r->status / 100 == 2 || (conflict_ok && r->status == 409)) {
            return {};
        }
        NEREUS_LOG(events_log(), warn, "{} {}: {} {}", method, target, r->status, r->body);
        return error(errc::broker);
    }

    result<stats_info> stats(const sub_state& s, std::uint32_t p, deadline_t deadline) {
        auto v = admin_json(admin_path(s.partitions[p]) + "/internalStats", deadline);
        if (!v) {
            return error(v.error());
        }
        stats_info st;
        if (!v->is_object()) {
            return st;  // topic not created yet
        }
        const auto& o = v->as_object();
        if (const auto* ls = o.if_contains("ledgers");
            ls && ls->is_array() && !ls->as_array().empty()) {
            const auto& l = ls->as_array()[0].as_object();
            if (const auto* x = l.if_contains("ledgerId")) {
                st.ledger = json_int(*x, -1);
            }
            if (const auto* x = l.if_contains("firstEntry")) {
                st.first_entry = json_int(*x, 0);
            }
        }
        if (const auto* h = o.if_contains("compactionHorizon"); h && h->is_string()) {
            if (auto e = entry_of_position(h->as_string())) {
                st.horizon = *e;
            }
        }
        if (const auto* cv = o.if_contains("compactedLedger"); cv && cv->is_object()) {
            if (const auto* x = cv->as_object().if_contains("entries")) {
                st.view_entries = json_int(*x, -1);
            }
        }
        if (const auto* cs = o.if_contains("cursors"); cs && cs->is_object()) {
            if (const auto* c = cs->as_object().if_contains(s.source_sub); c && c->is_object()) {
                if (const auto* md = c->as_object().if_contains("markDeletePosition");
                    md && md->is_string()) {
                    st.mark_delete = entry_of_position(md->as_string());
                }
            }
        }
        return st;
    }

    // ---- the state record ----

    std::string state_target(const sub_state& s) const {
        return admin_path(s.meta_topic) + "/subscription/" + detail::url_encode(s.state_sub) +
               "/properties";
    }

    result<state_record> read_state(const sub_state& s, deadline_t deadline) {
        auto v = admin_json(state_target(s), deadline);
        if (!v) {
            return error(v.error());
        }
        std::map<std::string, std::string> props;
        if (v->is_object()) {
            for (const auto& [k, x] : v->as_object()) {
                if (x.is_string()) {
                    props.emplace(std::string(k), std::string(x.as_string()));
                }
            }
        }
        auto rec = detail::decode(props);
        if (!rec) {
            NEREUS_LOG(events_log(), err, "subscription {}: malformed state record",
                       s.reg.subscription);
        }
        return rec;
    }

    // Writes `next` over the record read at `expected_version`: true when written, false on a
    // CAS conflict. errc::timeout: the outcome is unknown.
    result<bool> write_state(const sub_state& s,
                             state_record next,
                             std::uint64_t expected_version,
                             deadline_t deadline) {
        next.version = expected_version + 1;
        json::object o;
        for (const auto& [k, v] : detail::encode(next)) {
            o[k] = v;
        }
        auto r = admin("PUT", state_target(s) + "?ifVersion=" + std::to_string(expected_version),
                       json::serialize(o), deadline);
        if (!r) {
            return error(r.error());
        }
        if (r->status == 409) {
            return false;
        }
        if (r->status / 100 != 2) {
            NEREUS_LOG(events_log(), warn, "state write {}: {} {}", s.reg.subscription, r->status,
                       r->body);
            return error(errc::broker);
        }
        return true;
    }

    result<void> check_owner(const sub_state& s, const state_record& rec) {
        if (s.pol.owner == ownership::exclusive_fenced && rec.owner != opts.holder_id) {
            return error(errc::fenced);
        }
        return {};
    }

    // ---- source readers ----

    result<void> position_reader(sub_state& s,
                                 std::uint32_t p,
                                 bool compacted,
                                 std::int64_t from,
                                 const state_record& rec,
                                 deadline_t deadline) {
        auto& pr = s.readers[p];
        if (pr.r.valid() && pr.compacted == compacted && pr.lowest() <= from) {
            while (!pr.buf.empty() && msg_entry(pr.buf.front()) < from) {
                pr.buf.pop_front();
            }
            return {};
        }
        if (pr.r.valid()) {
            auto old = pr.r;
            old.close([](result<void>) {});
        }
        pr = part_reader{};
        client::reader_options ro;
        ro.topic = s.partitions[p];
        ro.read_compacted = compacted;
        ro.receiver_queue_size = 256;
        if (from <= 0) {
            ro.start_message_id = client::message_id::earliest();
        } else {
            ro.start_message_id = client::message_id{rec.ledger[p], from, -1, -1, 0};
            ro.start_inclusive = true;
        }
        auto f = cl.create_reader(ro, asio::use_future);
        auto r = wait(f, deadline);
        if (!r) {
            return error(r.error() == make_error_code(errc::timeout)
                             ? r.error()
                             : make_error_code(errc::broker));
        }
        pr.r = *r;
        pr.compacted = compacted;
        pr.cursor_entry = std::max<std::int64_t>(from, 0);
        return {};
    }

    // One more message into the buffer: false when none is available now or the deadline
    // passed (a pending read is kept for the next call).
    result<bool> fetch(part_reader& pr, deadline_t deadline) {
        if (!pr.pending) {
            auto avail = pr.r.has_message_available(asio::use_future);
            auto a = wait(avail, deadline);
            if (!a) {
                return a.error() == make_error_code(errc::timeout) ? result<bool>(false)
                                                                   : error(errc::broker);
            }
            if (!*a) {
                return false;
            }
            pr.pending = pr.r.read_next(asio::use_future);
        }
        if (pr.pending->wait_until(deadline) != std::future_status::ready) {
            return false;
        }
        auto m = pr.pending->get();
        pr.pending.reset();
        if (!m) {
            NEREUS_LOG(events_log(), warn, "read failed: {}", m.error().message());
            return error(errc::broker);
        }
        pr.cursor_entry = last_of_entry(*m) ? msg_entry(*m) + 1 : msg_entry(*m);
        pr.buf.push_back(std::move(*m));
        return true;
    }

    // Peeks up to `max` messages with entries in [from, limit], ending at an entry boundary.
    // `exhausted`: the reader had nothing more (or the next message is beyond `limit`).
    result<std::size_t> collect(part_reader& pr,
                                std::int64_t from,
                                std::int64_t limit,
                                std::size_t max,
                                deadline_t deadline,
                                bool& exhausted) {
        exhausted = false;
        std::size_t n = 0;
        std::int64_t last = -1;
        bool incomplete_tail = false;
        while (true) {
            if (n == pr.buf.size()) {
                if (n >= max && !incomplete_tail) {
                    break;
                }
                auto got = fetch(pr, deadline);
                if (!got) {
                    return error(got.error());
                }
                if (!*got) {
                    exhausted = std::chrono::steady_clock::now() < deadline;
                    break;
                }
                if (msg_entry(pr.buf.back()) < from) {
                    pr.buf.pop_back();
                    continue;
                }
            }
            const auto& m = pr.buf[n];
            const auto e = msg_entry(m);
            if (e > limit) {
                exhausted = true;
                incomplete_tail = false;
                break;
            }
            if (n >= max && e != last) {
                incomplete_tail = false;
                break;
            }
            ++n;
            last = e;
            incomplete_tail = !last_of_entry(m);
        }
        if (incomplete_tail) {
            // The page would end inside a batch: keep the whole entry for the next page.
            while (n > 0 && msg_entry(pr.buf[n - 1]) == last) {
                --n;
            }
            exhausted = false;
        }
        return n;
    }

    delivery to_delivery(const sub_state& s,
                         const client::message& m,
                         std::uint32_t p,
                         const state_record& rec,
                         delivery_kind kind) {
        delivery d;
        d.kind = kind;
        d.at = cursor{p, rec.epoch,
                      sequence_of(static_cast<std::uint64_t>(msg_entry(m)),
                                  static_cast<std::uint32_t>(std::max(0, m.id().batch_index)))};
        const auto payload = m.payload();
        d.op.key = m.key();
        d.op.what = payload.empty() ? operation::kind::remove : operation::kind::upsert;
        if (auto f = m.property_value(admitted_format::format_property)) {
            d.format = std::string(*f);
        }
        d.bytes.assign(payload.begin(), payload.end());
        d.admitted =
            m.has_key() && (d.op.what == operation::kind::remove || d.format == s.pol.format.tag());
        d.resnapshot = kind == delivery_kind::snapshot && rec.resnapshot;
        return d;
    }

    // ---- bootstrap / expiry ----

    result<void> compact(const sub_state& s, std::uint32_t p, deadline_t deadline) {
        const auto path = admin_path(s.partitions[p]) + "/compaction";
        const auto until =
            std::min(deadline, std::chrono::steady_clock::now() + opts.compaction_timeout);
        bool triggered = false;
        while (std::chrono::steady_clock::now() < until) {
            if (!triggered) {
                auto r = admin("PUT", path, {}, until);
                if (!r) {
                    return error(r.error());
                }
                if (r->status == 202 || r->status / 100 == 2) {
                    triggered = true;
                } else if (r->status != 409) {
                    NEREUS_LOG(events_log(), warn, "PUT {}: {} {}", path, r->status, r->body);
                    return error(errc::broker);
                }
            }
            auto st = admin_json(path, until);
            if (!st) {
                return error(st.error());
            }
            std::string status;
            if (st->is_object()) {
                if (const auto* x = st->as_object().if_contains("status"); x && x->is_string()) {
                    status = std::string(x->as_string());
                }
            }
            if (triggered && status == "SUCCESS") {
                return {};
            }
            if (triggered && status == "ERROR") {
                NEREUS_LOG(events_log(), warn, "compaction of {} failed: {}", s.partitions[p],
                           json::serialize(*st));
                return error(errc::broker);
            }
            // Not triggered yet (another run in progress: ours must include everything
            // committed before bootstrap, so wait and trigger again), or still running.
            std::this_thread::sleep_for(20ms);
        }
        return error(errc::timeout);
    }

    // A trimmed partition (firstEntry > 0): the view's entries below the first readable entry
    // exist only in the compacted view. A reader at earliest gets them (the broker's first read
    // from earliest, doc/compaction.md); this guard checks it: count the view entries a reader
    // gets up to the horizon; fewer than the view holds is an error (errc::broker), never a
    // partial image.
    result<void> verify_view_readable(const sub_state& s,
                                      std::uint32_t p,
                                      const stats_info& st,
                                      deadline_t deadline) {
        if (st.first_entry <= 0 || st.view_entries <= 0 || st.horizon < 0) {
            return {};
        }
        client::reader_options ro;
        ro.topic = s.partitions[p];
        ro.read_compacted = true;
        ro.receiver_queue_size = 256;
        ro.start_message_id = client::message_id::earliest();
        auto f = cl.create_reader(ro, asio::use_future);
        auto r = wait(f, deadline);
        if (!r) {
            return error(r.error() == make_error_code(errc::timeout) ? errc::timeout
                                                                     : errc::broker);
        }
        auto rd = *r;
        auto done = [&rd](result<void> out) {
            rd.close([](result<void>) {});
            return out;
        };
        std::int64_t entries = 0;
        std::int64_t last = -1;
        while (true) {
            auto af = rd.has_message_available(asio::use_future);
            auto a = wait(af, deadline);
            if (!a) {
                return done(error(a.error() == make_error_code(errc::timeout) ? errc::timeout
                                                                              : errc::broker));
            }
            if (!*a) {
                break;
            }
            auto mf = rd.read_next(asio::use_future);
            auto m = wait(mf, deadline);
            if (!m) {
                return done(error(m.error() == make_error_code(errc::timeout) ? errc::timeout
                                                                              : errc::broker));
            }
            if (msg_entry(*m) > st.horizon) {
                break;
            }
            if (msg_entry(*m) != last) {
                ++entries;
                last = msg_entry(*m);
            }
        }
        if (entries < st.view_entries) {
            NEREUS_LOG(events_log(), err,
                       "subscription {}: {} is trimmed to entry {} and a read_compacted reader "
                       "gets {} of the view's {} entries: refusing an incomplete snapshot",
                       s.reg.subscription, s.partitions[p], st.first_entry, entries,
                       st.view_entries);
            return done(error(errc::broker));
        }
        return done({});
    }

    result<bootstrap_info> bootstrap_locked(sub_state& s, bool resnapshot, deadline_t deadline) {
        const auto n = static_cast<std::uint32_t>(s.partitions.size());
        // 1. Hold the history: the durable source subscription exists before the barrier is
        //    taken, so nothing after the barrier can be trimmed.
        for (std::uint32_t p = 0; p < n; ++p) {
            if (auto r = admin_write("PUT", admin_path(s.partitions[p]), {}, deadline); !r) {
                return error(r.error());
            }
            if (auto r = admin_write("PUT",
                                     admin_path(s.partitions[p]) + "/subscription/" +
                                         detail::url_encode(s.source_sub),
                                     R"({"ledgerId":-1,"entryId":-1})", deadline);
                !r) {
                return error(r.error());
            }
        }
        // 2. Snapshot + barrier: a compaction run, then its horizon (published with the view).
        std::vector<stats_info> st(n);
        for (std::uint32_t p = 0; p < n; ++p) {
            NEREUS_TRY(compact(s, p, deadline));
            auto x = stats(s, p, deadline);
            if (!x) {
                return error(x.error());
            }
            NEREUS_TRY(verify_view_readable(s, p, *x, deadline));
            st[p] = *x;
        }
        // 3. The new epoch (one CAS).
        bootstrap_info info;
        for (int attempt = 0; attempt < max_cas_attempts; ++attempt) {
            auto rec = read_state(s, deadline);
            if (!rec) {
                return error(rec.error());
            }
            if (rec->exists()) {
                NEREUS_TRY(check_owner(s, *rec));
            }
            state_record next;
            next.epoch = rec->epoch + 1;
            next.resnapshot = resnapshot;
            next.set_partitions(n);
            for (std::uint32_t p = 0; p < n; ++p) {
                next.ledger[p] = st[p].ledger;
                next.barrier[p] = st[p].horizon;
                next.next[p] = st[p].horizon + 1;
            }
            next.ack_ids = rec->ack_ids;
            next.ack_order = rec->ack_order;
            next.owner = rec->owner;
            auto w = write_state(s, next, rec->version, deadline);
            if (!w) {
                return error(w.error());
            }
            if (!*w) {
                continue;
            }
            info.epoch = next.epoch;
            info.resnapshot = resnapshot;
            for (std::uint32_t p = 0; p < n; ++p) {
                info.barriers.push_back(next.barrier[p] >= 0
                                            ? std::optional<cursor>(cursor{
                                                  p, next.epoch, barrier_sequence(next.barrier[p])})
                                            : std::nullopt);
            }
            // 4. Release the history the view covers (mark-delete := barrier).
            for (std::uint32_t p = 0; p < n; ++p) {
                (void)move_source_cursor(s, next, p, deadline);
            }
            for (auto& pr : s.readers) {
                if (pr.r.valid()) {
                    auto old = pr.r;
                    old.close([](result<void>) {});
                }
                pr = part_reader{};
            }
            NEREUS_LOG(events_log(), info, "subscription {}: epoch {} bootstrapped{}",
                       s.reg.subscription, next.epoch, resnapshot ? " (resnapshot)" : "");
            return info;
        }
        return error(errc::conflict);
    }

    result<void> move_source_cursor(const sub_state& s,
                                    const state_record& rec,
                                    std::uint32_t p,
                                    deadline_t deadline) {
        const auto held = rec.held_entry(p);
        std::string body = held < 0
                               ? std::string(R"({"ledgerId":-1,"entryId":-1})")
                               : fmt::format(R"({{"ledgerId":{},"entryId":{},"isExcluded":true}})",
                                             rec.ledger[p], held);
        auto r = admin_write("POST",
                             admin_path(s.partitions[p]) + "/subscription/" +
                                 detail::url_encode(s.source_sub) + "/resetcursor",
                             body, deadline, false);
        if (!r) {
            NEREUS_LOG(events_log(), warn, "subscription {}: moving the source cursor of {}: {}",
                       s.reg.subscription, s.partitions[p], r.error().message());
        }
        return r;
    }

    enum class health { ok, expired, superseded };

    // Expiry: the source subscription is gone, its cursor was moved past what we committed
    // (admin skip/reset/clear), or the history after it was trimmed. A failed/timed-out check
    // is an error, never expiry.
    result<health> check(const sub_state& s, const state_record& rec, deadline_t deadline) {
        for (std::uint32_t p = 0; p < rec.partitions; ++p) {
            auto st = stats(s, p, deadline);
            if (!st) {
                return error(st.error());
            }
            const auto held = rec.held_entry(p);
            if (!st->mark_delete) {
                NEREUS_LOG(events_log(), warn, "subscription {}: source subscription on {} is gone",
                           s.reg.subscription, s.partitions[p]);
                return health::expired;
            }
            if (*st->mark_delete > held) {
                NEREUS_LOG(events_log(), warn,
                           "subscription {}: source cursor of {} at {} is past the committed {}",
                           s.reg.subscription, s.partitions[p], *st->mark_delete, held);
                return health::expired;
            }
            if (st->first_entry > held + 1) {
                NEREUS_LOG(events_log(), warn,
                           "subscription {}: history of {} trimmed to {} (needed from {})",
                           s.reg.subscription, s.partitions[p], st->first_entry, held + 1);
                return health::expired;
            }
            if (*st->mark_delete < held) {
                (void)move_source_cursor(s, rec, p, deadline);  // a crash between two writes
            }
            if (!rec.snap_done && st->horizon != rec.barrier[p]) {
                return health::superseded;
            }
        }
        return health::ok;
    }

    // ---- poll ----

    result<std::optional<page>> snapshot_poll(sub_state& s,
                                              state_record& rec,
                                              std::size_t max,
                                              deadline_t wait_until,
                                              deadline_t deadline) {
        const auto now = now_ms();
        if (rec.snap_holder != opts.holder_id) {
            if (!rec.snap_holder.empty() && rec.snap_expiry_ms > now) {
                return std::optional<page>();  // another holder is delivering the snapshot
            }
            rec.snap_holder = opts.holder_id;  // take over: the snapshot starts over
            rec.snap_pos_partition = 0;
            rec.snap_pos_entry = 0;
            rec.snap_final.reset();
            rec.snap_acked.reset();
        }
        rec.snap_expiry_ms = now + s.pol.lease.count();
        page pg;
        pg.kind = delivery_kind::snapshot;
        pg.epoch = rec.epoch;
        pg.resnapshot = rec.resnapshot;
        while (rec.snap_pos_partition < rec.partitions) {
            const auto p = rec.snap_pos_partition;
            if (rec.barrier[p] < 0 || rec.snap_pos_entry > rec.barrier[p]) {
                rec.snap_pos_partition++;
                rec.snap_pos_entry = 0;
                continue;
            }
            NEREUS_TRY(position_reader(s, p, true, rec.snap_pos_entry, rec, deadline));
            auto& pr = s.readers[p];
            bool exhausted = false;
            auto n = collect(pr, rec.snap_pos_entry, rec.barrier[p], max, wait_until, exhausted);
            if (!n) {
                return error(n.error());
            }
            if (*n == 0) {
                if (!exhausted) {
                    return std::optional<page>();  // deadline
                }
                rec.snap_pos_partition++;
                rec.snap_pos_entry = 0;
                continue;
            }
            for (std::size_t i = 0; i < *n; ++i) {
                pg.events.push_back(to_delivery(s, pr.buf[i], p, rec, delivery_kind::snapshot));
            }
            pg.through = pg.events.back().at;
            break;
        }
        if (pg.events.empty()) {
            pg.snapshot_complete = true;
            pg.through = cursor{0, rec.epoch, 0};
            rec.snap_final = std::make_pair(0U, std::uint64_t{0});
            for (std::uint32_t p = 0; p < rec.partitions; ++p) {
                pg.barriers.push_back(cursor{p, rec.epoch, barrier_sequence(rec.barrier[p])});
            }
        }
        return std::optional<page>(std::move(pg));
    }

    result<std::optional<page>> event_poll(sub_state& s,
                                           state_record& rec,
                                           std::size_t max,
                                           deadline_t wait_until,
                                           deadline_t deadline,
                                           bool& gap) {
        const auto now = now_ms();
        page pg;
        pg.kind = delivery_kind::event;
        pg.epoch = rec.epoch;
        const bool ordered = s.pol.order == lease_order::per_partition;
        pg.in_order = ordered;
        // Partitions with a leased page (ordered: nothing later of them is leased meanwhile).
        std::vector<bool> busy(rec.partitions, false);
        for (const auto& [k, l] : rec.leases) {
            if (k.first < rec.partitions) {
                busy[k.first] = true;
            }
        }
        // 1. An expired lease is re-leased first (its page is redelivered, to anyone). Ordered:
        //    only the partition's earliest leased page (a record written under `unordered` may
        //    hold several; they are then redelivered one after the other, in order).
        std::vector<bool> seen(rec.partitions, false);
        for (auto& [k, l] : rec.leases) {
            const auto [p, from] = k;
            const bool earliest = p < rec.partitions && !seen[p];
            if (p < rec.partitions) {
                seen[p] = true;
            }
            if (l.expiry_ms > now || (ordered && !earliest)) {
                continue;
            }
            NEREUS_TRY(position_reader(s, p, false, from, rec, deadline));
            auto& pr = s.readers[p];
            bool exhausted = false;
            auto n =
                collect(pr, from, l.through_entry, std::numeric_limits<std::size_t>::max(),
                        std::max(wait_until, std::chrono::steady_clock::now() + 1s), exhausted);
            if (!n) {
                return error(n.error());
            }
            if (*n == 0 || msg_entry(pr.buf[0]) != from ||
                msg_entry(pr.buf[*n - 1]) != l.through_entry) {
                if (*n > 0 || exhausted) {
                    gap = true;  // the leased history is not readable any more
                }
                return std::optional<page>();
            }
            for (std::size_t i = 0; i < *n; ++i) {
                pg.events.push_back(to_delivery(s, pr.buf[i], p, rec, delivery_kind::event));
            }
            pg.through = pg.events.back().at;
            l.holder = opts.holder_id;
            l.expiry_ms = now + s.pol.lease.count();
            return std::optional<page>(std::move(pg));
        }
        // 2. The next unleased entries of a partition (round robin). Ordered: only of a
        //    partition with no leased page, so a page whose holder died is never overtaken.
        for (std::uint32_t i = 0; i < rec.partitions; ++i) {
            const auto p = (s.rr + i) % rec.partitions;
            if (ordered && busy[p]) {
                continue;
            }
            const auto from = rec.next[p];
            NEREUS_TRY(position_reader(s, p, false, from, rec, deadline));
            auto& pr = s.readers[p];
            bool exhausted = false;
            auto n = collect(pr, from, std::numeric_limits<std::int64_t>::max(), max, wait_until,
                             exhausted);
            if (!n) {
                return error(n.error());
            }
            if (*n == 0) {
                continue;
            }
            if (msg_entry(pr.buf[0]) != from) {
                gap = true;  // entries [from, first) are gone: trimmed history
                return std::optional<page>();
            }
            for (std::size_t j = 0; j < *n; ++j) {
                pg.events.push_back(to_delivery(s, pr.buf[j], p, rec, delivery_kind::event));
            }
            pg.through = pg.events.back().at;
            const auto last = msg_entry(pr.buf[*n - 1]);
            rec.leases[{p, from}] = detail::lease_entry{last, pg.through.sequence, opts.holder_id,
                                                        now + s.pol.lease.count()};
            rec.next[p] = last + 1;
            s.rr = p + 1;
            return std::optional<page>(std::move(pg));
        }
        return std::optional<page>();
    }

    // `wait_until` bounds the wait for messages; every broker request has its own bound
    // (operation_timeout), so a short poll never turns a request into an unknown outcome.
    result<page> poll_locked(sub_state& s, std::size_t max, deadline_t wait_until) {
        max = std::max<std::size_t>(1, std::min(max, s.pol.pages.max_events));
        int conflicts = 0;
        while (true) {
            const auto deadline = std::chrono::steady_clock::now() + opts.operation_timeout;
            auto rec = read_state(s, deadline);
            if (!rec) {
                return error(rec.error());
            }
            if (!rec->exists()) {
                return error(errc::not_bootstrapped);
            }
            NEREUS_TRY(check_owner(s, *rec));
            auto h = check(s, *rec, deadline);
            if (!h) {
                return error(h.error());
            }
            if (*h == health::expired) {
                if (s.pol.expiry == expiry_policy::stop) {
                    return error(errc::expired);
                }
                auto b = bootstrap_locked(s, true, deadline);
                if (!b) {
                    return error(b.error());
                }
                continue;
            }
            if (*h == health::superseded) {
                // Someone else compacted the source while the snapshot was being delivered:
                // the view at our barrier is gone, so the snapshot is retaken at a new epoch.
                auto b = bootstrap_locked(s, rec->resnapshot, deadline);
                if (!b) {
                    return error(b.error());
                }
                continue;
            }
            const auto version = rec->version;
            std::optional<page> pg;
            bool gap = false;
            if (!rec->snap_done) {
                auto r = snapshot_poll(s, *rec, max, wait_until, deadline);
                if (!r) {
                    return error(r.error());
                }
                pg = std::move(*r);
            } else {
                auto r = event_poll(s, *rec, max, wait_until, deadline, gap);
                if (!r) {
                    return error(r.error());
                }
                pg = std::move(*r);
            }
            if (gap) {
                NEREUS_LOG(events_log(), warn, "subscription {}: a gap in the source history",
                           s.reg.subscription);
                if (s.pol.expiry == expiry_policy::stop) {
                    return error(errc::expired);
                }
                auto b = bootstrap_locked(s, true, deadline);
                if (!b) {
                    return error(b.error());
                }
                continue;
            }
            if (!pg) {
                const auto now = std::chrono::steady_clock::now();
                if (now >= wait_until) {
                    return page{};
                }
                std::this_thread::sleep_for(
                    std::min<std::chrono::steady_clock::duration>(25ms, wait_until - now));
                continue;
            }
            auto w = write_state(s, *rec, version, deadline);
            if (!w) {
                return error(w.error());
            }
            if (!*w) {
                if (++conflicts > max_cas_attempts) {
                    return error(errc::conflict);
                }
                continue;  // another process changed the record: lease again from it
            }
            if (pg->kind == delivery_kind::event) {
                // The page is leased: its messages leave the read-ahead buffer.
                auto& pr = s.readers[pg->through.partition];
                while (!pr.buf.empty() &&
                       msg_entry(pr.buf.front()) <= entry_of(pg->through.sequence)) {
                    pr.buf.pop_front();
                }
            }
            return std::move(*pg);
        }
    }

    // ---- ack ----

    result<ack_result> ack_locked(sub_state& s,
                                  std::string_view ack_id,
                                  const cursor& through,
                                  std::chrono::milliseconds lease,
                                  deadline_t deadline) {
        for (int attempt = 0; attempt < max_cas_attempts; ++attempt) {
            auto rec = read_state(s, deadline);
            if (!rec) {
                return error(rec.error());
            }
            if (!rec->exists()) {
                return error(errc::not_bootstrapped);
            }
            if (auto it = rec->ack_ids.find(std::string(ack_id)); it != rec->ack_ids.end()) {
                return ack_result{
                    cursor{it->second.partition, it->second.epoch, it->second.sequence}, true};
            }
            NEREUS_TRY(check_owner(s, *rec));
            if (through.epoch != rec->epoch) {
                return error(errc::epoch_mismatch);
            }
            const auto version = rec->version;
            const auto now = now_ms();
            std::optional<std::uint32_t> moved;
            if (!rec->snap_done) {
                if (rec->snap_holder != opts.holder_id) {
                    return error(errc::lease_lost);
                }
                if (through.sequence == 0) {
                    if (!rec->snap_final) {
                        return error(errc::ack_beyond_delivered);
                    }
                    rec->snap_done = true;
                    rec->snap_holder.clear();
                    for (std::uint32_t p = 0; p < rec->partitions; ++p) {
                        rec->committed[p] = barrier_sequence(rec->barrier[p]);
                    }
                } else {
                    const auto e = entry_of(through.sequence);
                    if (through.partition >= rec->partitions ||
                        e > rec->barrier[through.partition] ||
                        through.partition > rec->snap_pos_partition) {
                        return error(errc::ack_beyond_delivered);
                    }
                    if (through.partition < rec->snap_pos_partition || e < rec->snap_pos_entry) {
                        return error(errc::ack_behind_committed);
                    }
                    rec->snap_pos_entry = e + 1;
                    rec->snap_acked = std::make_pair(through.partition, through.sequence);
                    rec->snap_expiry_ms = now + s.pol.lease.count();
                }
            } else {
                const auto p = through.partition;
                if (p >= rec->partitions) {
                    return error(errc::invalid_argument);
                }
                auto found = rec->leases.end();
                for (auto it = rec->leases.begin(); it != rec->leases.end(); ++it) {
                    if (it->first.first == p && it->second.through_seq == through.sequence) {
                        found = it;
                        break;
                    }
                }
                if (found == rec->leases.end()) {
                    bool behind = rec->committed[p] && through.sequence <= *rec->committed[p];
                    for (const auto& [k, d] : rec->done) {
                        behind = behind || (k.first == p && d.through_seq == through.sequence);
                    }
                    NEREUS_LOG(events_log(), info,
                               "subscription {}: ack {} of {}:{}:{} refused; committed {}",
                               s.reg.subscription, ack_id, p, through.epoch, through.sequence,
                               rec->committed[p] ? std::to_string(*rec->committed[p]) : "none");
                    return error(behind ? errc::ack_behind_committed : errc::ack_beyond_delivered);
                }
                if (found->second.holder != opts.holder_id) {
                    return error(errc::lease_lost);
                }
                rec->done[found->first] =
                    detail::done_entry{found->second.through_entry, found->second.through_seq};
                rec->leases.erase(found);
                const auto before = rec->committed[p];
                rec->advance(p);
                if (rec->committed[p] != before) {
                    moved = p;
                }
            }
            if (lease > 0ms) {
                for (auto& [k, l] : rec->leases) {
                    if (l.holder == opts.holder_id) {
                        l.expiry_ms = now + lease.count();
                    }
                }
                if (rec->snap_holder == opts.holder_id) {
                    rec->snap_expiry_ms = now + lease.count();
                }
            }
            rec->ack_ids[std::string(ack_id)] = detail::ack_record{
                through.partition, through.epoch, through.sequence, ++rec->ack_order};
            rec->trim_ack_ids();
            auto w = write_state(s, *rec, version, deadline);
            if (!w) {
                return error(w.error());
            }
            if (!*w) {
                continue;
            }
            if (rec->snap_done && !moved && through.sequence == 0) {
                for (std::uint32_t p = 0; p < rec->partitions; ++p) {
                    (void)move_source_cursor(s, *rec, p, deadline);
                }
            } else if (moved) {
                (void)move_source_cursor(s, *rec, *moved, deadline);
            }
            return ack_result{through, false};
        }
        return error(errc::conflict);
    }

    // ---- registration ----

    result<void> ensure_metadata(sub_state& s, deadline_t deadline) {
        NEREUS_TRY(admin_write("PUT", admin_path(s.meta_topic), {}, deadline));
        NEREUS_TRY(admin_write(
            "PUT", admin_path(s.meta_topic) + "/subscription/" + detail::url_encode(s.state_sub),
            {}, deadline));
        return {};
    }

    result<void> claim_ownership(sub_state& s, deadline_t deadline) {
        if (!s.owner_claim) {
            NEREUS_TRY(subscribe_owner(s, deadline));
        }
        return write_owner(s, deadline);
    }

    // The claim: an Exclusive consumer on the identity's owner subscription (the broker
    // refuses a second one while this connection lives).
    result<void> subscribe_owner(sub_state& s, deadline_t deadline) {
        client::consumer_options co;
        co.topics = {s.meta_topic};
        co.subscription = s.state_sub + ".owner";
        co.type = client::subscription_type::exclusive;
        co.consumer_name = opts.holder_id;
        auto f = cl.subscribe(co, asio::use_future);
        auto c = wait(f, deadline);
        if (!c) {
            if (c.error() == make_error_code(errc::timeout)) {
                return error(errc::timeout);
            }
            NEREUS_LOG(events_log(), info, "subscription {}: exclusive claim refused: {}",
                       s.reg.subscription, c.error().message());
            return error(errc::ownership_denied);
        }
        s.owner_claim = *c;
        return {};
    }

    // Fences every earlier owner: the record names this holder (every write checks it).
    result<void> write_owner(sub_state& s, deadline_t deadline) {
        for (int attempt = 0; attempt < max_cas_attempts; ++attempt) {
            auto rec = read_state(s, deadline);
            if (!rec) {
                return error(rec.error());
            }
            if (!rec->exists()) {
                return {};  // bootstrap writes the owner
            }
            const auto version = rec->version;
            rec->owner = opts.holder_id;
            auto w = write_state(s, *rec, version, deadline);
            if (!w) {
                return error(w.error());
            }
            if (*w) {
                return {};
            }
        }
        return error(errc::conflict);
    }
};

event_subscriptions::event_subscriptions(std::unique_ptr<impl> i) : impl_(std::move(i)) {}

event_subscriptions::~event_subscriptions() {
    if (impl_) {
        impl_->cl.close();
    }
}

result<std::unique_ptr<event_subscriptions>> event_subscriptions::open(host_options o) {
    if (o.holder_id.empty()) {
        o.holder_id = default_holder();
    }
    std::replace(o.holder_id.begin(), o.holder_id.end(), ',', '_');
    auto h = detail::admin_http::open(o.admin_url);
    if (!h) {
        return error(h.error());
    }
    return std::unique_ptr<event_subscriptions>(
        new event_subscriptions(std::make_unique<impl>(std::move(o), std::move(*h))));
}

const std::string& event_subscriptions::holder_id() const noexcept {
    return impl_->opts.holder_id;
}

const registration* event_subscriptions::find_registration(std::string_view subscription) const {
    std::lock_guard lock(impl_->mu);
    auto it = impl_->subs.find(subscription);
    return it == impl_->subs.end() ? nullptr : &it->second.reg;
}

result<void> event_subscriptions::declare_policy(std::string name, policy p) {
    if (p.source_topic.empty() || name.empty()) {
        return error(errc::invalid_argument);
    }
    std::lock_guard lock(impl_->mu);
    impl_->policies[std::move(name)] = std::move(p);
    return {};
}

result<void> event_subscriptions::register_subscription(const registration& r,
                                                        const projection_repository* store,
                                                        deadline_t deadline) {
    std::lock_guard lock(impl_->mu);
    auto& m = *impl_;
    auto pit = m.policies.find(r.policy);
    if (pit == m.policies.end()) {
        return error(errc::unknown_policy);
    }
    const auto& pol = pit->second;
    if (r.subscription.empty()) {
        return error(errc::invalid_argument);
    }
    if (pol.restart == restart_policy::resume && (store == nullptr || !store->durable())) {
        return error(errc::resume_needs_durable_store);
    }
    sub_state s;
    s.reg = r;
    s.pol = pol;
    s.source = full_topic(pol.source_scope, pol.source_topic);
    s.source_sub = pol.metadata_namespace + "." + r.subscription;
    s.meta_topic = full_topic(pol.metadata_scope, pol.metadata_namespace + ".state");
    s.state_sub = pol.metadata_namespace + "." + r.subscription;
    {
        auto f = m.cl.get_partitions(s.source, asio::use_future);
        auto parts = m.wait(f, deadline);
        if (!parts) {
            return error(parts.error() == make_error_code(errc::timeout) ? errc::timeout
                                                                         : errc::broker);
        }
        s.partitions = std::move(*parts);
    }
    s.readers.resize(s.partitions.size());
    NEREUS_TRY(m.ensure_metadata(s, deadline));
    if (pol.owner == ownership::exclusive_fenced) {
        NEREUS_TRY(m.claim_ownership(s, deadline));
    }
    auto rec = m.read_state(s, deadline);
    if (!rec) {
        return error(rec.error());
    }
    if (!rec->exists() || pol.restart == restart_policy::snapshot ||
        rec->partitions != s.partitions.size()) {
        auto b = m.bootstrap_locked(s, false, deadline);
        if (!b) {
            return error(b.error());
        }
        if (pol.owner == ownership::exclusive_fenced) {
            // The first record: write the owner into it.
            NEREUS_TRY(m.claim_ownership(s, deadline));
        }
    } else if (!rec->snap_done && rec->snap_holder == m.opts.holder_id) {
        // A restart under the same holder id in the middle of the snapshot: the pages it had
        // collected died with the previous process, so the snapshot must start over (never
        // continue into a partial image).
        for (int attempt = 0; attempt < max_cas_attempts; ++attempt) {
            auto cur = m.read_state(s, deadline);
            if (!cur) {
                return error(cur.error());
            }
            if (cur->snap_done || cur->snap_holder != m.opts.holder_id) {
                break;
            }
            const auto version = cur->version;
            cur->snap_holder.clear();
            cur->snap_expiry_ms = 0;
            auto w = m.write_state(s, *cur, version, deadline);
            if (!w) {
                return error(w.error());
            }
            if (*w) {
                break;
            }
        }
    }
    m.subs.erase(r.subscription);
    m.subs.emplace(r.subscription, std::move(s));
    return {};
}

result<bootstrap_info> event_subscriptions::bootstrap(std::string_view subscription,
                                                      deadline_t deadline) {
    std::lock_guard lock(impl_->mu);
    auto it = impl_->subs.find(subscription);
    if (it == impl_->subs.end()) {
        return error(errc::not_registered);
    }
    return impl_->bootstrap_locked(it->second, false, deadline);
}

result<page> event_subscriptions::poll(std::string_view subscription,
                                       std::size_t max,
                                       deadline_t deadline) {
    std::lock_guard lock(impl_->mu);
    auto it = impl_->subs.find(subscription);
    if (it == impl_->subs.end()) {
        return error(errc::not_registered);
    }
    return impl_->poll_locked(it->second, max, deadline);
}

result<ack_result> event_subscriptions::ack(std::string_view ack_id,
                                            std::string_view subscription,
                                            const cursor& through,
                                            std::chrono::milliseconds lease,
                                            deadline_t deadline) {
    std::lock_guard lock(impl_->mu);
    auto it = impl_->subs.find(subscription);
    if (it == impl_->subs.end()) {
        return error(errc::not_registered);
    }
    if (ack_id.empty()) {
        return error(errc::invalid_argument);
    }
    return impl_->ack_locked(it->second, ack_id, through, lease, deadline);
}

result<subscription_position> event_subscriptions::position(std::string_view subscription,
                                                            deadline_t deadline) {
    std::lock_guard lock(impl_->mu);
    auto it = impl_->subs.find(subscription);
    if (it == impl_->subs.end()) {
        return error(errc::not_registered);
    }
    auto rec = impl_->read_state(it->second, deadline);
    if (!rec) {
        return error(rec.error());
    }
    subscription_position pos;
    pos.epoch = rec->epoch;
    pos.snapshot_complete = rec->snap_done;
    pos.leased_pages = rec->leases.size() + (rec->snap_done || rec->snap_holder.empty() ? 0 : 1);
    for (std::uint32_t p = 0; p < rec->partitions; ++p) {
        pos.committed.push_back(
            rec->committed[p] ? std::optional<cursor>(cursor{p, rec->epoch, *rec->committed[p]})
                              : std::nullopt);
    }
    return pos;
}

result<void> event_subscriptions::release(std::string_view subscription, deadline_t deadline) {
    std::lock_guard lock(impl_->mu);
    auto it = impl_->subs.find(subscription);
    if (it == impl_->subs.end()) {
        return error(errc::not_registered);
    }
    auto& s = it->second;
    auto& m = *impl_;
    for (int attempt = 0; attempt < max_cas_attempts; ++attempt) {
        auto rec = m.read_state(s, deadline);
        if (!rec) {
            return error(rec.error());
        }
        if (!rec->exists()) {
            break;
        }
        const auto version = rec->version;
        bool changed = false;
        for (auto& [k, l] : rec->leases) {
            if (l.holder == m.opts.holder_id) {
                l.expiry_ms = 0;
                changed = true;
            }
        }
        if (rec->snap_holder == m.opts.holder_id) {
            rec->snap_expiry_ms = 0;
            changed = true;
        }
        if (!changed) {
            break;
        }
        auto w = m.write_state(s, *rec, version, deadline);
        if (!w) {
            return error(w.error());
        }
        if (*w) {
            break;
        }
    }
    if (s.owner_claim) {
        auto f = s.owner_claim->close(asio::use_future);
        (void)m.wait(f, deadline);
        s.owner_claim.reset();
    }
    return {};
}

}  // namespace nereus::events
