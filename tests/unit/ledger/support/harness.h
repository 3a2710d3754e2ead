#pragma once

// The ledger test harness: RocksDB meta store in a temp dir, the stream log and the object
// store on one fault_file_system (or the real file system), counting spies on the metadata
// and storage seams, and restart / crash / power-loss helpers.
//
//   restart(): close the ledger cleanly, reopen everything.
//   crash():   drop the ledger without close (a SIGKILL): the file system "crashes" (every
//              later call fails), the stream log is dropped, the page cache survives
//              (process_crash) or not (power_loss); RocksDB is reopened, which expires the dead
//              process's owner session and its ephemeral owner key.
//
// Thread-safety: thread-compatible (one test at a time).

#include "nereus/base/fault_file_system.h"
#include "nereus/ledger/errc.h"
#include "nereus/ledger/managed_cursor.h"
#include "nereus/ledger/managed_ledger.h"
#include "nereus/meta/rocksdb_store.h"
#include "nereus/meta/sync.h"
#include "nereus/objects/fs_object_store.h"
#include "nereus/storage/stream_store.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace nereus::ledger::test {

// Counts every call into the metadata store (and forwards it).
class counting_meta final : public meta::store {
public:
    explicit counting_meta(meta::store* inner) : inner_(inner) {}
    std::atomic<std::uint64_t> multis{0}, gets{0}, lists{0}, sessions{0};
    std::uint64_t total() const { return multis + gets + lists + sessions; }
    void set_inner(meta::store* inner) { inner_ = inner; }

    void multi(std::vector<meta::op> ops, callback<meta::multi_result> done) override {
        ++multis;
        inner_->multi(std::move(ops), std::move(done));
    }
    void get(std::string key, callback<std::optional<meta::record>> done) override {
        ++gets;
        inner_->get(std::move(key), std::move(done));
    }
    void list(std::string prefix, callback<std::vector<meta::keyed_record>> done) override {
        ++lists;
        inner_->list(std::move(prefix), std::move(done));
    }
    meta::watch_handle watch(std::string prefix, meta::watch_callback cb) override {
        return inner_->watch(std::move(prefix), std::move(cb));
    }
    void open_session(std::chrono::milliseconds ttl, callback<meta::session_id> done) override {
        ++sessions;
        inner_->open_session(ttl, std::move(done));
    }
    void keep_alive(meta::session_id s, callback<void> done) override {
        inner_->keep_alive(s, std::move(done));
    }
    void close_session(meta::session_id s, callback<void> done) override {
        ++sessions;
        inner_->close_session(s, std::move(done));
    }
    bool is_callback_thread() const override { return inner_->is_callback_thread(); }

private:
    meta::store* inner_;
};

// Counts every call into the stream log (and forwards it).
class counting_streams final : public storage::stream_store {
public:
    explicit counting_streams(storage::stream_store* inner) : inner_(inner) {}
    std::atomic<std::uint64_t> appends{0}, reads{0}, nowait_reads{0}, trims{0}, creates{0},
        infos{0};
    std::uint64_t mutations() const { return appends + trims + creates; }
    void set_inner(storage::stream_store* inner) { inner_ = inner; }

    result<void> create_stream(storage::stream_id id) override {
        ++creates;
        return inner_->create_stream(id);
    }
    result<void> delete_stream(storage::stream_id id) override {
        ++creates;
        return inner_->delete_stream(id);
    }
    void append(storage::stream_id id,
                bytes_view payload,
                storage::append_completion done) override {
        ++appends;
        inner_->append(id, payload, std::move(done));
    }
    result<storage::read_batch> read(storage::stream_id id,
                                     storage::offset from,
                                     std::size_t n,
                                     std::size_t b) override {
        ++reads;
        return inner_->read(id, from, n, b);
    }
    result<storage::read_batch> read_nowait(storage::stream_id id,
                                            storage::offset from,
                                            std::size_t n,
                                            std::size_t b) override {
        ++nowait_reads;
        return inner_->read_nowait(id, from, n, b);
    }
    result<storage::stream_info> info(storage::stream_id id) override {
        ++infos;
        return inner_->info(id);
    }
    result<storage::offset> trim(storage::stream_id id, storage::offset floor) override {
        ++trims;
        return inner_->trim(id, floor);
    }
    std::vector<storage::stream_id> list_streams() override { return inner_->list_streams(); }
    result<void> close() override { return inner_->close(); }
    std::optional<storage::corruption_info> last_corruption() const override {
        return inner_->last_corruption();
    }
    storage::store_stats stats() const override { return inner_->stats(); }

private:
    storage::stream_store* inner_;
};

