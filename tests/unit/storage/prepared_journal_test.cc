// Prepared journal files (doc/format/segment.md, "Prepared journal files"): the switch to a
// zero-filled spare, recovery of zero tails (last and non-last files), torn blocks and damage
// inside a prepared file, crashes during preparation and during the switch, and the fallback
// when no spare is ready (fault_file_system; gates from counting_file_system).

#include "nereus/base/fault_file_system.h"
#include "nereus/base/forwarding_file_system.h"
#include "nereus/storage/errc.h"
#include "nereus/storage/format.h"
#include "nereus/storage/journal_scan.h"
#include "nereus/storage/stream_store.h"
#include "nereus/storage/verify.h"

#include <gtest/gtest.h>

#include "support/counting_file_system.h"
#include "support/payloads.h"
#include "support/store_helpers.h"
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

namespace nereus::storage {
namespace {

using namespace testing;

constexpr std::size_t kPayload = 40;

// Records, in order and with their times, what the preparer does to journal/spare.tmp (open,
// each write's offset and size, syncs) and the renames of it; forwards everything
// (base/forwarding_file_system.h).
class spare_recorder final : public forwarding_file_system {
public:
    struct event {
        enum class kind { open, write, sync, drop, rename } what;
        std::uint64_t offset = 0;
        std::uint64_t size = 0;
        std::chrono::steady_clock::time_point at;
    };
    explicit spare_recorder(std::shared_ptr<file_system> inner)
        : forwarding_file_system(std::move(inner)) {}

    std::vector<event> events() {
        const std::lock_guard l(mu_);
        return events_;
    }
    // Waits (bounded: 60 s) until `n` syncs of spare.tmp were recorded.
    bool wait_for_syncs(std::size_t n) {
        std::unique_lock l(mu_);
        return cv_.wait_for(l, std::chrono::seconds(60), [&] { return syncs_ >= n; });
    }

    result<std::unique_ptr<file>> open(const std::string& path, open_mode mode) override {
        auto f = inner_->open(path, mode);
        if (!f || !path.ends_with(format::kSpareJournalTmpName)) {
            return f;
        }
        record({event::kind::open});
        return std::unique_ptr<file>(std::make_unique<recorded_file>(this, std::move(*f)));
    }
    result<void> rename_noreplace(const std::string& a, const std::string& b) override {
        auto r = inner_->rename_noreplace(a, b);
        if (r && a.ends_with(format::kSpareJournalTmpName)) {
            record({event::kind::rename});
        }
        return r;
    }

private:
    class recorded_file final : public forwarding_file {
    public:
        recorded_file(spare_recorder* r, std::unique_ptr<file> f)
            : forwarding_file(std::move(f)), r_(r) {}
        result<void> write_at(std::uint64_t o, bytes_view d) override {
            r_->record({event::kind::write, o, d.size()});
            return inner_->write_at(o, d);
        }
        result<void> writev_at(std::uint64_t o, std::span<const bytes_view> parts) override {
            std::uint64_t n = 0;
            for (const auto& p : parts) {
                n += p.size();
            }
            r_->record({event::kind::write, o, n});
            return inner_->writev_at(o, parts);
        }
        result<void> sync() override {
            auto r = inner_->sync();
            r_->record({event::kind::sync});
            return r;
        }
        result<void> drop_cached(std::uint64_t o, std::uint64_t n) override {
            r_->record({event::kind::drop, o, n});
            return inner_->drop_cached(o, n);
        }

    private:
        spare_recorder* r_;
    };

    void record(event e) {
        e.at = std::chrono::steady_clock::now();
        {
            const std::lock_guard l(mu_);
            events_.push_back(e);
            if (e.what == event::kind::sync) {
                ++syncs_;
            }
        }
        cv_.notify_all();
    }

