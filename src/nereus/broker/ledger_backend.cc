#include "nereus/broker/ledger_backend.h"

#include "nereus/base/file_system.h"
#include "nereus/broker/logger.h"
#include "nereus/ledger/errc.h"
#include "nereus/ledger/managed_cursor.h"
#include "nereus/ledger/managed_ledger.h"
#include "nereus/ledger/records.h"
#include "nereus/meta/rocksdb_store.h"
#include "nereus/meta/sync.h"
#include "nereus/objects/fs_object_store.h"
#include "nereus/proto/server_error.h"
#include "nereus/storage/stream_store.h"

#include <condition_variable>
#include <filesystem>
#include <map>
#include <mutex>
#include <thread>

namespace nereus::broker {

namespace {

constexpr auto session_ttl = std::chrono::seconds(30);
// Admin records live under this prefix of the metadata store (doc/format/admin.md).
constexpr std::string_view admin_prefix = "admin/";

cursor::fence to_fence(ack_fence f) {
    return cursor::fence{f.generation, f.epoch};
}
ack_fence from_fence(cursor::fence f) {
    return ack_fence{f.generation, f.epoch};
}

// Maps a ledger ack completion to the broker's vocabulary: applied → applied; already acked →
// no effect; stale generation/epoch → stale (both answered success and counted: the issue's
// wire contract, doc/cursor-semantics.md §1); state_full or an error → an error (the ack did
// not persist, and the client is told so).
void deliver_ack(const ack_callback& done, const result<cursor::op_result>& r) {
    if (!r) {
        done(nereus::error(r.error()));
        return;
    }
    switch (r->status) {
        case cursor::ack_status::ok:
            done(ack_outcome::applied);
            return;
        case cursor::ack_status::already_acked:
            done(ack_outcome::no_effect);
            return;
        case cursor::ack_status::stale_generation:
        case cursor::ack_status::stale_epoch:
            done(ack_outcome::stale);
            return;
        case cursor::ack_status::state_full:
            done(nereus::error(proto::error_kind::persistence_failure));
            return;
    }
    done(ack_outcome::no_effect);
}

class ledger_cursor final : public subscription_cursor {
public:
    ledger_cursor(std::shared_ptr<ledger::managed_cursor> c, std::uint64_t ledger_id)
        : c_(std::move(c)), ledger_id_(ledger_id) {}

    const std::string& name() const override { return c_->name(); }
    bool durable() const override { return c_->durable(); }

    result<std::vector<dispatch_entry>> read(std::size_t max_entries) override {
        auto r = c_->read(max_entries);
        if (!r) {
            return nereus::error(r.error());
        }
        std::vector<dispatch_entry> out;
        out.reserve(r->entries.size());
        for (const auto& e : r->entries) {
            dispatch_entry d;
            d.pos = {ledger_id_, e.at};
            d.publish_time = e.publish_time;
            d.batch_size = e.batch_size;
            if (e.remaining) {
                for (auto w : e.remaining->words()) {
                    d.remaining.push_back(static_cast<std::int64_t>(w));
                }
            }
            // One copy per read; every delivery of this read shares it (style R7).
            d.data =
                std::make_shared<const std::vector<std::byte>>(e.payload.begin(), e.payload.end());
            d.fence = from_fence(e.fence);
            out.push_back(std::move(d));
        }
        return out;
    }

    void rewind() override { c_->rewind(); }

    void ack(ack_fence f, std::uint64_t entry, ack_callback done) override {
        c_->ack(to_fence(f), entry,
                [done = std::move(done)](result<cursor::op_result> r) { deliver_ack(done, r); });
    }

    void ack_batch_index(ack_fence f,
                         std::uint64_t entry,
                         std::uint32_t batch_size,
                         std::span<const std::int64_t> remaining,
                         ack_callback done) override {
        if (batch_size == 0 || batch_size > cursor::batch_bits::max_size) {
            done(ack_outcome::no_effect);
            return;
        }
        // Pulsar's ack_set has 1 = still unacked; the cursor wants the acked indices.
        auto acked = cursor::batch_bits::none_set(batch_size);
        for (std::uint32_t i = 0; i < batch_size; ++i) {
            const std::size_t w = i / 64;
            const bool still = w < remaining.size() &&
                               ((static_cast<std::uint64_t>(remaining[w]) >> (i % 64)) & 1U) != 0;
            if (!still) {
                acked.set(i);
            }
        }
        c_->ack_batch_index(
            to_fence(f), entry, std::move(acked),
            [done = std::move(done)](result<cursor::op_result> r) { deliver_ack(done, r); });
    }