inline std::string make_temp_dir(const char* tag) {
    const char* base = std::getenv("TMPDIR");
    std::string pattern =
        std::string(base != nullptr ? base : "/tmp") + "/nereus-ledger-" + tag + "-XXXXXX";
    if (::mkdtemp(pattern.data()) == nullptr) {
        ADD_FAILURE() << "mkdtemp failed";
    }
    return pattern;
}

// 10 entries of a 16-byte payload per segment (storage record header 16 + entry header 14).
inline constexpr std::size_t kPayload = 16;
inline storage::store_options ten_per_segment() {
    storage::store_options o;
    o.segment_max_bytes = 10 * (16 + 14 + kPayload);
    o.checkpoint_bytes = 64 << 10;
    o.journal_max_bytes = 256 << 10;
    o.fd_cache_size = 16;
    return o;
}

class harness {
public:
    explicit harness(storage::store_options so = ten_per_segment(), bool real_fs = false)
        : dir_(make_temp_dir("h")), so_(so), real_fs_(real_fs) {
        fault_ = std::make_shared<fault_file_system>();
        open_all();
    }
    harness(const harness&) = delete;
    harness& operator=(const harness&) = delete;
    ~harness() {
        ledger_.reset();
        close_all();
        std::error_code ec;
        std::filesystem::remove_all(dir_, ec);
    }

    ledger_options& options() { return options_; }
    counting_meta& meta_spy() { return *meta_spy_; }
    counting_streams& stream_spy() { return *stream_spy_; }
    meta::store& meta() { return *meta_; }
    storage::stream_store& streams() { return *streams_; }
    objects::object_store& objects() { return *objects_; }
    fault_file_system& fs() { return *fault_; }
    std::int64_t clock = 1'000'000;

    ledger_env env() {
        return ledger_env{meta_spy_.get(), objects_.get(), stream_spy_.get(), session_};
    }
    meta::session_id new_session() {
        auto s = meta::open_session_sync(*meta_, std::chrono::minutes(10));
        EXPECT_TRUE(s.has_value());
        return s ? *s : meta::no_session;
    }

    result<std::shared_ptr<managed_ledger>> try_open(
        const std::string& topic = "persistent://t/n/a") {
        auto o = options_;
        if (!o.clock) {
            o.clock = [this] {
                return clock;
            };
        }
        return managed_ledger::open_writable(env(), topic, o);
    }
    std::shared_ptr<managed_ledger>& open(const std::string& topic = "persistent://t/n/a") {
        auto l = try_open(topic);
        EXPECT_TRUE(l.has_value()) << (l ? "" : l.error().message());
        ledger_ = l ? *l : nullptr;
        return ledger_;
    }
    std::shared_ptr<managed_ledger>& ledger() { return ledger_; }