    std::mutex mu_;
    std::condition_variable cv_;
    std::vector<event> events_;
    std::size_t syncs_ = 0;
};

class PreparedJournal : public ::testing::Test {
protected:
    static store_options opts() {
        store_options o = tiny_options();  // 8 KiB journal files, so spares are small
        o.checkpoint_bytes = 1ULL << 30;   // keep every journal file for inspection
        return o;
    }
    std::unique_ptr<stream_store> open(store_options o = opts()) {
        return open_store(fs_, "/db", o);
    }
    // Appends to stream 1 until the store runs on a prepared journal file (bounded: 60 s).
    void append_until_prepared(stream_store& s) {
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
        while (s.stats().prepared_journals == 0 && std::chrono::steady_clock::now() < deadline) {
            append(s);
        }
        ASSERT_GE(s.stats().prepared_journals, 1U) << "no switch to a prepared file";
    }
    void append(stream_store& s) {
        auto r = s.append_sync(stream_id(1), payload(1, acked_, kPayload));
        ASSERT_TRUE(r) << r.error().message();
        ASSERT_EQ(r->value(), acked_);
        ++acked_;
    }
    void expect_all_acked(stream_store& s) {
        auto all = read_all(s, stream_id(1));
        ASSERT_GE(all.size(), acked_);
        for (std::uint64_t i = 0; i < acked_; ++i) {
            ASSERT_EQ(all[i], payload(1, i, kPayload)) << i;
        }
    }
    std::vector<std::string> journals() {
        std::vector<std::string> out;
        auto names = fs_->list_dir("/db/journal");
        EXPECT_TRUE(names);
        for (const auto& n : *names) {
            if (format::parse_journal_file_name(n)) {
                out.push_back("/db/journal/" + n);
            }
        }
        return out;
    }
    std::uint64_t size_of(const std::string& path) {
        auto s = fs_->file_size(path);
        EXPECT_TRUE(s) << path;
        return s ? *s : 0;
    }
    bool exists(const std::string& path) {
        auto e = fs_->exists(path);
        EXPECT_TRUE(e);
        return e && *e;
    }
    // Block positions of a journal file, and where its blocks end.
    std::pair<std::vector<std::uint64_t>, journal_file_scan> blocks_of(const std::string& path) {
        std::vector<std::uint64_t> pos;
        auto f = fs_->open(path, open_mode::read_only);
        EXPECT_TRUE(f);
        auto s = scan_journal_file(**f, 0, 0, [&](std::uint64_t p, bytes_view) {
            pos.push_back(p);
            return result<void>{};
        });
        EXPECT_TRUE(s);
        return {pos, *s};
    }
    std::vector<std::byte> read_bytes(const std::string& path, std::uint64_t at, std::size_t n) {
        auto f = fs_->open(path, open_mode::read_only);
        EXPECT_TRUE(f);
        std::vector<std::byte> b(n);
        auto r = (*f)->read_at(at, b);
        EXPECT_TRUE(r);
        b.resize(r ? *r : 0);
        return b;
    }
    void write_bytes(const std::string& path, std::uint64_t at, const std::vector<std::byte>& b) {
        auto f = fs_->open(path, open_mode::create);
        ASSERT_TRUE(f);
        ASSERT_TRUE((*f)->write_at(at, b));
        ASSERT_TRUE((*f)->sync());
        ASSERT_TRUE(fs_->sync_dir(path_parent(path)));
    }
    // The process dies; the page cache (everything written) survives.
    void kill(std::unique_ptr<stream_store>& s) {
        fs_->crash_now();
        s.reset();
        fs_->process_crash();
    }
    void power_cut(std::unique_ptr<stream_store>& s) {
        fs_->crash_now();
        s.reset();
        fs_->power_loss();
    }
    // Opens the store again and checks that every acknowledged append is there. Call through
    // ASSERT_NO_FATAL_FAILURE when `s` is used afterwards.
    void reopen_and_check(std::unique_ptr<stream_store>& s) {
        s = open();
        ASSERT_NE(s, nullptr);
        expect_all_acked(*s);
    }
    // storage verify reports nothing.
    void expect_clean() {
        auto rep = verify(*fs_, "/db");
        ASSERT_TRUE(rep);
        EXPECT_TRUE(rep->issues.empty()) << rep->issues[0].to_string();
    }
    // Opening fails closed: corrupt_journal at `file`:`pos`.
    void expect_corrupt_journal_at(const std::string& file, std::uint64_t pos) {
        corruption_info info;
        auto r = stream_store::open(fs_, "/db", opts(), &info);
        ASSERT_FALSE(r);
        EXPECT_EQ(r.error(), errc::corrupt_journal);
        EXPECT_EQ(info.file, file);
        EXPECT_EQ(info.byte_position, pos);
    }
    // Writes an all-zero journal file after `j`, as a switch to a spare leaves it.
    void write_zero_journal_after(const std::string& j) {
        const auto seq = *format::parse_journal_file_name(j.substr(j.rfind('/') + 1));
        write_bytes("/db/journal/" + format::journal_file_name(seq + 1), 0,
                    std::vector<std::byte>(opts().journal_max_bytes));
    }
    // A new, empty file system for the next variant of a test.
    void start_over() {
        fs_ = std::make_shared<fault_file_system>();
        acked_ = 0;
    }
    // Opens, appends until the store runs on a prepared file, then `more` appends in it.
    std::unique_ptr<stream_store> on_prepared_file(int more) {
        auto s = open();
        EXPECT_NE(s, nullptr);
        if (s == nullptr) {
            return s;
        }
        EXPECT_TRUE(s->create_stream(stream_id(1)));
        append_until_prepared(*s);
        for (int i = 0; i < more; ++i) {
            append(*s);
        }
        return s;
    }

