#include "apps/nereus/cursor_bench.h"

#include "nereus/base/counting_file_system.h"
#include "nereus/base/file_system.h"
#include "nereus/cursor/cursor.h"
#include "nereus/cursor/cursor_keys.h"
#include "nereus/cursor/record_format.h"
#include "nereus/cursor/stream_view.h"
#include "nereus/cursor/sync.h"
#include "nereus/meta/counting_store.h"
#include "nereus/meta/rocksdb_store.h"
#include "nereus/meta/store.h"
#include "nereus/meta/sync.h"
#include "nereus/objects/fs_object_store.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <pthread.h>
#include <string>
#include <sys/resource.h>
#include <time.h>
#include <vector>

namespace nereus::app {
namespace {

using clock_type = std::chrono::steady_clock;
using seconds_d = std::chrono::duration<double>;
using cursor::offset;

// Acks in flight while measuring: enough that group commit applies.
constexpr std::size_t kWindow = 64;
// Acks in flight while building holes (fast: groups of up to max_group).
constexpr std::size_t kBuildWindow = 16384;
// Messages per batch entry in the batch-index phase.
constexpr std::uint32_t kBatchSize = 8;

// The CPU clock of the metadata store's callback thread, where the cursor runs its completions
// and starts every next group commit (encoding, apply, snapshot writes): the cursor's own share.
std::atomic<bool> g_have_cb_clock{false};
clockid_t g_cb_clock{};

void note_callback_thread() {
    if (!g_have_cb_clock.load(std::memory_order_acquire)) {
        clockid_t id{};
        if (::pthread_getcpuclockid(::pthread_self(), &id) == 0) {
            g_cb_clock = id;
            g_have_cb_clock.store(true, std::memory_order_release);
        }
    }
}

double callback_thread_cpu_seconds() {
    if (!g_have_cb_clock.load(std::memory_order_acquire)) {
        return 0;
    }
    timespec ts{};
    ::clock_gettime(g_cb_clock, &ts);
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

double cpu_seconds() {
    rusage u{};
    ::getrusage(RUSAGE_SELF, &u);
    auto tv = [](const timeval& t) {
        return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) * 1e-6;
    };
    return tv(u.ru_utime) + tv(u.ru_stime);
}

// A stream of a fixed length (the bench measures the cursor, not the stream log).
class fixed_stream_view final : public cursor::stream_view {
public:
    explicit fixed_stream_view(offset end) : end_(end) {}
    [[nodiscard]] offset start() const override { return 0; }
    [[nodiscard]] offset end() const override { return end_; }
    [[nodiscard]] time_lookup find_by_time(std::int64_t) const override { return {0, false}; }

private:
    offset end_;
};

// Runs op number 0, 1, 2, ... with `window` ops in flight, each next op issued from the
// completion of an earlier one (zero think time), until `max_ops` ops were issued or `seconds`
// passed; then waits for the outstanding ones.
struct loop_result {
    std::uint64_t ok = 0;     // ack_status::ok
    std::uint64_t other = 0;  // any other status (already_acked, state_full, ...)
    double seconds = 0;
    std::string error;
};

class closed_loop {
public:
    using issue_fn = std::function<void(std::uint64_t, cursor::cursor::op_callback)>;

    loop_result run(std::size_t window, double seconds, std::uint64_t max_ops, issue_fn issue) {
        issue_ = std::move(issue);
        const auto start = clock_type::now();
        {
            const std::lock_guard g(mu_);
            deadline_ =
                start + std::chrono::duration_cast<clock_type::duration>(seconds_d(seconds));
            max_ops_ = max_ops;
            next_ = 0;
            outstanding_ = 0;
            res_ = {};
        }
        for (std::size_t i = 0; i < window; ++i) {
            start_one();
        }
        std::unique_lock lock(mu_);
        cv_.wait(lock, [&] { return outstanding_ == 0; });
        res_.seconds = seconds_d(clock_type::now() - start).count();
        return res_;
    }

private:
    void start_one() {
        std::uint64_t i = 0;
        {
            const std::lock_guard g(mu_);
            if (!res_.error.empty() || next_ >= max_ops_ || clock_type::now() >= deadline_) {
                return;
            }
            i = next_++;
            ++outstanding_;
        }
        issue_(i, [this](result<cursor::op_result> r) { finish(r); });
    }
    void finish(const result<cursor::op_result>& r) {
        note_callback_thread();
        {
            const std::lock_guard g(mu_);
            if (!r) {
                if (res_.error.empty()) {
                    res_.error = r.error().message();
                }
            } else if (r->status == cursor::ack_status::ok) {
                ++res_.ok;
            } else {
                ++res_.other;
            }
        }
        start_one();
        const std::lock_guard g(mu_);
        if (--outstanding_ == 0) {
            cv_.notify_one();
        }
    }

