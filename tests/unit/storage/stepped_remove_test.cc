// Large files that nothing reads any more are cut from their end in 1 MiB steps before they are
// unlinked (remove_in_steps.h: a large file's unlink held concurrent O_DSYNC commits for 22-25 ms
// on ext4): journal files behind a durable checkpoint, segments removed by a trim (renamed
// `<name>.trimmed` first) and a deleted stream's files (after its tombstone). A failure or crash
// part way leaves garbage that recovery never reads and removes; a reader that held a removed
// segment open gets errc::trimmed or errc::unknown_stream, not corruption.

#include "nereus/base/fault_file_system.h"
#include "nereus/base/forwarding_file_system.h"
#include "nereus/storage/errc.h"
#include "nereus/storage/format.h"
#include "nereus/storage/stream_store.h"
#include "nereus/storage/verify.h"

#include <gtest/gtest.h>

#include "support/payloads.h"
#include "support/store_helpers.h"
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace nereus::storage {
namespace {

using namespace testing;

constexpr std::uint64_t kMiB = 1ULL << 20;

// Records the sizes each file opened read-write is truncated to and which files are removed;
// optionally fails every truncate after the first `allowed` ones.
class cut_recorder final : public forwarding_file_system {
public:
    explicit cut_recorder(std::shared_ptr<file_system> inner, std::size_t allowed = SIZE_MAX)
        : forwarding_file_system(std::move(inner)), allowed_(allowed) {}

    std::map<std::string, std::vector<std::uint64_t>> cuts() {
        const std::lock_guard l(mu_);
        return cuts_;
    }
    std::vector<std::string> removed() {
        const std::lock_guard l(mu_);
        return removed_;
    }

    result<std::unique_ptr<file>> open(const std::string& path, open_mode mode) override {
        auto f = inner_->open(path, mode);
        if (!f || mode != open_mode::read_write) {
            return f;
        }
        return std::unique_ptr<file>(std::make_unique<cut_file>(this, path, std::move(*f)));
    }
    result<void> remove(const std::string& path) override {
        auto r = inner_->remove(path);
        if (r) {
            const std::lock_guard l(mu_);
            removed_.push_back(path);
        }
        return r;
    }

private:
    class cut_file final : public forwarding_file {
    public:
        cut_file(cut_recorder* r, std::string path, std::unique_ptr<file> f)
            : forwarding_file(std::move(f)), r_(r), path_(std::move(path)) {}
        result<void> truncate(std::uint64_t size) override {
            {
                const std::lock_guard l(r_->mu_);
                if (r_->done_ >= r_->allowed_) {
                    return error(make_error_code(std::errc::io_error));
                }
                ++r_->done_;
                r_->cuts_[path_].push_back(size);
            }
            return inner_->truncate(size);
        }

    private:
        cut_recorder* r_;
        std::string path_;
    };

    std::mutex mu_;
    const std::size_t allowed_;
    std::size_t done_ = 0;
    std::map<std::string, std::vector<std::uint64_t>> cuts_;
    std::vector<std::string> removed_;
};

// 3 MiB journal files written by extending commits (no spares), a checkpoint every 4 MiB.
store_options remove_options() {
    store_options o;
    o.journal_max_bytes = 3 * kMiB;
    o.checkpoint_bytes = 4 * kMiB;
    o.prepare_journal_files = false;
    return o;
}

constexpr std::size_t kPayload = 60 << 10;
constexpr std::uint64_t kRecords = 200;  // ~12 MiB: four journal files, three checkpoints

void append_all(stream_store& s) {
    ASSERT_TRUE(s.create_stream(stream_id(1)));
    for (std::uint64_t i = 0; i < kRecords; ++i) {
        auto r = s.append_sync(stream_id(1), payload(1, i, kPayload));
        ASSERT_TRUE(r) << r.error().message();
    }
}

void expect_clean(file_system& fs) {
    auto rep = verify(fs, "/db");
    ASSERT_TRUE(rep);
    EXPECT_TRUE(rep->issues.empty()) << rep->issues[0].to_string();
}

void expect_all(stream_store& s) {
    auto all = read_all(s, stream_id(1));
    ASSERT_EQ(all.size(), kRecords);
    for (std::uint64_t i = 0; i < kRecords; ++i) {
        ASSERT_EQ(all[i], payload(1, i, kPayload)) << i;
    }
}

TEST(SteppedRemove, JournalFilesBehindACheckpointAreCutFromTheEndThenRemoved) {
    auto fs = std::make_shared<fault_file_system>();
    auto rec = std::make_shared<cut_recorder>(fs);
    auto s = open_store(rec, "/db", remove_options());
    ASSERT_NE(s, nullptr);
    ASSERT_NO_FATAL_FAILURE(append_all(*s));
    ASSERT_TRUE(s->close());
    std::vector<std::string> removed;
    for (const auto& p : rec->removed()) {
        if (p.ends_with(".journal")) {
            removed.push_back(p);
        }
    }
    ASSERT_GE(removed.size(), 2U);
    const auto cuts = rec->cuts();
    for (const auto& path : removed) {
        SCOPED_TRACE(path);
        auto it = cuts.find(path);
        ASSERT_NE(it, cuts.end()) << "removed without being cut";
        // A full file is a little over 3 MiB (the roll comes after the block that crosses it).
        EXPECT_EQ(it->second, (std::vector<std::uint64_t>{3 * kMiB, 2 * kMiB, kMiB}));
    }
    expect_clean(*fs);
    s = open_store(fs, "/db", remove_options());
    ASSERT_NE(s, nullptr);
    expect_all(*s);
}

// A removal that fails after its first cut leaves the file shorter; the store goes on, and the
// next open neither reads it nor loses anything.
TEST(SteppedRemove, AJournalFileLeftCutShortIsNeverRead) {
    auto fs = std::make_shared<fault_file_system>();
    auto rec = std::make_shared<cut_recorder>(fs, 1);
    auto s = open_store(rec, "/db", remove_options());
    ASSERT_NE(s, nullptr);
    ASSERT_NO_FATAL_FAILURE(append_all(*s));
    EXPECT_EQ(rec->cuts().size(), 1U);
    EXPECT_EQ(s->stats().appends, kRecords);
    fs->crash_now();
    s.reset();
    fs->process_crash();
    s = open_store(fs, "/db", remove_options());
    ASSERT_NE(s, nullptr);
    expect_all(*s);
    ASSERT_TRUE(s->close());
    expect_clean(*fs);
}

// Holds the first read of a segment file after arm(), until release().
class read_gate final : public forwarding_file_system {
public:
    explicit read_gate(std::shared_ptr<file_system> inner)
        : forwarding_file_system(std::move(inner)) {}
    void arm() {
        const std::lock_guard l(mu_);
        armed_ = true;
    }
    bool wait_for_reader() {
        std::unique_lock l(mu_);
        return cv_.wait_for(l, std::chrono::seconds(60), [&] { return waiting_; });
    }
    void release() {
        {
            const std::lock_guard l(mu_);
            released_ = true;
        }
        cv_.notify_all();
    }
    result<std::unique_ptr<file>> open(const std::string& path, open_mode mode) override {
        auto f = inner_->open(path, mode);
        if (!f || !path.ends_with(".log")) {
            return f;
        }
        return std::unique_ptr<file>(std::make_unique<gated>(this, std::move(*f)));
    }

private:
    class gated final : public forwarding_file {
    public:
        gated(read_gate* g, std::unique_ptr<file> f) : forwarding_file(std::move(f)), g_(g) {}
        result<std::size_t> read_at(std::uint64_t o, std::span<std::byte> out) override {
            {
                std::unique_lock l(g_->mu_);
                if (g_->armed_) {
                    g_->armed_ = false;
                    g_->waiting_ = true;
                    g_->cv_.notify_all();
                    g_->cv_.wait_for(l, std::chrono::seconds(60), [&] { return g_->released_; });
                }
            }
            return inner_->read_at(o, out);
        }
        result<std::size_t> read_at_nowait(std::uint64_t, std::span<std::byte>) override {
            return error(make_error_code(std::errc::operation_would_block));
        }

    private:
        read_gate* g_;
    };
    std::mutex mu_;
    std::condition_variable cv_;
    bool armed_ = false;
    bool waiting_ = false;
    bool released_ = false;
};

// 4 MiB segments of 60 KiB records; spares off (the journal is not under test here).
store_options trim_options() {
    store_options o = remove_options();
    o.journal_max_bytes = 64 * kMiB;
    o.segment_max_bytes = 4 * kMiB;
    return o;
}

// The base offsets of stream 1's segments, from the file names.
std::vector<std::uint64_t> segment_bases(file_system& fs) {
    std::vector<std::uint64_t> bases;
    auto names = fs.list_dir("/db/streams/0000000000000001");
    EXPECT_TRUE(names);
    for (const auto& n : names ? *names : std::vector<std::string>{}) {
        if (auto b = format::parse_segment_file_name(n)) {
            bases.push_back(*b);
        }
    }
    std::sort(bases.begin(), bases.end());
    return bases;
}

constexpr const char* kStreamDir = "/db/streams/0000000000000001";

std::string stream_file(const std::string& name) {
    return std::string(kStreamDir) + "/" + name;
}

TEST(SteppedRemove, ATrimRenamesASegmentThenCutsAndRemovesIt) {
    auto fs = std::make_shared<fault_file_system>();
    auto rec = std::make_shared<cut_recorder>(fs);
    auto s = open_store(rec, "/db", trim_options());
    ASSERT_NE(s, nullptr);
    ASSERT_NO_FATAL_FAILURE(append_all(*s));
    const auto bases = segment_bases(*fs);
    ASSERT_GE(bases.size(), 3U);
    auto first = s->trim(stream_id(1), offset(bases[2]));
    ASSERT_TRUE(first) << first.error().message();
    EXPECT_EQ(first->value(), bases[2]);
    EXPECT_EQ(segment_bases(*fs), std::vector<std::uint64_t>(bases.begin() + 2, bases.end()));
    const auto cuts = rec->cuts();
    int trimmed = 0;
    for (const auto& [path, sizes] : cuts) {
        if (!path.ends_with(format::kTrimmedSuffix)) {
            continue;
        }
        SCOPED_TRACE(path);
        ++trimmed;
        EXPECT_EQ(sizes, (std::vector<std::uint64_t>{3 * kMiB, 2 * kMiB, kMiB}));
        EXPECT_FALSE(*fs->exists(path));
    }
    EXPECT_EQ(trimmed, 2);
    auto rest = read_all(*s, stream_id(1), bases[2]);
    ASSERT_EQ(rest.size(), kRecords - bases[2]);
    EXPECT_EQ(rest.front(), payload(1, bases[2], kPayload));
    ASSERT_TRUE(s->close());
    expect_clean(*fs);
}

// The removal fails after the rename is durable: `<name>.trimmed` stays, whole. The stream's
// first offset has moved; after a crash the next open removes the file and nothing else.
TEST(SteppedRemove, ATrimmedSegmentLeftBehindIsRemovedAtOpen) {
    auto fs = std::make_shared<fault_file_system>();
    auto rec = std::make_shared<cut_recorder>(fs, 0);
    auto s = open_store(rec, "/db", trim_options());
    ASSERT_NE(s, nullptr);
    ASSERT_NO_FATAL_FAILURE(append_all(*s));
    const auto bases = segment_bases(*fs);
    ASSERT_GE(bases.size(), 2U);
    ASSERT_TRUE(s->trim(stream_id(1), offset(bases[1])));
    const std::string left = "/db/streams/0000000000000001/" + format::segment_file_name(bases[0]) +
                             format::kTrimmedSuffix;
    EXPECT_TRUE(*fs->exists(left));
    fs->crash_now();
    s.reset();
    fs->power_loss();
    s = open_store(fs, "/db", trim_options());
    ASSERT_NE(s, nullptr);
    EXPECT_FALSE(*fs->exists(left));
    EXPECT_EQ(segment_bases(*fs).front(), bases[1]);
    auto rest = read_all(*s, stream_id(1), bases[1]);
    ASSERT_EQ(rest.size(), kRecords - bases[1]);
    EXPECT_EQ(rest.back(), payload(1, kRecords - 1, kPayload));
}

// Appends every record and reads them all back (which builds the segments' indexes); `bases`
// gets the segment bases, at least two, the second past record 40.
void append_indexed(stream_store& s, file_system& fs, std::vector<std::uint64_t>& bases) {
    ASSERT_NO_FATAL_FAILURE(append_all(s));
    bases = segment_bases(fs);
    ASSERT_GE(bases.size(), 2U);
    ASSERT_GE(bases[1], 40U);
    ASSERT_NO_FATAL_FAILURE(expect_all(s));
}

// Runs `during` while a read of records 35.. of segment 0 (past its first MiB, which the last cut
// leaves) is stopped in its pread; returns what the read answered.
template <class During>
result<read_batch> read_held_during(stream_store& s, read_gate& gate, During during) {
    gate.arm();
    std::optional<result<read_batch>> got;
    std::thread reader([&] { got = s.read(stream_id(1), offset(35), 4, 1 << 20); });
    EXPECT_TRUE(gate.wait_for_reader());
    during();
    gate.release();
    reader.join();
    return std::move(*got);
}

// A read holds the oldest segment open (stopped in its pread) while a trim removes it: the cut
// file reads short, and the answer is errc::trimmed, not a corrupt segment.
TEST(SteppedRemove, AReaderHoldingATrimmedSegmentGetsTrimmedNotCorruption) {
    auto fs = std::make_shared<fault_file_system>();
    auto gate = std::make_shared<read_gate>(fs);
    auto s = open_store(gate, "/db", trim_options());
    ASSERT_NE(s, nullptr);
    std::vector<std::uint64_t> bases;
    ASSERT_NO_FATAL_FAILURE(append_indexed(*s, *fs, bases));
    std::optional<result<offset>> first;
    auto got =
        read_held_during(*s, *gate, [&] { first = s->trim(stream_id(1), offset(bases[1])); });
    ASSERT_TRUE(first && *first);
    ASSERT_FALSE(got) << "read " << got->size() << " entries of a cut segment";
    EXPECT_EQ(got.error(), make_error_code(errc::trimmed)) << got.error().message();
    EXPECT_FALSE(s->last_corruption().has_value());
}

// delete_stream cuts the stream's segments in steps before it unlinks them; a read that held a
// segment open (stopped in its pread) reads it short and answers unknown_stream, not a corrupt
// segment. The deletion is durable: a reopen finds no stream and nothing left on disk.
TEST(SteppedRemove, ADeleteCutsTheSegmentsAndAReaderHoldingOneGetsUnknownStream) {
    auto fs = std::make_shared<fault_file_system>();
    auto rec = std::make_shared<cut_recorder>(fs);
    auto gate = std::make_shared<read_gate>(rec);
    auto s = open_store(gate, "/db", trim_options());
    ASSERT_NE(s, nullptr);
    std::vector<std::uint64_t> bases;
    ASSERT_NO_FATAL_FAILURE(append_indexed(*s, *fs, bases));
    std::optional<result<void>> deleted;
    auto got = read_held_during(*s, *gate, [&] { deleted = s->delete_stream(stream_id(1)); });
    ASSERT_TRUE(deleted && *deleted);
    ASSERT_FALSE(got) << "read " << got->size() << " entries of a deleted stream";
    EXPECT_EQ(got.error(), make_error_code(errc::unknown_stream)) << got.error().message();
    EXPECT_FALSE(s->last_corruption().has_value());
    const auto cuts = rec->cuts();
    const auto first = cuts.find(stream_file(format::segment_file_name(bases[0])));
    ASSERT_NE(first, cuts.end()) << "a full segment unlinked whole";
    EXPECT_EQ(first->second, (std::vector<std::uint64_t>{3 * kMiB, 2 * kMiB, kMiB}));
    ASSERT_TRUE(s->close());
    s = open_store(fs, "/db", trim_options());
    ASSERT_NE(s, nullptr);
    EXPECT_TRUE(s->list_streams().empty());
    EXPECT_FALSE(*fs->exists(kStreamDir));
    ASSERT_TRUE(s->close());
    expect_clean(*fs);
}

// A deletion that fails after its tombstone is durable and its first file is cut short: the
// stream is gone for readers, verify reports the directory as a removal the open finishes (not
// a corrupt segment), and the open finishes it.
TEST(SteppedRemove, ADeleteInterruptedAfterACutIsRepairableAndFinishedAtOpen) {
    auto fs = std::make_shared<fault_file_system>();
    auto rec = std::make_shared<cut_recorder>(fs, 1);
    auto s = open_store(rec, "/db", trim_options());
    ASSERT_NE(s, nullptr);
    ASSERT_NO_FATAL_FAILURE(append_all(*s));
    ASSERT_FALSE(s->delete_stream(stream_id(1))) << "the second cut fails";
    ASSERT_EQ(rec->cuts().size(), 1U);
    auto gone = s->read(stream_id(1), offset(0), 1, 1 << 20);
    ASSERT_FALSE(gone);
    EXPECT_EQ(gone.error(), make_error_code(errc::unknown_stream));
    fs->crash_now();
    s.reset();
    fs->process_crash();
    {
        auto rep = verify(*fs, "/db");
        ASSERT_TRUE(rep);
        EXPECT_TRUE(rep->ok()) << rep->issues[0].to_string();
        ASSERT_EQ(rep->issues.size(), 1U);
        EXPECT_EQ(rep->issues[0].level, verify_issue::severity::repairable);
        EXPECT_EQ(rep->issues[0].file, kStreamDir);
    }
    s = open_store(fs, "/db", trim_options());
    ASSERT_NE(s, nullptr);
    EXPECT_TRUE(s->list_streams().empty());
    EXPECT_FALSE(*fs->exists(kStreamDir));
    ASSERT_TRUE(s->close());
    expect_clean(*fs);
}

}  // namespace
}  // namespace nereus::storage