    std::shared_ptr<fault_file_system> fs_ = std::make_shared<fault_file_system>();
    std::uint64_t acked_ = 0;
};

TEST_F(PreparedJournal, SwitchesToAPreparedFileWhoseCommitsDoNotExtendIt) {
    auto s = on_prepared_file(0);
    ASSERT_NE(s, nullptr);
    const std::string j = journals().back();
    EXPECT_EQ(size_of(j), opts().journal_max_bytes) << "the active file is the zero-filled spare";
    const auto before = blocks_of(j).second.end_pos;
    for (int i = 0; i < 5; ++i) {
        append(*s);
    }
    EXPECT_EQ(journals().back(), j);
    EXPECT_GT(blocks_of(j).second.end_pos, before);
    EXPECT_EQ(size_of(j), opts().journal_max_bytes) << "commits overwrite; they never extend";
    // Later rolls (every 8 KiB) switch to spares prepared while the file filled. Not every
    // roll finds one ready (the preparer thread may not have run yet on a loaded machine; CI
    // once saw one switch in six rolls), so append until one more does (bounded: 60 s).
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (s->stats().prepared_journals < 2 && std::chrono::steady_clock::now() < deadline) {
        append(*s);
    }
    EXPECT_GE(s->stats().prepared_journals, 2U);
    ASSERT_TRUE(s->close());
    // A clean close cuts the unused zero tail; the spare is kept for the next open.
    EXPECT_EQ(size_of(journals().back()), blocks_of(journals().back()).second.end_pos);
    expect_clean();
    ASSERT_NO_FATAL_FAILURE(reopen_and_check(s));
}

// store_options::prepare_journal_at_open: the spare is asked for by the open itself, and the
// first commit after it is complete goes to it. Without the option, no spare is asked for
// before the unprepared file holds half a file (here 4 KiB).
TEST_F(PreparedJournal, ASpareAskedForAtOpenTakesTheFirstCommit) {
    for (const bool at_open : {true, false}) {
        SCOPED_TRACE(at_open);
        fs_ = std::make_shared<fault_file_system>();
        acked_ = 0;
        store_options o = opts();
        o.prepare_journal_at_open = at_open;
        auto s = open(o);
        ASSERT_NE(s, nullptr);
        EXPECT_EQ(s->stats().spares_asked, at_open ? 1U : 0U);
        if (at_open) {
            const std::string spare = std::string("/db/journal/") + format::kSpareJournalName;
            for (int i = 0; i < 6000 && !exists(spare); ++i) {
                std::this_thread::sleep_for(std::chrono::milliseconds(10));
            }
            ASSERT_TRUE(exists(spare)) << "the spare was not prepared";
        }
        ASSERT_TRUE(s->create_stream(stream_id(1)));
        append(*s);
        EXPECT_EQ(s->stats().prepared_journals, at_open ? 1U : 0U);
        EXPECT_EQ(s->stats().spares_asked, at_open ? 1U : 0U);
        ASSERT_TRUE(s->close());
        s = open(o);
        ASSERT_NE(s, nullptr);
        expect_all_acked(*s);
        ASSERT_TRUE(s->close());
    }
}

TEST_F(PreparedJournal, NoSpareWhileTheJournalIsWrittenFasterThanTheLimit) {
    store_options o = opts();
    o.prepare_max_bytes_per_s = 1;  // always written faster than 1 byte/s
    auto s = open(o);
    ASSERT_TRUE(s);
    ASSERT_TRUE(s->create_stream(stream_id(1)));
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (s->stats().journal_rolls < 3 && std::chrono::steady_clock::now() < deadline) {
        append(*s);
    }
    ASSERT_GE(s->stats().journal_rolls, 3U);
    EXPECT_EQ(s->stats().prepared_journals, 0U);
    EXPECT_GE(s->stats().spares_skipped, 2U);
    auto names = fs_->list_dir("/db/journal");
    ASSERT_TRUE(names);
    for (const auto& name : *names) {
        EXPECT_EQ(name.find("spare"), std::string::npos) << name;
    }
    s.reset();
    auto again = open(o);
    ASSERT_TRUE(again);
    expect_all_acked(*again);
}

// The zero-fill is written in prepare_chunk_bytes chunks, each synced before the next is
// written, paced to prepare_bytes_per_s. The open found no spare, so the active file is
// unprepared: it switches to the spare (renamed from spare.tmp) once the first chunk is
// synced, and the preparer goes on filling it (prepare_lead_bytes 0: at the pace).
TEST_F(PreparedJournal, PreparationWritesPacedChunksEachSyncedBeforeTheNext) {
    store_options o = opts();
    o.journal_max_bytes = 32 << 10;
    o.prepare_chunk_bytes = 4096;        // 8 chunks per 32 KiB file
    o.prepare_bytes_per_s = 128U << 10;  // chunk k no sooner than k * 31.25 ms after the start
    o.prepare_lead_bytes = 0;
    auto rec = std::make_shared<spare_recorder>(fs_);
    auto s = open_store(rec, "/db", o);
    ASSERT_NE(s, nullptr);
    ASSERT_TRUE(s->create_stream(stream_id(1)));
    append_until_prepared(*s);
    // No more commits: the fill of the file taken after its first chunk runs to its end.
    const std::uint64_t chunks = o.journal_max_bytes / o.prepare_chunk_bytes;
    ASSERT_TRUE(rec->wait_for_syncs(chunks));
    ASSERT_TRUE(s->close());
    EXPECT_EQ(s->stats().partial_spares, 1U);
    EXPECT_EQ(s->stats().fill_stops, 0U);
    auto ev = rec->events();
    using kind = spare_recorder::event::kind;
    // The first preparation: open, (write, sync, drop its cached pages) x up to 8; the take's
    // rename of spare.tmp comes after the first sync.
    ASSERT_EQ(ev[0].what, kind::open);
    ASSERT_GE(ev.size(), 4U);
    EXPECT_EQ(ev[1].what, kind::write);
    EXPECT_EQ(ev[2].what, kind::sync);
    const auto take =
        std::find_if(ev.begin(), ev.end(), [](const auto& e) { return e.what == kind::rename; });
    ASSERT_NE(take, ev.end());
    EXPECT_GT(take - ev.begin(), 2) << "taken only once its first chunk is durable";
    ev.erase(take);
    const auto next =
        std::find_if(ev.begin() + 1, ev.end(), [](const auto& e) { return e.what == kind::open; });
    ev.erase(next, ev.end());  // a later spare's events
    ASSERT_EQ(ev.size(), 1 + 3 * chunks);
    for (std::uint64_t k = 0; k < chunks; ++k) {
        SCOPED_TRACE(k);
        const auto& w = ev[1 + 3 * k];
        ASSERT_EQ(w.what, kind::write);
        EXPECT_EQ(w.offset, k * o.prepare_chunk_bytes);
        EXPECT_EQ(w.size, o.prepare_chunk_bytes);
        EXPECT_EQ(ev[2 + 3 * k].what, kind::sync) << "each chunk is synced before the next";
        // Its pages leave the cache only once synced (the committer's direct writes would
        // otherwise evict them one write at a time).
        const auto& d = ev[3 + 3 * k];
        EXPECT_EQ(d.what, kind::drop);
        EXPECT_EQ(d.offset, w.offset);
        EXPECT_EQ(d.size, w.size);
        // The pace: a lower bound only (a loaded machine is slower, never faster).
        const double due_s = static_cast<double>(k * o.prepare_chunk_bytes) /
                             static_cast<double>(o.prepare_bytes_per_s);
        EXPECT_GE(std::chrono::duration<double>(w.at - ev[0].at).count(), due_s);
    }
    s = open(o);
    ASSERT_NE(s, nullptr);
    expect_all_acked(*s);
}

// close() stops a preparation that waits for its pace (here: 1 byte/s, a 1024 s wait per
// chunk): the half-written spare.tmp is removed and nothing is named `spare`.
TEST_F(PreparedJournal, CloseStopsAPacedPreparationBetweenChunks) {
    store_options o = opts();
    o.prepare_chunk_bytes = 1024;
    o.prepare_bytes_per_s = 1;
    auto rec = std::make_shared<spare_recorder>(fs_);
    auto s = open_store(rec, "/db", o);
    ASSERT_NE(s, nullptr);
    ASSERT_TRUE(s->create_stream(stream_id(1)));
    // The spare is asked for once the active file holds 4 KiB.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (rec->events().empty() && std::chrono::steady_clock::now() < deadline) {
        append(*s);
    }
    ASSERT_TRUE(rec->wait_for_syncs(1)) << "the first chunk was never synced";
    const auto t0 = std::chrono::steady_clock::now();
    ASSERT_TRUE(s->close());
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(60))
        << "close() waited for the pace";
    std::size_t writes = 0;
    std::size_t renames = 0;
    for (const auto& e : rec->events()) {
        renames += e.what == spare_recorder::event::kind::rename ? 1 : 0;
        writes += e.what == spare_recorder::event::kind::write ? 1 : 0;
    }
    EXPECT_EQ(writes, 1U) << "the second chunk is due only 1024 s after the first";
    // An append of the loop that commits after the first chunk's sync takes spare.tmp as its
    // journal file (a spare usable while it is filled); nothing is ever renamed to `spare`.
    EXPECT_EQ(renames, s->stats().partial_spares);
    EXPECT_FALSE(exists("/db/journal/spare.tmp"));
    EXPECT_FALSE(exists("/db/journal/spare"));
    expect_clean();
    ASSERT_NO_FATAL_FAILURE(reopen_and_check(s));
}