    void ack_cumulative(ack_fence f, std::uint64_t entry, ack_callback done) override {
        c_->ack_cumulative(
            to_fence(f), entry, std::nullopt, 0, {},
            [done = std::move(done)](result<cursor::op_result> r) { deliver_ack(done, r); });
    }

    result<ack_fence> seek(const seek_target& t) override {
        cursor::reset_target rt;
        switch (t.where) {
            case seek_target::kind::earliest:
                rt = cursor::reset_target::earliest();
                break;
            case seek_target::kind::latest:
                rt = cursor::reset_target::latest();
                break;
            case seek_target::kind::to_entry:
                rt = cursor::reset_target::to_offset(t.entry_id);
                break;
            case seek_target::kind::to_time:
                rt = cursor::reset_target::to_time(t.publish_time);
                break;
            case seek_target::kind::clear_backlog:
            case seek_target::kind::skip: {
                auto r =
                    t.where == seek_target::kind::skip ? c_->skip(t.count) : c_->clear_backlog();
                if (!r) {
                    return nereus::error(r.error());
                }
                return from_fence(r->current);
            }
        }
        auto r = c_->reset(rt);
        if (!r) {
            return nereus::error(r.error());
        }
        return from_fence(r->current);
    }

    ack_fence current_fence() const override { return from_fence(c_->current_fence()); }

    std::optional<position> mark_delete_position() const override {
        const auto mdo = c_->mark_delete();
        if (mdo == 0) {
            return std::nullopt;
        }
        return position{ledger_id_, mdo - 1};
    }

    std::uint64_t backlog() const override { return c_->backlog(); }
    void set_connected(bool connected) override { c_->set_connected(connected); }
    void record_redelivery(std::uint64_t entry_id) override { c_->record_redelivery(entry_id); }
    std::uint32_t redelivery_count(std::uint64_t entry_id) const override {
        return c_->redelivery_count(entry_id);
    }

    cursor_details details() const override {
        const auto snap = c_->snapshot();
        cursor_details d;
        d.mark_delete = snap.mark_delete;
        d.read_position = std::max<std::uint64_t>(c_->read_position(), snap.mark_delete);
        for (const auto& r : snap.ranges) {
            d.acked_ranges.emplace_back(r.begin, r.end);
        }
        d.partly_acked_batches = snap.batches.size();
        d.fence = ack_fence{snap.generation, snap.epoch};
        d.state = cursor::to_string(snap.life);
        d.spilled = snap.spilled;
        d.root_version = snap.root_version;
        d.properties = snap.properties;
        return d;
    }

    result<void> set_properties(std::map<std::string, std::string> p) override {
        auto r = c_->set_properties(std::move(p));
        if (!r) {
            return nereus::error(r.error());
        }
        return {};
    }

private:
    std::shared_ptr<ledger::managed_cursor> c_;
    const std::uint64_t ledger_id_;
};

class ledger_topic final : public topic_store {
public:
    ledger_topic(std::string name,
                 std::shared_ptr<ledger::managed_ledger> l,
                 storage::stream_store* s)
        : name_(std::move(name)), l_(std::move(l)), streams_(s) {}

    const std::string& name() const override { return name_; }
    std::uint64_t ledger_id() const override { return l_->ledger_id(); }

    void append(std::span<const std::byte> entry,
                const append_info& info,
                append_callback done) override {
        ledger::append_options o;
        o.publish_time = info.publish_time;
        o.batch_size = std::max<std::uint32_t>(1, info.batch_size);
        l_->append(entry, o, [done = std::move(done)](result<ledger::message_id> r) {
            if (!r) {
                done(nereus::error(r.error()));
                return;
            }
            done(position{r->ledger_id, r->entry_id});
        });
    }