    issue_fn issue_;
    std::mutex mu_;  // guards everything below
    std::condition_variable cv_;
    clock_type::time_point deadline_;
    std::uint64_t max_ops_ = 0;
    std::uint64_t next_ = 0;
    std::uint64_t outstanding_ = 0;
    loop_result res_;
};

// What one measured phase cost.
struct phase {
    std::uint64_t acks = 0;
    double seconds = 0;
    double cpu = 0;
    std::uint64_t meta_bytes = 0;
    std::uint64_t object_bytes = 0;
    std::uint64_t cas = 0;
    std::uint64_t delta_bytes = 0;  // part of meta_bytes
    double cb_cpu = 0;              // CPU of the meta store's callback thread (the cursor)
    // Amortized compaction, filled in for spilled states (see snapshot_cost).
    double snap_bytes_per_ack = 0;
    double snap_cpu_us_per_ack = 0;

    [[nodiscard]] double rate() const {
        return seconds > 0 ? static_cast<double>(acks) / seconds : 0;
    }
    // Metadata bytes plus the amortized snapshot bytes of compaction. The measured object bytes
    // of a short phase are 0 or one lumpy compaction, so the amortized figure replaces them.
    [[nodiscard]] double bytes_per_ack() const { return meta_per_ack() + snap_bytes_per_ack; }
    [[nodiscard]] double delta_per_ack() const {
        return acks > 0 ? static_cast<double>(delta_bytes) / static_cast<double>(acks) : 0;
    }
    [[nodiscard]] double cb_cpu_us_per_ack() const {
        return acks > 0 ? cb_cpu * 1e6 / static_cast<double>(acks) : 0;
    }
    [[nodiscard]] double total_cpu_us_per_ack() const {
        return cpu_us_per_ack() + snap_cpu_us_per_ack;
    }
    [[nodiscard]] double meta_per_ack() const {
        return acks > 0 ? static_cast<double>(meta_bytes) / static_cast<double>(acks) : 0;
    }
    [[nodiscard]] double object_per_ack() const {
        return acks > 0 ? static_cast<double>(object_bytes) / static_cast<double>(acks) : 0;
    }
    [[nodiscard]] double cpu_us_per_ack() const {
        return acks > 0 ? cpu * 1e6 / static_cast<double>(acks) : 0;
    }
    [[nodiscard]] double acks_per_cas() const {
        return cas > 0 ? static_cast<double>(acks) / static_cast<double>(cas) : 0;
    }
};

struct stores {
    std::unique_ptr<meta::store> rocks;
    std::unique_ptr<meta::counting_store> meta;  // delta bytes = tracked "/d/" keys
    std::shared_ptr<counting_file_system> fs;
    std::unique_ptr<objects::fs_object_store> objects;
    fixed_stream_view stream{offset{1} << 40};
    meta::session_id owner = meta::no_session;