TEST_F(PreparedJournal, ZeroTailIsTheEndOfTheLastFileAfterAPowerCut) {
    auto s = on_prepared_file(4);
    ASSERT_NE(s, nullptr);
    const std::string j = journals().back();
    power_cut(s);
    ASSERT_EQ(size_of(j), opts().journal_max_bytes);
    const auto [pos, scan] = blocks_of(j);
    EXPECT_GE(pos.size(), 4U);
    EXPECT_TRUE(scan.zero_tail);
    EXPECT_FALSE(scan.defect);
    expect_clean();
    ASSERT_NO_FATAL_FAILURE(reopen_and_check(s));
    append(*s);
    power_cut(s);
    ASSERT_NO_FATAL_FAILURE(reopen_and_check(s));
}

TEST_F(PreparedJournal, TornBlockBeforeTheZeroTailIsTruncated) {
    for (int variant = 0; variant < 3; ++variant) {
        SCOPED_TRACE(variant);
        start_over();
        auto s = on_prepared_file(3);
        ASSERT_NE(s, nullptr);
        const std::string j = journals().back();
        kill(s);
        const auto [pos, scan] = blocks_of(j);
        ASSERT_TRUE(scan.zero_tail);
        const std::uint64_t end = scan.end_pos;
        // The block after the last one, as a torn write into the zeros left it: its first bytes
        // only; all of it but the first 24 bytes (its first sector lost); or whole with a bad
        // checksum.
        auto block = read_bytes(j, pos.back(), end - pos.back());
        format::put_u64(block.data() + 12, scan.next_seq);
        if (variant == 0) {
            block.resize(30);
        } else if (variant == 1) {
            std::fill(block.begin(), block.begin() + 24, std::byte{0});
        } else {
            block.back() ^= std::byte{0x11};
        }
        write_bytes(j, end, block);
        auto rep = verify(*fs_, "/db");
        ASSERT_TRUE(rep);
        EXPECT_TRUE(rep->ok());
        ASSERT_EQ(rep->issues.size(), 1U);
        EXPECT_EQ(rep->issues[0].level, verify_issue::severity::repairable);
        EXPECT_EQ(rep->issues[0].file, j);
        EXPECT_EQ(rep->issues[0].byte_position, end);
        s = open();
        ASSERT_NE(s, nullptr);
        auto all = read_all(*s, stream_id(1));
        ASSERT_EQ(all.size(), acked_) << "the torn block became nothing else";
        expect_all_acked(*s);
        append(*s);
        ASSERT_TRUE(s->close());
        expect_clean();
    }
}