    void restart() {
        if (ledger_) {
            EXPECT_TRUE(ledger_->close().has_value());
        }
        ledger_.reset();
        close_all();
        open_all();
        open();
    }
    // restart() that tolerates an open failing (an "open.*" fault step): ledger() is then null.
    void restart_or_fail() {
        if (ledger_) {
            EXPECT_TRUE(ledger_->close().has_value());
        }
        ledger_.reset();
        close_all();
        open_all();
        auto l = try_open();
        ledger_ = l ? *l : nullptr;
    }
    // power_loss_torn: a power loss that keeps a random part of the unsynced bytes and
    // directory changes (fault_file_system::power_loss_torn with `torn_seed`).
    enum class crash_kind { process, power_loss, power_loss_torn };
    // Drops the ledger without close and restarts the "process". Callers must drop their own
    // cursor handles first (they keep the ledger alive).
    void crash(crash_kind k = crash_kind::process, std::uint64_t torn_seed = 0) {
        ledger_.reset();
        if (!real_fs_) {
            fault_->crash_now();
        }
        streams_.reset();
        objects_.reset();
        meta_.reset();
        if (!real_fs_) {
            if (k == crash_kind::process) {
                fault_->process_crash();
            } else if (k == crash_kind::power_loss_torn) {
                fault_->power_loss_torn(torn_seed);
            } else {
                fault_->power_loss();
            }
        }
        open_all();
    }
    void crash_and_open(crash_kind k = crash_kind::process) {
        crash(k);
        open();
    }

    // Appends n entries with publish times t0, t0+1, ... and 16-byte payloads "e<offset>".
    void append_n(std::uint64_t n, std::int64_t t0 = 1000, std::uint32_t batch = 1) {
        for (std::uint64_t i = 0; i < n; ++i) {
            std::string p(kPayload, '.');
            auto r = ledger_->append_sync(
                std::as_bytes(std::span(p.data(), p.size())),
                append_options{.publish_time = t0 + static_cast<std::int64_t>(i),
                               .batch_size = batch});
            ASSERT_TRUE(r.has_value()) << r.error().message();
        }
    }

private:
    void open_all() {
        auto m = meta::rocksdb_store::open(dir_ + "/meta");
        ASSERT_TRUE(m.has_value()) << m.error().message();
        meta_ = std::move(*m);
        std::shared_ptr<file_system> fs =
            real_fs_ ? posix_file_system() : std::static_pointer_cast<file_system>(fault_);
        const std::string root = real_fs_ ? dir_ : std::string("/data");
        auto s = storage::stream_store::open(fs, root + "/streams", so_);
        ASSERT_TRUE(s.has_value()) << s.error().message();
        streams_ = std::move(*s);
        auto o = objects::fs_object_store::open(fs, root + "/objects");
        ASSERT_TRUE(o.has_value()) << o.error().message();
        objects_ = std::move(*o);
        meta_spy_ = std::make_unique<counting_meta>(meta_.get());
        stream_spy_ = std::make_unique<counting_streams>(streams_.get());
        session_ = new_session();
    }
    void close_all() {
        if (streams_) {
            (void)streams_->close();
        }
        streams_.reset();
        objects_.reset();
        meta_.reset();
    }

    std::string dir_;
    storage::store_options so_;
    bool real_fs_;
    std::shared_ptr<fault_file_system> fault_;
    std::unique_ptr<meta::store> meta_;
    std::unique_ptr<storage::stream_store> streams_;
    std::unique_ptr<objects::fs_object_store> objects_;
    std::unique_ptr<counting_meta> meta_spy_;
    std::unique_ptr<counting_streams> stream_spy_;
    meta::session_id session_ = meta::no_session;
    ledger_options options_;
    std::shared_ptr<managed_ledger> ledger_;
};

inline cursor::op_result ok(const result<cursor::op_result>& r) {
    EXPECT_TRUE(r.has_value()) << (r ? "" : r.error().message());
    return r ? *r : cursor::op_result{};
}

// Everything a fresh reader of `c` would be delivered: (offset, remaining bits or empty).
inline std::vector<std::pair<offset, std::vector<std::uint32_t>>> deliverable(managed_cursor& c) {
    std::vector<std::pair<offset, std::vector<std::uint32_t>>> out;
    c.rewind();
    for (;;) {
        auto r = c.read(1000);
        EXPECT_TRUE(r.has_value()) << (r ? "" : r.error().message());
        if (!r || r->entries.empty()) {
            break;
        }
        for (const auto& e : r->entries) {
            out.emplace_back(e.at,
                             e.remaining ? e.remaining->indices() : std::vector<std::uint32_t>{});
        }
    }
    return out;
}

}  // namespace nereus::ledger::test