    result<std::shared_ptr<subscription_cursor>> open_subscription(const std::string& name,
                                                                   const subscription_start& start,
                                                                   bool durable) override {
        const auto id = l_->ledger_id();
        if (durable) {
            if (auto c = l_->find_cursor(name)) {
                return std::make_shared<ledger_cursor>(std::move(*c), id);
            }
        }
        cursor::initial_position where = cursor::initial_position::latest();
        switch (start.where) {
            case subscription_start::kind::latest:
                break;
            case subscription_start::kind::earliest:
                where = cursor::initial_position::earliest();
                break;
            case subscription_start::kind::at_entry:
                where = cursor::initial_position::at_offset(
                    std::min<std::uint64_t>(start.entry_id, l_->info().end));
                break;
        }
        ledger::subscription_options so;
        so.durable = durable;
        auto c = l_->open_cursor(name, where, so);
        if (!c && durable && c.error() == make_error_code(ledger::errc::cursor_exists)) {
            c = l_->find_cursor(name);
        }
        if (!c) {
            return nereus::error(c.error());
        }
        if (!durable && start.where == subscription_start::kind::at_entry &&
            start.batch_index > 0 && (*c)->mark_delete() == start.entry_id) {
            skip_batch_prefix(**c, start.entry_id, static_cast<std::uint32_t>(start.batch_index));
        }
        return std::make_shared<ledger_cursor>(std::move(*c), id);
    }

    // A reader starting inside a batch: indexes below `index` of `entry` are marked acked in
    // its (non-durable, in-memory) cursor, so the entry goes out with an ack_set skipping them.
    void skip_batch_prefix(ledger::managed_cursor& c, std::uint64_t entry, std::uint32_t index) {
        const auto info = l_->info();
        auto rb =
            streams_->read(storage::stream_id(info.stream_id), storage::offset(entry), 1, 1 << 20);
        if (!rb || rb->empty()) {
            return;
        }
        auto h = ledger::format::decode_entry_header((*rb)[0].payload);
        if (!h || index >= h->batch_size || h->batch_size > cursor::batch_bits::max_size) {
            return;  // not a batch, or the index is past it: start at the entry
        }
        auto acked = cursor::batch_bits::none_set(h->batch_size);
        for (std::uint32_t i = 0; i < index; ++i) {
            acked.set(i);
        }
        (void)c.ack_batch_index_sync(c.current_fence(), entry, std::move(acked));
    }

    result<void> delete_subscription(const std::string& name) override {
        return l_->delete_cursor(name);
    }

    std::vector<std::string> subscription_names() const override { return l_->cursor_names(); }

    std::optional<last_entry_info> last_entry() const override {
        const auto info = l_->info();
        if (info.end == 0 || info.end <= info.start) {
            return std::nullopt;
        }
        last_entry_info le{{info.ledger_id, info.end - 1}, 1};
        // The batch size lives in the entry header; one small read.
        if (auto rb = streams_->read(storage::stream_id(info.stream_id),
                                     storage::offset(info.end - 1), 1, 1 << 20);
            rb && !rb->empty()) {
            if (auto h = ledger::format::decode_entry_header((*rb)[0].payload)) {
                le.batch_size = h->batch_size;
            }
        }
        return le;
    }

    topic_details details() const override {
        const auto info = l_->info();
        return topic_details{info.ledger_id, info.start, info.end};
    }
    const std::shared_ptr<ledger::managed_ledger>& ledger() const { return l_; }

    // Idempotent: the server closes its open topics at stop, the backend every topic at close.
    result<void> close() override {
        std::lock_guard lock(close_mu_);
        if (closed_) {
            return {};
        }
        closed_ = true;
        return l_->close();
    }

private:
    std::mutex close_mu_;
    bool closed_ = false;
    const std::string name_;
    std::shared_ptr<ledger::managed_ledger> l_;
    storage::stream_store* streams_;
};

class ledger_backend_impl final : public ledger_backend {
public:
    ~ledger_backend_impl() override { (void)close(); }

    result<void> init(ledger_backend_options o) {
        options_ = std::move(o);
        if (options_.fs == nullptr) {
            std::error_code ec;
            std::filesystem::create_directories(options_.data_dir, ec);
            if (ec) {
                return nereus::error(ec);
            }
        }
        if (options_.meta != nullptr) {
            meta_ = options_.meta;
        } else {
            auto m = meta::rocksdb_store::open(options_.data_dir + "/meta");
            if (!m) {
                return nereus::error(m.error());
            }
            owned_meta_ = std::move(*m);
            meta_ = owned_meta_.get();
        }
        auto fs = options_.fs != nullptr ? options_.fs : posix_file_system();
        auto s = storage::stream_store::open(fs, options_.data_dir + "/streams");
        if (!s) {
            return nereus::error(s.error());
        }
        streams_ = std::move(*s);
        auto ob = objects::fs_object_store::open(fs, options_.data_dir + "/objects");
        if (!ob) {
            return nereus::error(ob.error());
        }
        objects_ = std::move(*ob);
        auto session = meta::open_session_sync(*meta_, session_ttl);
        if (!session) {
            return nereus::error(session.error());
        }
        session_ = *session;
        keeper_ = std::thread([this] { keep_alive_loop(); });
        return {};
    }