TEST_F(PreparedJournal, DamageInsideAPreparedFilesDataIsCorruption) {
    for (int variant = 0; variant < 2; ++variant) {
        SCOPED_TRACE(variant);
        start_over();
        auto s = on_prepared_file(3);
        ASSERT_NE(s, nullptr);
        const std::string j = journals().back();
        power_cut(s);
        const auto [pos, scan] = blocks_of(j);
        ASSERT_GE(pos.size(), 3U);
        const std::uint64_t victim = pos[pos.size() - 3];  // two valid blocks follow it
        if (variant == 0) {
            auto b = read_bytes(j, victim + 30, 1);
            write_bytes(j, victim + 30, {b[0] ^ std::byte{0x5a}});
        } else {
            // Its header zeroed: zeros followed by blocks are damage, not the file's end.
            write_bytes(j, victim, std::vector<std::byte>(format::kBlockHeaderSize));
        }
        const auto image = read_bytes(j, 0, 1 << 20);
        expect_corrupt_journal_at(j, victim);
        EXPECT_EQ(read_bytes(j, 0, 1 << 20), image) << "a failed open changes nothing";
        auto rep = verify(*fs_, "/db");
        ASSERT_TRUE(rep);
        EXPECT_FALSE(rep->ok());
    }
}

// What a crash during recovery's switch leaves: the previous last file (with its zero tail) is
// no longer the last one, and the new file is all zeros.
TEST_F(PreparedJournal, NonLastFileWithAZeroTailEndsThere) {
    auto s = on_prepared_file(3);
    ASSERT_NE(s, nullptr);
    const std::string j = journals().back();
    kill(s);
    write_zero_journal_after(j);
    expect_clean();
    ASSERT_NO_FATAL_FAILURE(reopen_and_check(s));
    append(*s);
    kill(s);
    ASSERT_NO_FATAL_FAILURE(reopen_and_check(s));
}

