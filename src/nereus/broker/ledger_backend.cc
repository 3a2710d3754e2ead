#include "nereus/broker/ledger_backend.h"

#include "nereus/base/file_system.h"
#include "nereus/base/thread_name.h"
#include "nereus/broker/confirm_gate.h"
#include "nereus/broker/logger.h"
#include "nereus/broker/topic_dir.h"
#include "nereus/cursor/cursor_keys.h"
#include "nereus/ledger/errc.h"
#include "nereus/ledger/managed_cursor.h"
#include "nereus/ledger/managed_ledger.h"
#include "nereus/ledger/records.h"
#include "nereus/meta/make_store.h"
#include "nereus/meta/rocksdb_store.h"
#include "nereus/meta/sync.h"
#include "nereus/meta/zk_store.h"
#include "nereus/objects/errc.h"
#include "nereus/objects/fs_object_store.h"
#include "nereus/proto/server_error.h"
#include "nereus/storage/reopening_store.h"
#include "nereus/storage/stream_store.h"

#include <boost/container/small_vector.hpp>
#include <condition_variable>
#include <filesystem>
#include <map>
#include <mutex>
#include <set>
#include <thread>

namespace nereus::broker {

namespace {

constexpr auto session_ttl = std::chrono::milliseconds(30'000);
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
result<ack_outcome> to_outcome(const result<cursor::op_result>& r) {
    if (!r) {
        return nereus::error(r.error());
    }
    switch (r->status) {
        case cursor::ack_status::ok:
            return ack_outcome::applied;
        case cursor::ack_status::already_acked:
            return ack_outcome::no_effect;
        case cursor::ack_status::stale_generation:
        case cursor::ack_status::stale_epoch:
            return ack_outcome::stale;
        case cursor::ack_status::state_full:
            return nereus::error(proto::error_kind::persistence_failure);
    }
    return ack_outcome::no_effect;
}

void deliver_ack(const ack_callback& done, const result<cursor::op_result>& r) {
    done(to_outcome(r));
}

class ledger_cursor final : public subscription_cursor {
public:
    ledger_cursor(std::shared_ptr<ledger::managed_cursor> c, std::uint64_t ledger_id)
        : c_(std::move(c)), ledger_id_(ledger_id) {}

    const std::string& name() const override { return c_->name(); }
    bool durable() const override { return c_->durable(); }

    result<std::vector<dispatch_entry>> read(std::size_t max_entries) override {
        return to_dispatch(c_->read(max_entries));
    }

    // managed_cursor::try_read: storage's would_block compares equal to
    // std::errc::operation_would_block, the broker's vocabulary.
    result<std::vector<dispatch_entry>> try_read(std::size_t max_entries) override {
        return to_dispatch(c_->try_read(max_entries));
    }

    result<std::vector<dispatch_entry>> to_dispatch(result<ledger::read_result> r) const {
        if (!r) {
            return nereus::error(r.error());
        }
        std::vector<dispatch_entry> out;
        out.reserve(r->entries.size());
        // The read's buffers, shared by its entries: each entry is a view into them (no copy
        // and no allocation per entry); the buffers go once every delivery of them is written.
        const auto keep = std::make_shared<const ledger::read_result>(std::move(*r));
        for (const auto& e : keep->entries) {
            dispatch_entry d;
            d.pos = {ledger_id_, e.at};
            d.publish_time = e.publish_time;
            d.batch_size = e.batch_size;
            if (e.remaining) {
                for (auto w : e.remaining->words()) {
                    d.remaining.push_back(static_cast<std::int64_t>(w));
                }
            }
            d.bytes = e.payload;
            d.owner = keep;
            d.fence = from_fence(e.fence);
            out.push_back(std::move(d));
        }
        return out;
    }

    void rewind() override { c_->rewind(); }
    std::uint64_t next_read_position() override { return c_->next_read_position(); }
    bool is_acked(std::uint64_t entry_id) const override { return c_->is_acked(entry_id); }
    void skip_read_to(std::uint64_t entry_id) override { c_->skip_read_to(entry_id); }

    void ack(ack_fence f, std::uint64_t entry, ack_callback done) override {
        c_->ack(to_fence(f), entry,
                [done = std::move(done)](result<cursor::op_result> r) { deliver_ack(done, r); });
    }

    void ack_ranges(std::span<const ack_entry_range> ranges, ack_ranges_callback done) override {
        // Small (inline up to 8 ranges); one ACK command's ids in one cursor submission.
        boost::container::small_vector<cursor::cursor::fenced_range, 8> rs;
        rs.reserve(ranges.size());
        for (const auto& g : ranges) {
            rs.push_back(cursor::cursor::fenced_range{to_fence(g.fence), g.first, g.end});
        }
        c_->ack_ranges(rs, [done = std::move(done)](std::size_t i, result<cursor::op_result> r) {
            done(i, to_outcome(r));
        });
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
        d.cas_sent = snap.cas_sent;
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

// What a topic owned through a shared metadata store adds (doc/ownership.md): its own stream
// log (this owner's generation directory), the ownership node it holds, and the confirm gate
// every append passes before its receipt.
struct shared_ownership {
    meta::store* meta = nullptr;
    meta::session_id session = meta::no_session;
    std::string owner_key;
    meta::version owner_version = 0;
    std::shared_ptr<storage::stream_store> streams;
    std::shared_ptr<confirm_gate> gate;
};

class ledger_topic final : public topic_store {
public:
    ledger_topic(std::string name,
                 std::shared_ptr<ledger::managed_ledger> l,
                 storage::stream_store* s,
                 std::optional<shared_ownership> shared = std::nullopt)
        : name_(std::move(name)), l_(std::move(l)), streams_(s), shared_(std::move(shared)) {}

    const std::string& name() const override { return name_; }
    std::uint64_t ledger_id() const override { return l_->ledger_id(); }

    void append(std::span<const std::byte> entry,
                const append_info& info,
                append_callback done) override {
        ledger::append_options o;
        o.publish_time = info.publish_time;
        o.batch_size = std::max<std::uint32_t>(1, info.batch_size);
        o.tail_crc = info.tail_crc;
        o.tail_len = info.tail_len;
        if (shared_) {
            // Durable is not yet confirmed: the stream CAS under the ownership node first.
            auto confirmed = [gate = shared_->gate,
                              done = std::move(done)](result<ledger::message_id> r) mutable {
                if (!r) {
                    done(nereus::error(r.error()));
                    return;
                }
                const position pos{r->ledger_id, r->entry_id};
                auto release = [done = std::move(done), pos](result<void> ok) mutable {
                    if (!ok) {
                        done(nereus::error(ok.error()));
                        return;
                    }
                    done(pos);
                };
                static_assert(confirm_gate::done_fn::fits_inline<decltype(release)>);
                gate->confirm(r->entry_id, std::move(release));
            };
            static_assert(
                ledger::managed_ledger::append_callback::fits_inline<decltype(confirmed)>);
            l_->append(entry, o, std::move(confirmed));
            return;
        }
        const bool relocatable = done.relocatable();  // `durable` holds nothing else
        auto durable = [done = std::move(done)](result<ledger::message_id> r) mutable {
            if (!r) {
                done(nereus::error(r.error()));
                return;
            }
            done(position{r->ledger_id, r->entry_id});
        };
        static_assert(ledger::managed_ledger::append_callback::fits_inline<decltype(durable)>);
        l_->append(entry, o,
                   ledger::managed_ledger::append_callback(relocatable_if{relocatable},
                                                           std::move(durable)));
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
        return topic_details{info.ledger_id, info.start, info.end, info.physical_first};
    }
    const std::shared_ptr<ledger::managed_ledger>& ledger() const { return l_; }

    // Serialised with close() (close_mu_): the stores stay open for the whole trim.
    result<std::uint64_t> trim() override {
        std::lock_guard lock(close_mu_);
        if (closed_) {
            return nereus::error(ledger::errc::closed);
        }
        auto r = l_->trim();
        if (!r) {
            return nereus::error(r.error());
        }
        return r->start_after;
    }

    // Idempotent: the server closes its open topics at stop, the backend every topic at close.
    // Shared ownership: the ledger closes (cursors flushed, its owner key released), the
    // stream log closes, and only then is the ownership node erased (no write after release).
    result<void> close() override {
        std::lock_guard lock(close_mu_);
        if (closed_) {
            return {};
        }
        closed_ = true;
        auto r = l_->close();
        if (shared_) {
            shared_->gate->fence();
            if (auto c = shared_->streams->close(); !c && r) {
                r = c;
            }
            std::vector<meta::op> ops;
            ops.emplace_back(meta::check_session{shared_->session});
            ops.emplace_back(meta::erase{shared_->owner_key, shared_->owner_version});
            (void)meta::multi_sync(*shared_->meta, std::move(ops));
        }
        return r;
    }

    // The topic was lost (session expired, ownership superseded): nothing more is confirmed
    // (the gate fails every append), nothing is released (the new owner holds the keys), and
    // this owner's stream log stops writing. The ledger is dropped unclosed, like a crash.
    void abandon() {
        std::lock_guard lock(close_mu_);
        if (closed_) {
            return;
        }
        closed_ = true;
        if (shared_) {
            shared_->gate->fence();
            (void)shared_->streams->close();
        }
    }

    bool ownership_lost() const override { return shared_ && shared_->gate->fenced(); }
    bool is_shared() const { return shared_.has_value(); }
    storage::stream_store* streams() const { return streams_; }
    // The topic's own stream log when it is owned through shared metadata; null otherwise.
    const storage::stream_store* own_streams() const {
        return shared_ ? shared_->streams.get() : nullptr;
    }

private:
    std::mutex close_mu_;
    bool closed_ = false;
    const std::string name_;
    std::shared_ptr<ledger::managed_ledger> l_;
    storage::stream_store* streams_;
    std::optional<shared_ownership> shared_;
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
            meta_ = options_.meta;  // a test's store (e.g. meta::fault_store), borrowed
        } else if (options_.metadata_url.empty()) {
            auto m = meta::rocksdb_store::open(options_.data_dir + "/meta");
            if (!m) {
                return nereus::error(m.error());
            }
            owned_meta_ = std::move(*m);
            meta_ = owned_meta_.get();
        } else {
            auto zo = meta::zk_store::parse_url(options_.metadata_url);
            if (!zo) {
                return nereus::error(zo.error());
            }
            session_ttl_ = zo->session_timeout;
            auto m = meta::make_store(options_.metadata_url);
            if (!m) {
                return nereus::error(m.error());
            }
            owned_meta_ = std::move(*m);
            meta_ = owned_meta_.get();
        }
        auto fs = options_.fs != nullptr ? options_.fs : posix_file_system();
        if (!shared()) {
            // Fail-stop after a write/sync error, reopened in-process once the fault clears
            // (storage/reopening_store.h): sends get SEND_ERROR meanwhile, never a receipt.
            storage::store_options so;
            so.segment_max_entries = options_.segment_max_entries;
            so.segment_min_age = options_.segment_min_age;
            so.leader_commits = options_.leader_commits;
            so.pipelined_apply = options_.pipelined_apply;
            so.min_sync_interval = options_.min_sync_interval;
            so.prepare_journal_files = options_.prepare_journal_files;
            so.prepare_journal_at_open = true;  // the broker writes from the start
            so.prepare_max_bytes_per_s = options_.prepare_max_bytes_per_s;
            auto s = storage::reopening_store::open(fs, options_.data_dir + "/streams", so);
            if (!s) {
                return nereus::error(s.error());
            }
            streams_ = std::move(*s);
        }
        auto ob = objects::fs_object_store::open(fs, options_.data_dir + "/objects");
        if (!ob) {
            return nereus::error(ob.error());
        }
        objects_ = std::move(*ob);
        auto session = meta::open_session_sync(*meta_, session_ttl_);
        if (!session) {
            return nereus::error(session.error());
        }
        session_ = *session;
        keeper_ = std::thread([this] {
            set_thread_name("nereus-session");
            keep_alive_loop();
        });
        if (options_.retention_interval.count() > 0) {
            retainer_ = std::thread([this] {
                set_thread_name("nereus-retain");
                retention_loop();
            });
        }
        return {};
    }

    // One trim per open topic, serialised with close() and delete_topic() (retention_mu_), so a
    // pass never runs on a ledger whose stores are being torn down.
    std::optional<storage::store_stats> log_stats() const override {
        storage::store_stats sum;
        std::vector<std::shared_ptr<ledger_topic>> open;
        {
            std::lock_guard lock(mu_);
            if (closed_) {
                return std::nullopt;
            }
            // Under mu_: close() resets streams_ after it marks the backend closed. stats() only
            // loads counters (the reopening wrapper's lock is a leaf).
            if (streams_ != nullptr) {
                sum += streams_->stats();
            }
            for (const auto& [n, t] : topics_) {
                open.push_back(t);  // keeps a shared topic's own log alive while it is read
            }
        }
        for (const auto& t : open) {
            if (const auto* own = t->own_streams(); own != nullptr) {
                sum += own->stats();
            }
        }
        return sum;
    }

    retention_pass_report run_retention() override {
        const std::lock_guard pass(retention_mu_);
        retention_pass_report rep;
        std::vector<std::pair<std::string, std::shared_ptr<ledger_topic>>> topics;
        {
            std::lock_guard lock(mu_);
            if (closed_) {
                return rep;
            }
            for (const auto& [n, t] : topics_) {
                topics.emplace_back(n, t);
            }
        }
        for (const auto& [n, t] : topics) {
            if (t->ownership_lost()) {
                continue;
            }
            const auto before = t->ledger()->info().start;
            ++rep.topics;
            auto r = t->trim();
            if (!r) {
                // A closed or fenced ledger (deleted, lost) is not an error of the pass.
                if (r.error() == make_error_code(ledger::errc::closed) ||
                    r.error() == make_error_code(ledger::errc::owner_fenced)) {
                    continue;
                }
                ++rep.errors;
                NEREUS_LOG(broker_log(), warn, "retention pass: trim failed topic={} error={}", n,
                           r.error().message());
                continue;
            }
            rep.trimmed += *r > before ? *r - before : 0;
        }
        return rep;
    }

    // Embedded metadata: the ledger's writable open (several synced metadata writes) runs
    // without mu_, so opens of different topics overlap and their writes share the metadata
    // store's group commits; a name being opened is busy (opening_) and a second open of it
    // waits for the first. Shared (ZooKeeper) metadata: the claim sequence runs under mu_.
    result<std::shared_ptr<topic_store>> open_topic(const std::string& name, bool create) override {
        std::unique_lock lock(mu_);
        opened_cv_.wait(lock, [&] { return closed_ || !opening_.contains(name); });
        if (closed_) {
            return nereus::error(proto::error_kind::unavailable);
        }
        if (auto it = topics_.find(name); it != topics_.end()) {
            return it->second;
        }
        if (shared()) {
            return open_shared_locked(name, create);
        }
        opening_.insert(name);
        const meta::session_id session = session_;
        lock.unlock();
        const auto lo = ledger_options(create);
        auto l = ledger::managed_ledger::open_writable(
            ledger::ledger_env{meta_, objects_.get(), streams_.get(), session}, name, lo);
        std::shared_ptr<ledger_topic> t;
        std::error_code retention_error;
        if (l) {
            if (auto r = apply_retention(**l); !r) {
                (void)(*l)->close();
                retention_error = r.error();
            } else {
                t = std::make_shared<ledger_topic>(name, std::move(*l), streams_.get());
            }
        }
        lock.lock();
        opening_.erase(name);
        opened_cv_.notify_all();
        if (!l) {
            if (l.error() == make_error_code(ledger::errc::topic_not_found)) {
                return nereus::error(proto::error_kind::topic_not_found);
            }
            return nereus::error(l.error());
        }
        if (retention_error) {
            return nereus::error(retention_error);
        }
        if (closed_) {
            // close() ran meanwhile (it waits for this open before closing the stores).
            lock.unlock();
            (void)t->close();
            return nereus::error(proto::error_kind::unavailable);
        }
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
        const std::lock_guard pass(retention_mu_);
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
        if (t->is_shared()) {
            // The ownership node is gone with close(); the generation directories go too.
            std::error_code ec;
            std::filesystem::remove_all(topic_dir(name), ec);
            (void)meta::multi_sync(*meta_, {meta::erase{stream_key(name), meta::any_version}});
        } else if (auto r = streams_->delete_stream(storage::stream_id(info.stream_id)); !r) {
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

    result<void> put_object(const std::string& name, std::span<const std::byte> bytes) override {
        auto r = objects_->put_if_absent(name, bytes);
        if (!r) {
            return nereus::error(r.error());
        }
        if (*r == objects::put_outcome::already_exists_different) {
            return nereus::error(proto::error_kind::metadata_failure);
        }
        return {};
    }

    result<std::vector<std::byte>> get_object(const std::string& name) override {
        auto r = objects_->get(name);
        if (!r) {
            return nereus::error(proto::error_kind::metadata_failure);
        }
        return std::move(r->bytes);
    }

    result<void> remove_object(const std::string& name) override {
        auto r = objects_->remove(name);
        if (!r && r.error() != make_error_code(objects::errc::not_found)) {
            return r;
        }
        return {};
    }

    result<void> close() override {
        std::map<std::string, std::shared_ptr<ledger_topic>> topics;
        {
            std::unique_lock lock(mu_);
            if (closed_) {
                return {};
            }
            closed_ = true;
            opened_cv_.notify_all();
            // An open in progress still uses the stores: it ends (and closes its ledger) first.
            opened_cv_.wait(lock, [&] { return opening_.empty(); });
            topics.swap(topics_);
        }
        stop_cv_.notify_all();
        if (keeper_.joinable()) {
            keeper_.join();
        }
        if (retainer_.joinable()) {
            retainer_.join();
        }
        const std::lock_guard pass(retention_mu_);  // an admin-triggered pass finishes first
        result<void> first;
        for (auto& [n, t] : topics) {
            if (auto r = t->close(); !r && first) {
                NEREUS_LOG(broker_log(), warn, "ledger close failed topic={} error={}", n,
                           r.error().message());
                first = r;
            }
        }
        topics.clear();
        for (auto& st : retired_streams_) {
            (void)st->close();  // idempotent; a lost topic's was closed already
        }
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
        retired_streams_.clear();
        owned_meta_.reset();
        meta_ = nullptr;
        return first;
    }

    // ---- ownership (shared metadata store; doc/ownership.md) ----

    result<topic_owner> owner_of(const std::string& name) override {
        if (!shared()) {
            return topic_owner{};
        }
        meta::session_id mine;
        {
            std::lock_guard lock(mu_);
            if (topics_.contains(name)) {
                return topic_owner{};
            }
            mine = session_;
        }
        auto rec = meta::get_sync(*meta_, ownership_key(name));
        if (!rec) {
            return nereus::error(rec.error());
        }
        if (!*rec || (*rec)->owner == mine) {
            return topic_owner{};
        }
        topic_owner o;
        o.here = false;
        const auto& v = (*rec)->value;
        const auto nl = v.find('\n');
        o.broker_url = v.substr(0, nl);
        o.http_url = nl == std::string::npos ? std::string() : v.substr(nl + 1);
        return o;
    }

    void set_advertised(std::string broker_url, std::string http_url) override {
        std::lock_guard lock(mu_);
        advertised_ = broker_url + "\n" + http_url;
    }

    void set_lost_handler(std::function<void(const std::string&)> lost) override {
        std::lock_guard lock(lost_mu_);
        lost_handler_ = std::move(lost);
    }

private:
    ledger::ledger_options ledger_options(bool create) const {
        ledger::ledger_options lo;
        lo.create_if_missing = create && options_.auto_create;
        lo.retention.time_ms = options_.retention_time_ms;
        lo.retention.size_bytes = options_.retention_size_bytes;
        lo.fault_hook = options_.ledger_fault_hook;
        return lo;
    }

    // The broker's retention settings apply to every topic (Pulsar: the broker default): a
    // topic created under other settings gets its root's policy rewritten (durable), its
    // backlog limit kept.
    result<void> apply_retention(ledger::managed_ledger& l) {
        auto want = l.info().retention;
        if (want.time_ms == options_.retention_time_ms &&
            want.size_bytes == options_.retention_size_bytes) {
            return {};
        }
        want.time_ms = options_.retention_time_ms;
        want.size_bytes = options_.retention_size_bytes;
        return l.set_retention(want);
    }

    void retention_loop() {
        std::unique_lock lock(stop_mu_);
        for (;;) {
            if (stop_cv_.wait_for(lock, options_.retention_interval,
                                  [this] { return is_closed(); })) {
                return;
            }
            lock.unlock();
            const auto rep = run_retention();
            if (rep.trimmed > 0 || rep.errors > 0) {
                NEREUS_LOG(broker_log(), info,
                           "retention pass: topics={} entries trimmed={} errors={}", rep.topics,
                           rep.trimmed, rep.errors);
            }
            lock.lock();
        }
    }

    void keep_alive_loop() {
        std::unique_lock lock(stop_mu_);
        auto next = std::chrono::steady_clock::now();
        for (;;) {
            stop_cv_.wait_until(lock, next, [this] { return is_closed() || lost_pending(); });
            if (is_closed()) {
                return;
            }
            lock.unlock();
            release_lost_topics();
            if (std::chrono::steady_clock::now() >= next) {
                next = std::chrono::steady_clock::now() + session_ttl_ / 3;
                meta::session_id s;
                {
                    std::lock_guard l(mu_);
                    s = session_;
                }
                if (auto r = meta::keep_alive_sync(*meta_, s); !r) {
                    NEREUS_LOG(broker_log(), err, "owner session keep-alive failed: {}",
                               r.error().message());
                    if (shared() && r.error() == meta::errc::session_expired) {
                        renew_session(s);
                    }
                }
            }
            lock.lock();
        }
    }

    // Shared metadata: the owner session expired (this process stalled or was cut off longer
    // than the session timeout). Every topic opened under it is lost (another broker may own
    // it by now); a new session serves later claims.
    void renew_session(meta::session_id dead) {
        std::vector<std::string> names;
        {
            std::lock_guard lock(mu_);
            if (session_ != dead || closed_) {
                return;
            }
            for (const auto& [n, t] : topics_) {
                names.push_back(n);
            }
        }
        NEREUS_LOG(broker_log(), warn, "owner session {} expired: releasing {} topics",
                   meta::raw(dead), names.size());
        for (const auto& n : names) {
            mark_lost(n);
        }
        release_lost_topics();
        auto s = meta::open_session_sync(*meta_, session_ttl_);
        if (!s) {
            NEREUS_LOG(broker_log(), err, "cannot open a new owner session: {}",
                       s.error().message());
            return;
        }
        std::lock_guard lock(mu_);
        session_ = *s;
    }

    // Called from a gate's on_fenced (metadata callback thread): only queues the name; the
    // keeper thread does the blocking part.
    void mark_lost(const std::string& name) {
        {
            std::lock_guard lock(lost_mu_);
            lost_.push_back(name);
        }
        { std::lock_guard sync(stop_mu_); }  // the keeper is waiting or will see lost_
        stop_cv_.notify_all();
    }
    bool lost_pending() {
        std::lock_guard lock(lost_mu_);
        return !lost_.empty();
    }
    void release_lost_topics() {
        std::vector<std::string> names;
        {
            std::lock_guard lock(lost_mu_);
            names.swap(lost_);
        }
        for (const auto& n : names) {
            std::shared_ptr<ledger_topic> t;
            {
                std::lock_guard lock(mu_);
                if (auto it = topics_.find(n); it != topics_.end()) {
                    t = it->second;
                    topics_.erase(it);
                }
            }
            if (!t) {
                continue;
            }
            t->abandon();
            NEREUS_LOG(broker_log(), warn,
                       "topic lost: {} (ownership gone; nothing more confirmed)", n);
            std::function<void(const std::string&)> h;
            {
                std::lock_guard lock(lost_mu_);
                h = lost_handler_;
            }
            if (h) {
                h(n);
            }
        }
    }

    bool shared() const { return !options_.metadata_url.empty(); }
    static std::string ownership_key(const std::string& topic) {
        return "owners/" + cursor::escape_name(topic);
    }
    static std::string stream_key(const std::string& topic) {
        return "ledgers/" + cursor::escape_name(topic) + "/stream";
    }
    std::string topic_dir(const std::string& topic) const {
        return options_.data_dir + "/shared/" + cursor::escape_name(topic);
    }

    // The claim and takeover of a topic (doc/ownership.md). Requires: mu_ held.
    result<std::shared_ptr<topic_store>> open_shared_locked(const std::string& name, bool create) {
        const std::string okey = ownership_key(name);
        // 1. The ownership node, ephemeral under this broker's session.
        std::vector<meta::op> claim;
        claim.emplace_back(meta::check_session{session_});
        claim.emplace_back(meta::put{okey, advertised_, meta::absent, session_});
        auto c = meta::multi_sync(*meta_, std::move(claim));
        meta::version owner_version = 0;
        if (c && c->applied) {
            owner_version = c->versions.at(1);
        } else {
            if (c && c->failed_op == 0) {
                return nereus::error(proto::error_kind::unavailable);  // session expired
            }
            // Owned already, or an unknown outcome: the node says whose it is.
            auto rec = meta::get_sync(*meta_, okey);
            if (!rec || !*rec || (*rec)->owner != session_) {
                NEREUS_LOG(broker_log(), info, "topic {} is owned by another broker ({})", name,
                           rec && *rec ? (*rec)->value : std::string("?"));
                return nereus::error(proto::error_kind::unavailable);
            }
            owner_version = (*rec)->ver;
        }
        auto release = [&] {
            std::vector<meta::op> ops;
            ops.emplace_back(meta::check_session{session_});
            ops.emplace_back(meta::erase{okey, owner_version});
            (void)meta::multi_sync(*meta_, std::move(ops));
        };
        // 2. This owner's copy of the stream log (the previous owner can no longer confirm).
        auto dir = take_over_topic_dir(topic_dir(name));
        if (!dir) {
            release();
            return nereus::error(dir.error());
        }
        // No prepared journal spares for these per-topic stores: a takeover copies the whole
        // topic directory, and a 64 MiB spare per written topic would multiply the disk use.
        storage::store_options topic_store;
        topic_store.prepare_journal_files = false;
        auto st = storage::stream_store::open(posix_file_system(), *dir, topic_store);
        if (!st) {
            release();
            return nereus::error(st.error());
        }
        std::shared_ptr<storage::stream_store> streams(std::move(*st));
        retired_streams_.push_back(streams);
        // 3. The seed's writable-open sequence on it.
        auto lo = ledger_options(create);
        auto l = ledger::managed_ledger::open_writable(
            ledger::ledger_env{meta_, objects_.get(), streams.get(), session_}, name, lo);
        if (l) {
            if (auto r = apply_retention(**l); !r) {
                (void)(*l)->close();
                l = nereus::error(r.error());
            }
        }
        if (!l) {
            (void)streams->close();
            release();
            if (l.error() == make_error_code(ledger::errc::topic_not_found)) {
                return nereus::error(proto::error_kind::topic_not_found);
            }
            if (l.error() == make_error_code(ledger::errc::owned_elsewhere) ||
                l.error() == make_error_code(ledger::errc::owner_fenced)) {
                return nereus::error(proto::error_kind::unavailable);
            }
            return nereus::error(l.error());
        }
        // 4. The stream record: every confirmed entry must be in the copy (fail closed).
        auto srec = meta::get_sync(*meta_, stream_key(name));
        if (!srec) {
            (void)streams->close();
            release();
            return nereus::error(srec.error());
        }
        std::uint64_t confirmed = 0;
        meta::version stream_version = meta::absent;
        if (*srec) {
            auto e = confirm_gate::decode_end((*srec)->value);
            if (!e) {
                (void)streams->close();
                release();
                return nereus::error(meta::errc::corrupt_record);
            }
            confirmed = *e;
            stream_version = (*srec)->ver;
        }
        const auto info = (*l)->info();
        if (info.end < confirmed) {
            NEREUS_LOG(broker_log(), err,
                       "topic {}: the stream log ends at {} but {} entries were confirmed; "
                       "refusing to serve it",
                       name, info.end, confirmed);
            (void)streams->close();
            release();
            return nereus::error(storage::errc::corrupt_segment);
        }
        shared_ownership so;
        so.meta = meta_;
        so.session = session_;
        so.owner_key = okey;
        so.owner_version = owner_version;
        so.streams = streams;
        so.gate =
            std::make_shared<confirm_gate>(*meta_, session_, okey, owner_version, stream_key(name),
                                           stream_version, [this, name] { mark_lost(name); });
        auto t = std::make_shared<ledger_topic>(name, std::move(*l), streams.get(), std::move(so));
        topics_.emplace(name, t);
        NEREUS_LOG(broker_log(), info,
                   "topic claimed: {} (ownership node v{}, end {}, confirmed {})", name,
                   owner_version, info.end, confirmed);
        return t;
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
    meta::session_id session_ = meta::no_session;  // guarded by mu_ (renewed in shared mode)
    std::chrono::milliseconds session_ttl_ = session_ttl;
    std::string advertised_;  // guarded by mu_: "pulsar://...\nhttp://..."
    // Every per-topic stream log opened in shared mode: kept until close() (a lost topic's
    // ledger may still be referenced by cursor handles that read through it).
    std::vector<std::shared_ptr<storage::stream_store>> retired_streams_;  // guarded by mu_
    std::mutex lost_mu_;
    std::vector<std::string> lost_;                         // guarded by lost_mu_
    std::function<void(const std::string&)> lost_handler_;  // guarded by lost_mu_
    std::thread keeper_;
    std::thread retainer_;     // the periodic retention pass (retention_interval > 0)
    std::mutex retention_mu_;  // one pass at a time; close() and delete_topic() wait for it
    std::mutex stop_mu_;
    std::condition_variable stop_cv_;

    mutable std::mutex mu_;
    bool closed_ = false;
    std::map<std::string, std::shared_ptr<ledger_topic>> topics_;
    std::set<std::string> opening_;      // guarded by mu_: embedded opens in progress
    std::condition_variable opened_cv_;  // an open ended, or close() began
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