    result<std::shared_ptr<topic_store>> open_topic(const std::string& name, bool create) override {
        std::lock_guard lock(mu_);
        if (closed_) {
            return nereus::error(proto::error_kind::unavailable);
        }
        if (auto it = topics_.find(name); it != topics_.end()) {
            return it->second;
        }
        ledger::ledger_options lo;
        lo.create_if_missing = create && options_.auto_create;
        auto l = ledger::managed_ledger::open_writable(
            ledger::ledger_env{meta_, objects_.get(), streams_.get(), session_}, name, lo);
        if (!l) {
            if (l.error() == make_error_code(ledger::errc::topic_not_found)) {
                return nereus::error(proto::error_kind::topic_not_found);
            }
            return nereus::error(l.error());
        }
        auto t = std::make_shared<ledger_topic>(name, std::move(*l), streams_.get());
        topics_.emplace(name, t);
        return t;
    }

    std::vector<std::string> topic_names() const override {
        std::vector<std::string> out;
        auto recs = meta::list_sync(*meta_, "ledgers/");
        if (!recs) {
            return out;
        }
        constexpr std::string_view suffix = "/registry";
        for (const auto& kr : *recs) {
            std::string_view k = kr.key;
            if (k.size() <= 8 + suffix.size() || k.substr(k.size() - suffix.size()) != suffix) {
                continue;
            }
            const auto mid = k.substr(8, k.size() - 8 - suffix.size());
            if (auto n = ledger::format::unescape_name(mid)) {
                out.push_back(std::move(*n));
            }
        }
        return out;
    }

    // Order: cursors deleted (each durable, snapshots removed), the ledger closed (owner key
    // released), then one multi erasing the registry, retention root and activity records (the
    // topic is gone from here on), then the cursor tombstones and the stream. A crash after the
    // multi leaves only unreferenced keys / a stream whose id is never reused.
    result<void> delete_topic(const std::string& name) override {
        auto opened = open_topic(name, false);
        if (!opened) {
            return nereus::error(opened.error());
        }
        std::shared_ptr<ledger_topic> t;
        {
            std::lock_guard lock(mu_);
            if (auto it = topics_.find(name); it != topics_.end()) {
                t = it->second;
            }
        }
        if (!t) {
            return nereus::error(proto::error_kind::topic_not_found);
        }
        // A failure up to here leaves the topic open and registered (some cursors deleted).
        const auto& l = t->ledger();
        for (const auto& c : l->cursor_names()) {
            if (auto r = l->delete_cursor(c); !r) {
                return r;
            }
        }
        const auto info = l->info();
        {
            std::lock_guard lock(mu_);
            topics_.erase(name);
        }
        if (auto r = t->close(); !r) {
            return r;
        }
        const auto keys = ledger::format::ledger_keys::make(name);
        std::vector<meta::op> ops;
        for (const auto& k : {keys.registry, keys.retention, keys.activity}) {
            ops.emplace_back(meta::erase{k, meta::any_version});
        }
        if (auto r = meta::multi_sync(*meta_, std::move(ops)); !r) {
            return nereus::error(r.error());
        }
        if (auto recs =
                meta::list_sync(*meta_, "cursors/" + std::to_string(info.ledger_id) + "/")) {
            std::vector<meta::op> erase_cursors;
            for (const auto& kr : *recs) {
                erase_cursors.emplace_back(meta::erase{kr.key, meta::any_version});
            }
            if (!erase_cursors.empty()) {
                (void)meta::multi_sync(*meta_, std::move(erase_cursors));
            }
        }
        if (auto r = streams_->delete_stream(storage::stream_id(info.stream_id)); !r) {
            NEREUS_LOG(broker_log(), warn, "topic deleted, its stream not: topic={} error={}", name,
                       r.error().message());
        }
        NEREUS_LOG(broker_log(), info, "topic deleted topic={} ledger={}", name, info.ledger_id);
        return {};
    }

    result<std::optional<std::string>> get_admin_record(const std::string& key) const override {
        auto r = meta::get_sync(*meta_, std::string(admin_prefix) + key);
        if (!r) {
            return nereus::error(r.error());
        }
        if (!*r) {
            return std::optional<std::string>();
        }
        return std::optional<std::string>((*r)->value);
    }