TEST_F(PreparedJournal, NonZeroBytesInANonLastFilesTailAreCorruption) {
    auto s = on_prepared_file(3);
    ASSERT_NE(s, nullptr);
    const std::string j = journals().back();
    kill(s);
    const auto end = blocks_of(j).second.end_pos;
    write_bytes(j, end + 100, std::vector<std::byte>(10, std::byte{0x33}));
    // In the last file that is a torn tail ...
    auto rep = verify(*fs_, "/db");
    ASSERT_TRUE(rep);
    EXPECT_TRUE(rep->ok());
    // ... but with a file after it, the writes never stopped there: corruption.
    write_zero_journal_after(j);
    expect_corrupt_journal_at(j, end);
}

TEST_F(PreparedJournal, OpenRemovesAnInterruptedPreparationAndASpareThatDoesNotFit) {
    ASSERT_TRUE(fs_->create_dirs("/db/journal"));
    write_bytes("/db/journal/spare.tmp", 0, std::vector<std::byte>(100, std::byte{0x42}));
    write_bytes("/db/journal/spare", 0, std::vector<std::byte>(100));
    auto o = opts();
    o.prepare_journal_files = false;  // no new spare: what is left is what open left
    auto s = open(o);
    ASSERT_NE(s, nullptr);
    EXPECT_FALSE(exists("/db/journal/spare.tmp"));
    EXPECT_FALSE(exists("/db/journal/spare"));
    EXPECT_EQ(s->stats().prepared_journals, 0U);
    ASSERT_TRUE(s->close());
    // A spare that fits is taken by the next open as its journal file.
    write_bytes("/db/journal/spare", 0, std::vector<std::byte>(opts().journal_max_bytes));
    s = open();
    ASSERT_NE(s, nullptr);
    EXPECT_EQ(s->stats().prepared_journals, 1U);
    EXPECT_FALSE(exists("/db/journal/spare")) << "no new spare before the file is half full";
    EXPECT_EQ(size_of(journals().back()), opts().journal_max_bytes);
}