    cursor::cursor_env env() {
        return cursor::cursor_env{
            .meta = meta.get(), .objects = objects.get(), .stream = &stream, .owner = owner};
    }
};

result<void> open_stores(stores& s, const std::string& root) {
    auto r = meta::rocksdb_store::open(path_join(root, "meta"));
    if (!r) {
        return error(r.error());
    }
    s.rocks = std::move(*r);
    s.meta = std::make_unique<meta::counting_store>(*s.rocks, "/d/");
    s.fs = std::make_shared<counting_file_system>(posix_file_system());
    auto o = objects::fs_object_store::open(s.fs, path_join(root, "objects"));
    if (!o) {
        return error(o.error());
    }
    s.objects = std::move(*o);
    auto session = meta::open_session_sync(*s.meta, std::chrono::hours(1));
    if (!session) {
        return error(session.error());
    }
    s.owner = *session;
    // Learn the callback thread's CPU clock before the first measured phase.
    if (auto g = meta::get_sync(*s.meta, "bench/none"); !g) {
        return error(g.error());
    }
    std::promise<void> p;
    s.meta->get("bench/none", [&p](result<std::optional<meta::record>>) {
        note_callback_thread();
        p.set_value();
    });
    p.get_future().wait();
    return {};
}

// The cost of writing one snapshot of the cursor's whole state: skip(0) is a fence op that
// rewrites the whole state through the same path as a compaction (encode, put object, CAS).
struct snapshot_cost {
    double wall_us = 0;
    double cpu_us = 0;
    std::uint64_t bytes = 0;  // object bytes written
};

result<snapshot_cost> measure_snapshot(stores& s, cursor::cursor& c) {
    snapshot_cost sc;
    const auto ob = s.fs->bytes_written();
    const double cpu0 = cpu_seconds();
    const auto t0 = clock_type::now();
    auto r = cursor::skip_sync(c, c.current_fence(), 0);
    sc.wall_us = std::chrono::duration<double, std::micro>(clock_type::now() - t0).count();
    sc.cpu_us = (cpu_seconds() - cpu0) * 1e6;
    sc.bytes = s.fs->bytes_written() - ob;
    if (!r || r->status != cursor::ack_status::ok || !c.snapshot().spilled) {
        std::fprintf(stderr, "cursor bench: snapshot rewrite failed\n");
        return error(r ? std::make_error_code(std::errc::io_error) : r.error());
    }
    return sc;
}

// Compaction writes a snapshot of size S once the deltas since the last one reach
// max(inline limit, S) bytes or their count reaches max_live_deltas (doc/format/cursor.md), so
// per ack it costs S x max(delta bytes per ack / max(limit, S), CASes per ack / max_live_deltas)
// snapshot bytes, and the snapshot's CPU in the same proportion.
void amortize(phase& p, const snapshot_cost& sc, const cursor::cursor_options& o) {
    const double limit =
        static_cast<double>(std::min(o.spill_threshold_bytes, meta::max_value_size - 4096));
    const double trigger = std::max(limit, static_cast<double>(sc.bytes));
    const double cas_per_ack =
        p.acks > 0 ? static_cast<double>(p.cas) / static_cast<double>(p.acks) : 0;
    const double per_ack =
        std::max(p.delta_per_ack() / trigger, cas_per_ack / static_cast<double>(o.max_live_deltas));
    p.snap_bytes_per_ack = per_ack * static_cast<double>(sc.bytes);
    p.snap_cpu_us_per_ack = per_ack * sc.cpu_us;
}

// Runs `issue` as a closed loop and measures it. Errors when any op failed or was not `ok`.
result<phase> measure(stores& s,
                      std::size_t window,
                      double seconds,
                      std::uint64_t max_ops,
                      const closed_loop::issue_fn& issue,
                      const char* what) {
    closed_loop loop;
    const auto mb = s.meta->value_bytes();
    const auto ob = s.fs->bytes_written();
    const auto cas = s.meta->multis();
    const auto db = s.meta->tracked_bytes();
    const double cpu0 = cpu_seconds();
    const double cb0 = callback_thread_cpu_seconds();
    const auto r = loop.run(window, seconds, max_ops, issue);
    phase p;
    p.cpu = cpu_seconds() - cpu0;
    p.cb_cpu = callback_thread_cpu_seconds() - cb0;
    p.delta_bytes = s.meta->tracked_bytes() - db;
    p.seconds = r.seconds;
    p.acks = r.ok;
    p.meta_bytes = s.meta->value_bytes() - mb;
    p.object_bytes = s.fs->bytes_written() - ob;
    p.cas = s.meta->multis() - cas;
    if (!r.error.empty() || r.other != 0) {
        std::fprintf(stderr, "cursor bench: %s: %s (%llu acks not ok)\n", what,
                     r.error.empty() ? "unexpected status" : r.error.c_str(),
                     static_cast<unsigned long long>(r.other));
        return error(std::make_error_code(std::errc::io_error));
    }
    return p;
}

// Acks 1, 3, 5, ..., 2n-1 (offset 0 stays unacked, so MDO stays 0): n ranges, n holes.
result<phase> build_holes(stores& s, cursor::cursor& c, std::uint64_t n) {
    const auto f = c.current_fence();
    return measure(
        s, kBuildWindow, 1e9, n,
        [&c, f](std::uint64_t i, cursor::cursor::op_callback done) {
            c.ack(f, 2 * i + 1, std::move(done));
        },
        "building holes");
}

struct level_result {
    std::uint64_t holes = 0;
    double build_s = 0;
    phase individual;
    phase batch;
    std::size_t resident = 0;
    std::uint64_t holes_after = 0;
    // The cumulative ack that clears every hole.
    double cumulative_wall_us = 0;
    double cumulative_cpu_us = 0;
    std::uint64_t cumulative_bytes = 0;
    std::vector<double> recovery_s;
    std::optional<snapshot_cost> snapshot;  // spilled states only
};

double median(std::vector<double> v) {
    if (v.empty()) {
        return 0;
    }
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

// Opens the cursor `runs` times (each a full recovery) and returns the wall times.
result<std::vector<double>> time_recovery(stores& s,
                                          const cursor::cursor_id& id,
                                          const cursor::cursor_options& o,
                                          int runs,
                                          std::uint64_t expect_holes,
                                          std::size_t* resident) {
    std::vector<double> out;
    for (int i = 0; i < runs; ++i) {
        const auto t0 = clock_type::now();
        auto c = cursor::open_sync(s.env(), id, o);
        const double t = seconds_d(clock_type::now() - t0).count();
        if (!c) {
            std::fprintf(stderr, "cursor bench: open failed: %s\n", c.error().message().c_str());
            return error(c.error());
        }
        if (i == 0) {
            const auto snap = (*c)->snapshot();
            if (snap.ranges.size() != expect_holes) {
                std::fprintf(stderr, "cursor bench: recovered %zu holes, expected %llu\n",
                             snap.ranges.size(), static_cast<unsigned long long>(expect_holes));
                return error(std::make_error_code(std::errc::io_error));
            }
            if (resident != nullptr) {
                *resident = (*c)->resident_bytes();
            }
        }
        out.push_back(t);
    }
    return out;
}

// The recovery worst case of a spilled cursor: the most live delta records it keeps before the
// next commit compacts (cursor_options::max_live_deltas, and the byte rule: accumulated delta
// bytes < max(inline limit, snapshot size)), each as small as a delta gets: one ack of one new
// offset that extends the last range (so the hole count is unchanged). Writing ~10^5..10^6 deltas
// through the cursor would take one synced CAS each, so they are written directly, with the
// cursor's own encoders, in multis of 1,000 puts, and then the root is advanced over them exactly
// as the cursor's commits would have. Continues from the live deltas already there. Returns how
// many live deltas the cursor then has.
result<std::uint64_t> fill_deltas_to_compaction(stores& s,
                                                const cursor::cursor_id& id,
                                                const cursor::cursor_options& o,
                                                offset first_offset) {
    auto keys = cursor::cursor_keys::make(o.key_prefix, id);
    if (!keys) {
        return error(keys.error());
    }
    auto got = meta::get_sync(*s.rocks, keys->root);
    if (!got || !*got) {
        return error(got ? std::make_error_code(std::errc::io_error) : got.error());
    }
    const meta::version root_version = (*got)->ver;
    auto root = cursor::format::decode_root((*got)->value);
    if (!root || !root->spilled) {
        std::fprintf(stderr, "cursor bench: worst case needs a spilled root\n");
        return error(std::make_error_code(std::errc::invalid_argument));
    }
    auto live = meta::list_sync(*s.rocks, keys->delta_prefix);
    if (!live) {
        return error(live.error());
    }
    std::uint64_t bytes = 0;
    for (const auto& kr : *live) {
        bytes += kr.rec.value.size();
    }
    const std::uint64_t limit =
        std::min<std::uint64_t>(o.spill_threshold_bytes, meta::max_value_size - 4096);
    const std::uint64_t compact_at = std::max<std::uint64_t>(limit, root->snapshot.size);
    std::uint64_t count = root->delta_count();
    offset x = first_offset + count;
    std::vector<meta::op> batch;
    while (true) {
        const std::uint64_t seq = root->commit_seq + 1;
        std::string d =
            cursor::format::encode_delta({root->generation, seq, {cursor::ack_range_op{x, x + 1}}});
        // The cursor's rule (cursor.cc, start_group): this delta would compact instead.
        if (bytes + d.size() >= compact_at || count + 1 > o.max_live_deltas) {
            break;
        }
        bytes += d.size();
        ++count;
        ++x;
        root->commit_seq = seq;
        batch.emplace_back(meta::put{.key = keys->delta_key(seq), .value = std::move(d)});
        if (batch.size() == 1000) {
            auto r = meta::multi_sync(*s.rocks, std::move(batch));
            batch.clear();
            if (!r || !r->applied) {
                return error(r ? std::make_error_code(std::errc::io_error) : r.error());
            }
        }
    }
    batch.emplace_back(meta::put{
        .key = keys->root, .value = cursor::format::encode_root(*root), .expected = root_version});
    auto r = meta::multi_sync(*s.rocks, std::move(batch));
    if (!r || !r->applied) {
        return error(r ? std::make_error_code(std::errc::io_error) : r.error());
    }
    return count;
}

// Erases every delta record of a cursor whose root is spilled with no live deltas (after a
// compaction), directly: a bench cleanup so that a later measurement starts clean.
result<void> erase_all_deltas(stores& s,
                              const cursor::cursor_id& id,
                              const cursor::cursor_options& o) {
    auto keys = cursor::cursor_keys::make(o.key_prefix, id);
    if (!keys) {
        return error(keys.error());
    }
    auto all = meta::list_sync(*s.rocks, keys->delta_prefix);
    if (!all) {
        return error(all.error());
    }
    std::vector<meta::op> batch;
    for (std::size_t i = 0; i < all->size(); ++i) {
        batch.emplace_back(meta::erase{.key = (*all)[i].key});
        if (batch.size() == 1000 || i + 1 == all->size()) {
            auto r = meta::multi_sync(*s.rocks, std::move(batch));
            batch.clear();
            if (!r || !r->applied) {
                return error(r ? std::make_error_code(std::errc::io_error) : r.error());
            }
        }
    }
    return {};
}

result<level_result> run_level(
    stores& s, std::uint64_t holes, double seconds, bool recover, const cursor::cursor_options& o) {
    level_result lr;
    lr.holes = holes;
    const cursor::cursor_id id{"bench", fmt::format("holes-{}", holes)};
    auto created = cursor::create_sync(s.env(), id, cursor::initial_position::earliest(), o);
    if (!created) {
        std::fprintf(stderr, "cursor bench: create failed: %s\n",
                     created.error().message().c_str());
        return error(created.error());
    }
    auto c = *created;
    auto b = build_holes(s, *c, holes);
    if (!b) {
        return error(b.error());
    }
    lr.build_s = b->seconds;
    lr.resident = c->resident_bytes();
    // A spilled state: before each phase, write a fresh snapshot (skip(0), the compaction path)
    // so that no compaction falls into the short measured phase; its cost is measured here and
    // added to the phase amortized (amortize()).
    const bool spilled = c->snapshot().spilled;
    auto fresh_snapshot = [&]() -> result<void> {
        if (!spilled) {
            return {};
        }
        auto sc = measure_snapshot(s, *c);
        if (!sc) {
            return error(sc.error());
        }
        if (!lr.snapshot) {
            lr.snapshot = *sc;
        }
        return {};
    };
    if (auto r = fresh_snapshot(); !r) {
        return error(r.error());
    }
    auto f = c->current_fence();

    // Individual acks in order from the end of the holed region (2n): each extends the last
    // range (or MDO when there are no holes), so the hole count stays n throughout.
    const offset base = 2 * holes;
    auto ind = measure(
        s, kWindow, seconds, ~std::uint64_t{0},
        [&c, f, base](std::uint64_t i, cursor::cursor::op_callback done) {
            c->ack(f, base + i, std::move(done));
        },
        "individual acks");
    if (!ind) {
        return error(ind.error());
    }
    lr.individual = *ind;

    // Batch-index acks: entries of kBatchSize messages right after, one index per ack, in
    // order; an entry whose last index is acked becomes a whole ack and joins the range.
    const offset bbase = base + ind->acks;
    if (auto r = fresh_snapshot(); !r) {
        return error(r.error());
    }
    f = c->current_fence();
    auto bat = measure(
        s, kWindow, seconds, ~std::uint64_t{0},
        [&c, f, bbase](std::uint64_t i, cursor::cursor::op_callback done) {
            auto bits = cursor::batch_bits::none_set(kBatchSize);
            bits.set(static_cast<std::uint32_t>(i % kBatchSize));
            c->ack_batch_index(f, bbase + i / kBatchSize, std::move(bits), std::move(done));
        },
        "batch-index acks");
    if (!bat) {
        return error(bat.error());
    }
    lr.batch = *bat;
    // One past the last entry the batch phase touched: never acked yet, so the cumulative ack
    // through it always changes the state (even with no holes).
    const offset last = bbase + (bat->acks + kBatchSize - 1) / kBatchSize;
    lr.holes_after = c->snapshot().ranges.size();

    if (recover) {
        auto r = time_recovery(s, id, o, 3, lr.holes_after, nullptr);
        if (!r) {
            return error(r.error());
        }
        lr.recovery_s = *r;
    }
    if (lr.snapshot) {
        amortize(lr.individual, *lr.snapshot, o);
        amortize(lr.batch, *lr.snapshot, o);
    }

    // One cumulative ack through `last`: clears all n holes (O(n) by nature).
    const auto mb = s.meta->value_bytes();
    const auto ob = s.fs->bytes_written();
    const double cpu0 = cpu_seconds();
    const auto t0 = clock_type::now();
    auto cum = cursor::ack_cumulative_sync(*c, c->current_fence(), last);
    lr.cumulative_wall_us =
        std::chrono::duration<double, std::micro>(clock_type::now() - t0).count();
    lr.cumulative_cpu_us = (cpu_seconds() - cpu0) * 1e6;
    lr.cumulative_bytes = s.meta->value_bytes() - mb + s.fs->bytes_written() - ob;
    if (!cum || cum->status != cursor::ack_status::ok || c->mark_delete() != last + 1) {
        std::fprintf(stderr, "cursor bench: cumulative ack failed\n");
        return error(cum ? std::make_error_code(std::errc::io_error) : cum.error());
    }
    (void)cursor::close_sync(*c);
    return lr;
}

std::string holes_name(std::uint64_t n) {
    if (n >= 1000000 && n % 1000000 == 0) {
        return fmt::format("{}M", n / 1000000);
    }
    if (n >= 1000 && n % 1000 == 0) {
        return fmt::format("{}k", n / 1000);
    }
    return fmt::format("{}", n);
}

const char* verdict(bool ok) {
    return ok ? "ok" : "MISSED";
}

}  // namespace

int run_cursor_bench(const cursor_bench_options& options) {
    namespace fsys = std::filesystem;
    const fsys::path root = fsys::path(options.data_dir) / "cursor-bench";
    std::error_code ec;
    const bool had_dir = fsys::exists(options.data_dir, ec);
    fsys::remove_all(root, ec);
    fsys::create_directories(root, ec);
    if (ec) {
        std::fprintf(stderr, "cursor bench: cannot create %s: %s\n", root.c_str(),
                     ec.message().c_str());
        return 1;
    }
    struct cleanup {
        fsys::path p;
        fsys::path parent;  // removed too when this run created it (and it is empty)
        ~cleanup() {
            std::error_code e;
            fsys::remove_all(p, e);
            if (!parent.empty()) {
                fsys::remove(parent, e);
            }
        }
    } const guard{root, had_dir ? fsys::path() : fsys::path(options.data_dir)};

    const cursor::cursor_options o;  // defaults: spill threshold 2 KiB, so large states spill
    const double seconds = options.quick ? 1.0 : 3.0;
    std::printf(
        "cursor bench: RocksDB meta + file-system objects under %s; spill threshold %zu B "
        "(default), %zu acks in flight, %.0f s per phase, batch entries of %u messages\n",
        root.c_str(), o.spill_threshold_bytes, kWindow, seconds, kBatchSize);
    std::printf(
        "method: holes = acks of offsets 1,3,...,2n-1 (MDO stays 0). Measured acks are in order "
        "from offset 2n, so every ack\n"
        "  extends the last range and the hole count stays n. bytes/ack = (value bytes of every "
        "meta put + bytes written to\n"
        "  object files) / acks. CPU/ack = process user+sys time (getrusage, all threads: "
        "cursor, RocksDB, kernel) / acks;\n"
        "  a thread blocked in fdatasync uses no CPU, so time spent waiting for syncs is "
        "excluded (the kernel's CPU for the\n"
        "  write itself is included). acks/CAS = acks per metadata multi (group commit).\n");

    stores s;
    if (auto r = open_stores(s, root.string()); !r) {
        std::fprintf(stderr, "cursor bench: cannot open stores: %s\n", r.error().message().c_str());
        return 1;
    }

    const std::vector<std::uint64_t> levels = {0, 10000, 1000000};
    std::vector<level_result> results;
    for (auto n : levels) {
        auto r = run_level(s, n, seconds, n == 1000000, o);
        if (!r) {
            return 1;
        }
        std::printf("built %s holes in %.2f s\n", holes_name(n).c_str(), r->build_s);
        std::fflush(stdout);
        results.push_back(std::move(*r));
    }

    // 10M holes: built by acks like the others (only the recovery is measured).
    const std::uint64_t big = 10000000;
    double big_build_s = 0;
    std::vector<double> big_recovery;
    std::size_t big_resident = 0;
    std::optional<snapshot_cost> big_snapshot;
    std::uint64_t worst_deltas = 0;
    std::vector<double> worst_recovery;
    std::vector<double> stale_recovery;
    std::uint64_t uncapped_deltas = 0;
    double uncapped_recovery = 0;
    {
        const cursor::cursor_id id{"bench", "holes-10M"};
        auto c = cursor::create_sync(s.env(), id, cursor::initial_position::earliest(), o);
        if (!c) {
            std::fprintf(stderr, "cursor bench: create failed: %s\n", c.error().message().c_str());
            return 1;
        }
        auto b = build_holes(s, **c, big);
        if (!b) {
            return 1;
        }
        big_build_s = b->seconds;
        (void)cursor::close_sync(**c);
        c->reset();
        auto r = time_recovery(s, id, o, options.quick ? 1 : 3, big, &big_resident);
        if (!r) {
            return 1;
        }
        big_recovery = *r;
        auto again = cursor::open_sync(s.env(), id, o);
        if (!again) {
            return 1;
        }
        auto sc = measure_snapshot(s, **again);
        if (!sc) {
            return 1;
        }
        big_snapshot = *sc;
        (void)cursor::close_sync(**again);
        again->reset();
        std::printf("built 10M holes in %.2f s (%.0f acks/s)\n", big_build_s,
                    static_cast<double>(big) / big_build_s);
        std::fflush(stdout);

        // Worst case: just before a compaction, with as many (minimal) live deltas as the
        // cursor keeps.
        auto n = fill_deltas_to_compaction(s, id, o, 2 * big);
        if (!n) {
            return 1;
        }
        worst_deltas = *n;
        auto w = time_recovery(s, id, o, options.quick ? 1 : 3, big, nullptr);
        if (!w) {
            return 1;
        }
        worst_recovery = *w;
        // Right after that compaction: every one of those deltas is stale (recovery lists and
        // skips them; the commits after it erase 64 each).
        {
            auto h = cursor::open_sync(s.env(), id, o);
            if (!h || !measure_snapshot(s, **h)) {
                return 1;
            }
            (void)cursor::close_sync(**h);
        }
        auto st = time_recovery(s, id, o, options.quick ? 1 : 3, big, nullptr);
        if (!st) {
            return 1;
        }
        stale_recovery = *st;
        if (!options.quick) {
            // For comparison, the byte rule alone (no delta count cap), from a clean start.
            if (auto e = erase_all_deltas(s, id, o); !e) {
                return 1;
            }
            cursor::cursor_options uncapped = o;
            uncapped.max_live_deltas = ~std::uint64_t{0};
            auto nu = fill_deltas_to_compaction(s, id, uncapped, 2 * big);
            if (!nu) {
                return 1;
            }
            uncapped_deltas = *nu;
            auto wu = time_recovery(s, id, uncapped, 1, big, nullptr);
            if (!wu) {
                return 1;
            }
            uncapped_recovery = wu->front();
        }
    }

    std::printf("\n%-5s %-10s %7s %5s %7s %7s %7s %7s %7s %7s %7s %7s %6s\n", "holes", "ack",
                "acks/s", "a/CAS", "meta", "delta", "obj", "snap", "B/ack", "CPU", "+snap",
                "cursor", "holes");
    std::printf("%-5s %-10s %7s %5s %7s %7s %7s %7s %7s %7s %7s %7s %6s\n", "", "", "", "", "B/ack",
                "B/ack", "B/ack", "B/ack", "total", "us/ack", "us/ack", "us/ack", "after");
    for (const auto& r : results) {
        for (int k = 0; k < 2; ++k) {
            const phase& p = k == 0 ? r.individual : r.batch;
            std::printf(
                "%-5s %-10s %7.0f %5.1f %7.1f %7.1f %7.1f %7.2f %7.1f %7.2f %7.2f %7.2f %6s\n",
                holes_name(r.holes).c_str(), k == 0 ? "individual" : "batch-idx", p.rate(),
                p.acks_per_cas(), p.meta_per_ack(), p.delta_per_ack(), p.object_per_ack(),
                p.snap_bytes_per_ack, p.bytes_per_ack(), p.cpu_us_per_ack(),
                p.total_cpu_us_per_ack(), p.cb_cpu_us_per_ack(), holes_name(r.holes_after).c_str());
        }
    }
    std::printf(
        "columns: meta = value bytes put to the meta store (root + delta records); delta = the\n"
        "  delta-record part of it; obj = object bytes written in the phase (a spilled state gets "
        "a fresh snapshot\n"
        "  before each phase, so this is 0 unless a compaction still fell into it); snap = "
        "compaction snapshot bytes\n"
        "  amortized per ack: a snapshot of size S is written once the deltas since the last one "
        "reach max(2 KiB, S) bytes\n"
        "  or max_live_deltas records, so snap = S x max(delta / max(2 KiB, S), CAS per ack / "
        "max_live_deltas), S measured\n"
        "  below; B/ack total = meta + snap.\n"
        "  CPU = process CPU per ack in the phase; +snap = CPU plus the snapshot's CPU amortized "
        "the same way;\n"
        "  cursor = CPU of the meta store's callback thread alone (cursor completions, group "
        "formation, encoding).\n");
    for (const auto& r : results) {
        if (r.snapshot) {
            std::printf(
                "snapshot of the whole %s-hole state (skip(0), the compaction path): %llu B, wall "
                "%.0f us, CPU %.0f us\n",
                holes_name(r.holes_after).c_str(),
                static_cast<unsigned long long>(r.snapshot->bytes), r.snapshot->wall_us,
                r.snapshot->cpu_us);
        }
    }
    if (big_snapshot) {
        std::printf("snapshot of the whole 10M-hole state: %llu B, wall %.0f us, CPU %.0f us\n",
                    static_cast<unsigned long long>(big_snapshot->bytes), big_snapshot->wall_us,
                    big_snapshot->cpu_us);
    }
    std::printf("\ncumulative ack clearing all holes (O(holes) by nature, reported separately):\n");
    for (const auto& r : results) {
        std::printf("  %-5s holes: wall %10.0f us, CPU %10.0f us, %llu B written\n",
                    holes_name(r.holes_after).c_str(), r.cumulative_wall_us, r.cumulative_cpu_us,
                    static_cast<unsigned long long>(r.cumulative_bytes));
    }

    const level_result& zero = results.front();
    const level_result& mil = results.back();
    auto ratio = [](double a, double b) {
        return b > 0 ? a / b : 0;
    };
    const double bytes_ratio =
        ratio(mil.individual.bytes_per_ack(), zero.individual.bytes_per_ack());
    const double bytes_ratio_b = ratio(mil.batch.bytes_per_ack(), zero.batch.bytes_per_ack());
    const double cpu_ratio =
        ratio(mil.individual.total_cpu_us_per_ack(), zero.individual.total_cpu_us_per_ack());
    const double cpu_ratio_b =
        ratio(mil.batch.total_cpu_us_per_ack(), zero.batch.total_cpu_us_per_ack());
    const double rec1 = median(mil.recovery_s);
    const double rec10 = median(big_recovery);
    const double bph1 = static_cast<double>(mil.resident) / static_cast<double>(mil.holes);
    const double bph10 = static_cast<double>(big_resident) / static_cast<double>(big);
    const double bph = std::max(bph1, bph10);

    std::printf(
        "\nrecovery (open: root + snapshot + deltas), median of %zu / %zu runs: 1M holes "
        "%.3f s, 10M holes %.3f s\n",
        mil.recovery_s.size(), big_recovery.size(), rec1, rec10);
    const double rec10w = median(worst_recovery);
    std::printf(
        "recovery worst case, 10M holes just before a compaction: %llu live deltas (cap "
        "max_live_deltas = %llu), median of %zu runs %.3f s\n",
        static_cast<unsigned long long>(worst_deltas),
        static_cast<unsigned long long>(o.max_live_deltas), worst_recovery.size(), rec10w);
    std::printf(
        "  right after that compaction (%llu stale deltas listed and skipped): median %.3f s\n",
        static_cast<unsigned long long>(worst_deltas), median(stale_recovery));
    if (uncapped_deltas > 0) {
        std::printf(
            "  without the cap (byte rule only) it would be %llu live deltas: %.3f s (1 run)\n",
            static_cast<unsigned long long>(uncapped_deltas), uncapped_recovery);
    }
    std::printf("resident bytes per hole: 1M %.1f (built by acks), 10M %.1f (recovered)\n", bph1,
                bph10);
    std::printf("\ntargets:\n");
    std::printf(
        "  bytes/ack 1M vs 0 holes   individual %6.2fx, batch-idx %6.2fx  (target <= 2x)  %s\n",
        bytes_ratio, bytes_ratio_b, verdict(bytes_ratio <= 2 && bytes_ratio_b <= 2));
    std::printf(
        "  CPU/ack   1M vs 0 holes   individual %6.2fx, batch-idx %6.2fx  (target <= 2x)  %s\n",
        cpu_ratio, cpu_ratio_b, verdict(cpu_ratio <= 2 && cpu_ratio_b <= 2));
    std::printf("  recovery with 10M holes   %.3f s  (target < 2 s)  %s\n", rec10,
                verdict(rec10 < 2));
    std::printf("  same, worst case          %.3f s  (target < 2 s)  %s\n", rec10w,
                verdict(rec10w < 2));
    std::printf("  resident bytes per hole   %.1f B  (target <= 32 B)  %s\n", bph,
                verdict(bph <= 32));
    std::printf(
        "cursor-bench: bytes_per_ack_1M_vs_0=%.2f cpu_per_ack_1M_vs_0=%.2f recovery_10M_s=%.3f "
        "bytes_per_hole=%.1f batch_bytes_per_ack_1M_vs_0=%.2f batch_cpu_per_ack_1M_vs_0=%.2f "
        "recovery_1M_s=%.3f ack_per_s_0=%.0f ack_per_s_1M=%.0f bytes_per_ack_0=%.1f "
        "bytes_per_ack_1M=%.1f cpu_us_per_ack_0=%.2f cpu_us_per_ack_1M=%.2f "
        "cumulative_clear_1M_us=%.0f recovery_10M_worst_s=%.3f recovery_10M_worst_deltas=%llu "
        "recovery_10M_after_compaction_s=%.3f\n",
        bytes_ratio, cpu_ratio, rec10, bph, bytes_ratio_b, cpu_ratio_b, rec1,
        zero.individual.rate(), mil.individual.rate(), zero.individual.bytes_per_ack(),
        mil.individual.bytes_per_ack(), zero.individual.total_cpu_us_per_ack(),
        mil.individual.total_cpu_us_per_ack(), mil.cumulative_wall_us, rec10w,
        static_cast<unsigned long long>(worst_deltas), median(stale_recovery));
    return 0;
}

}  // namespace nereus::app