    result<bool> create_admin_record(const std::string& key, const std::string& value) override {
        auto r = meta::create_sync(*meta_, std::string(admin_prefix) + key, value);
        if (!r) {
            return nereus::error(r.error());
        }
        return r->applied;
    }

    result<bool> replace_admin_record(const std::string& key,
                                      const std::string& expected,
                                      const std::string& value) override {
        auto cur = meta::get_sync(*meta_, std::string(admin_prefix) + key);
        if (!cur) {
            return nereus::error(cur.error());
        }
        if (!*cur || (*cur)->value != expected) {
            return false;
        }
        // Versioned: a concurrent change between the read and the write makes this false.
        auto r = meta::cas_sync(*meta_, std::string(admin_prefix) + key, (*cur)->ver, value);
        if (!r) {
            return nereus::error(r.error());
        }
        return r->applied;
    }

    result<bool> remove_admin_record(const std::string& key) override {
        auto cur = meta::get_sync(*meta_, std::string(admin_prefix) + key);
        if (!cur) {
            return nereus::error(cur.error());
        }
        if (!*cur) {
            return false;
        }
        auto r = meta::remove_sync(*meta_, std::string(admin_prefix) + key, (*cur)->ver);
        if (!r) {
            return nereus::error(r.error());
        }
        return r->applied;
    }

    result<std::vector<std::pair<std::string, std::string>>> list_admin_records(
        const std::string& prefix) const override {
        auto recs = meta::list_sync(*meta_, std::string(admin_prefix) + prefix);
        if (!recs) {
            return nereus::error(recs.error());
        }
        std::vector<std::pair<std::string, std::string>> out;
        for (auto& kr : *recs) {
            out.emplace_back(kr.key.substr(admin_prefix.size()), std::move(kr.rec.value));
        }
        return out;
    }

    result<void> close() override {
        std::map<std::string, std::shared_ptr<ledger_topic>> topics;
        {
            std::lock_guard lock(mu_);
            if (closed_) {
                return {};
            }
            closed_ = true;
            topics.swap(topics_);
        }
        stop_cv_.notify_all();
        if (keeper_.joinable()) {
            keeper_.join();
        }
        result<void> first;
        for (auto& [n, t] : topics) {
            if (auto r = t->close(); !r && first) {
                NEREUS_LOG(broker_log(), warn, "ledger close failed topic={} error={}", n,
                           r.error().message());
                first = r;
            }
        }
        topics.clear();
        if (meta_ && session_ != meta::no_session) {
            (void)meta::close_session_sync(*meta_, session_);
        }
        if (streams_) {
            if (auto r = streams_->close(); !r && first) {
                first = r;
            }
        }
        objects_.reset();
        streams_.reset();
        owned_meta_.reset();
        meta_ = nullptr;
        return first;
    }

private:
    void keep_alive_loop() {
        std::unique_lock lock(stop_mu_);
        while (!stop_cv_.wait_for(lock, session_ttl / 3, [this] { return is_closed(); })) {
            lock.unlock();
            if (auto r = meta::keep_alive_sync(*meta_, session_); !r) {
                NEREUS_LOG(broker_log(), err, "owner session keep-alive failed: {}",
                           r.error().message());
            }
            lock.lock();
        }
    }
    bool is_closed() {
        std::lock_guard lock(mu_);
        return closed_;
    }

    ledger_backend_options options_;
    std::unique_ptr<meta::store> owned_meta_;  // RocksDB, unless options_.meta was given
    meta::store* meta_ = nullptr;
    std::unique_ptr<storage::stream_store> streams_;
    std::unique_ptr<objects::object_store> objects_;
    meta::session_id session_ = meta::no_session;
    std::thread keeper_;
    std::mutex stop_mu_;
    std::condition_variable stop_cv_;

    mutable std::mutex mu_;
    bool closed_ = false;
    std::map<std::string, std::shared_ptr<ledger_topic>> topics_;
};

}  // namespace

result<std::unique_ptr<ledger_backend>> ledger_backend::open(ledger_backend_options o) {
    auto b = std::make_unique<ledger_backend_impl>();
    if (auto r = b->init(std::move(o)); !r) {
        return nereus::error(r.error());
    }
    return std::unique_ptr<ledger_backend>(std::move(b));
}

}  // namespace nereus::broker