// The preparer is held inside its sync: commits go on in the unprepared file (the fallback);
// then the process dies with the half-prepared spare.tmp on disk.
TEST_F(PreparedJournal, FallbackWithoutASpareThenCrashDuringPreparation) {
    auto cfs = std::make_shared<counting_file_system>(fs_);
    cfs->set_gate_suffix(format::kSpareJournalTmpName);
    cfs->close_gate();
    auto s = open_store(cfs, "/db", opts());
    ASSERT_NE(s, nullptr);
    ASSERT_TRUE(s->create_stream(stream_id(1)));
    const std::string j = journals().back();
    // The open found no spare: one is asked for once the file holds half its size (4 KiB).
    for (int i = 0; i < 60; ++i) {
        append(*s);
    }
    cfs->wait_for_gate_waiter();  // the spare is being prepared
    for (int i = 0; i < 20; ++i) {
        append(*s);
    }
    EXPECT_EQ(s->stats().prepared_journals, 0U);
    EXPECT_EQ(journals().back(), j);
    EXPECT_EQ(size_of(j), blocks_of(j).second.end_pos) << "unprepared: every commit extends it";
    fs_->crash_now();
    cfs->open_gate();
    s.reset();
    fs_->process_crash();
    ASSERT_TRUE(exists("/db/journal/spare.tmp")) << "precondition: the interrupted preparation";
    auto o = opts();
    o.prepare_journal_files = false;
    s = open(o);
    ASSERT_NE(s, nullptr);
    EXPECT_FALSE(exists("/db/journal/spare.tmp"));
    expect_all_acked(*s);
    ASSERT_TRUE(s->close());
    s = open();
    ASSERT_NE(s, nullptr);
    append_until_prepared(*s);
    expect_all_acked(*s);
}

// The spare was renamed to the new journal file and the process (or machine) died before the
// directory sync: either the rename survived (an all-zero last file) or it did not (the spare
// is still a spare). Both recover everything.
TEST_F(PreparedJournal, CrashDuringTheSwitch) {
    for (int power = 0; power < 2; ++power) {
        SCOPED_TRACE(power);
        start_over();
        auto s = on_prepared_file(3);
        ASSERT_NE(s, nullptr);
        kill(s);  // leaves records to replay and a zero-tailed last file
        // A spare ready for the next open.
        write_bytes("/db/journal/spare", 0, std::vector<std::byte>(opts().journal_max_bytes));
        auto cfs = std::make_shared<counting_file_system>(fs_);
        cfs->set_gate_suffix("/db/journal");
        cfs->close_gate();
        std::optional<result<std::unique_ptr<stream_store>>> opened;
        std::thread t([&] { opened = stream_store::open(cfs, "/db", opts()); });
        cfs->wait_for_gate_waiter();  // recovery renamed the spare; the directory sync waits
        fs_->crash_now();
        cfs->open_gate();
        t.join();
        ASSERT_TRUE(opened);
        ASSERT_FALSE(*opened) << "the directory sync failed";
        if (power != 0) {
            fs_->power_loss();
        } else {
            fs_->process_crash();
        }
        EXPECT_NE(exists("/db/journal/spare"), power == 0) << "the rename survives a kill only";
        ASSERT_NO_FATAL_FAILURE(reopen_and_check(s));
        append(*s);
        ASSERT_TRUE(s->close());
        expect_clean();
    }
}

// Counts open_direct() calls; the file system's default emulates them on open() + sync().
class direct_counter final : public forwarding_file_system {
public:
    using forwarding_file_system::forwarding_file_system;
    result<std::unique_ptr<file>> open_direct(const std::string& path) override {
        ++opened;
        return file_system::open_direct(path);
    }
    std::atomic<int> opened{0};
};

// Direct journal writes (store_options::direct_journal_writes, one aligned write per commit
// that rewrites the partial page before the block) leave the same blocks as buffered writes:
// records of sizes that start and end blocks anywhere in a page, across many files; and
// every acknowledged append survives a power cut.
TEST_F(PreparedJournal, DirectWritesLeaveTheSameBlocksAsBufferedOnes) {
    constexpr std::uint64_t kAppends = 300;
    auto size_of_entry = [](std::uint64_t i) {
        return static_cast<std::size_t>(i * 397 % 2900);
    };
    std::vector<std::vector<std::byte>> blocks[2];
    std::uint64_t appended[2] = {0, 0};
    for (int direct = 0; direct < 2; ++direct) {
        SCOPED_TRACE(direct);
        start_over();
        store_options o = opts();
        o.direct_journal_writes = direct == 1;
        auto counter = std::make_shared<direct_counter>(fs_);
        auto s = open_store(counter, "/db", o);
        ASSERT_NE(s, nullptr);
        ASSERT_TRUE(s->create_stream(stream_id(1)));
        // At least kAppends, and on until two files were prepared: on a loaded machine the
        // preparer thread can fall behind the rolls (bounded: 60 s).
        std::uint64_t n = 0;
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
        while (n < kAppends ||
               (s->stats().prepared_journals < 2 && std::chrono::steady_clock::now() < deadline)) {
            auto r = s->append_sync(stream_id(1), payload(1, n, size_of_entry(n)));
            ASSERT_TRUE(r) << r.error().message();
            ++n;
        }
        appended[direct] = n;
        EXPECT_GE(s->stats().prepared_journals, 2U);
        if (direct == 1) {
            EXPECT_EQ(counter->opened.load(), static_cast<int>(s->stats().prepared_journals));
        } else {
            EXPECT_EQ(counter->opened.load(), 0);
        }
        power_cut(s);
        for (const auto& j : journals()) {
            auto f = fs_->open(j, open_mode::read_only);
            ASSERT_TRUE(f);
            auto scan = scan_journal_file(**f, 0, 0, [&](std::uint64_t, bytes_view b) {
                blocks[direct].emplace_back(b.begin(), b.end());
                return result<void>{};
            });
            ASSERT_TRUE(scan);
            EXPECT_FALSE(scan->defect) << j;
        }
        expect_clean();
        s = open(o);
        ASSERT_NE(s, nullptr);
        auto all = read_all(*s, stream_id(1));
        ASSERT_EQ(all.size(), appended[direct]);
        for (std::uint64_t i = 0; i < appended[direct]; ++i) {
            ASSERT_EQ(all[i], payload(1, i, size_of_entry(i))) << i;
        }
    }
    // One block per append_sync, in append order: the runs' common prefix must be identical.
    const auto common = std::min(blocks[0].size(), blocks[1].size());
    ASSERT_EQ(common, std::min(appended[0], appended[1]));
    EXPECT_GE(common, kAppends);
    for (std::size_t i = 0; i < common; ++i) {
        ASSERT_EQ(blocks[0][i], blocks[1][i]) << "block " << i;
    }
}

// A direct write torn anywhere (the crash stops the file system's writes after k bytes; the
// power cut then keeps a random part of what was written and not synced): its first page's earlier
// bytes are rewritten unchanged, so every acknowledged append survives and the torn block is a torn
// tail.
TEST_F(PreparedJournal, TornDirectWriteKeepsEveryAcknowledgedAppend) {
    const std::uint64_t cuts[] = {1, 24, 700, 2049, 4095, 4097, 6000, 9000};
    std::uint64_t seed = 7;
    for (const std::uint64_t k : cuts) {
        for (int round = 0; round < 3; ++round) {
            SCOPED_TRACE(::testing::Message() << "cut " << k << " round " << round);
            start_over();
            auto s = on_prepared_file(round * 7);
            ASSERT_NE(s, nullptr);
            fs_->crash_after_bytes(k);
            // A burst, so that groups (and their direct writes) span several pages. The
            // appends that succeed are a prefix; the rest fail once the crash fails the store.
            constexpr int kBurst = 400;
            std::mutex mu;
            std::condition_variable cv;
            std::vector<int> ok(kBurst, -1);
            int done = 0;
            for (int i = 0; i < kBurst; ++i) {
                s->append(stream_id(1), payload(1, acked_ + i, kPayload), [&, i](result<offset> r) {
                    const std::lock_guard l(mu);
                    ok[i] = r ? 1 : 0;
                    ++done;
                    cv.notify_all();
                });
            }
            {
                std::unique_lock l(mu);
                ASSERT_TRUE(
                    cv.wait_for(l, std::chrono::seconds(60), [&] { return done == kBurst; }));
            }
            const auto good =
                static_cast<std::uint64_t>(std::find(ok.begin(), ok.end(), 0) - ok.begin());
            ASSERT_LT(good, static_cast<std::uint64_t>(kBurst)) << "the crash failed nothing";
            EXPECT_EQ(std::count(ok.begin() + static_cast<std::ptrdiff_t>(good), ok.end(), 1), 0)
                << "an append succeeded after one failed";
            acked_ += good;
            s.reset();
            fs_->power_loss_torn(++seed);
            ASSERT_NO_FATAL_FAILURE(reopen_and_check(s));
            // A failed append may be present too (its block was written whole, and the
            // failure came later); it holds the payload its offset would have.
            acked_ = read_all(*s, stream_id(1)).size();
            ASSERT_NO_FATAL_FAILURE(expect_all_acked(*s));
            expect_clean();
            append(*s);
            power_cut(s);
            ASSERT_NO_FATAL_FAILURE(reopen_and_check(s));
        }
    }
}

}  // namespace
}  // namespace nereus::storage
