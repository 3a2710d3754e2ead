// Journal files behind a durable checkpoint are cut from their end in 1 MiB steps before they
// are unlinked (journaled_store_checkpoint.cc: a large file's unlink held concurrent O_DSYNC
// commits for 22-25 ms on ext4). The cut file is garbage: a failure or crash part way through
// leaves a shorter file that recovery never reads.

#include "nereus/base/fault_file_system.h"
#include "nereus/base/forwarding_file_system.h"
#include "nereus/storage/stream_store.h"
#include "nereus/storage/verify.h"

#include <gtest/gtest.h>

#include "support/payloads.h"
#include "support/store_helpers.h"
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace nereus::storage {
namespace {

using namespace testing;

constexpr std::uint64_t kMiB = 1ULL << 20;

// Records the sizes each journal file is truncated to and which are removed; optionally fails
// every truncate after the first `allowed` ones.
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
        if (!f || !path.ends_with(".journal") || mode != open_mode::read_write) {
            return f;
        }
        return std::unique_ptr<file>(std::make_unique<cut_file>(this, path, std::move(*f)));
    }
    result<void> remove(const std::string& path) override {
        auto r = inner_->remove(path);
        if (r && path.ends_with(".journal")) {
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

void expect_all(stream_store& s) {
    auto all = read_all(s, stream_id(1));
    ASSERT_EQ(all.size(), kRecords);
    for (std::uint64_t i = 0; i < kRecords; ++i) {
        ASSERT_EQ(all[i], payload(1, i, kPayload)) << i;
    }
}

TEST(JournalRemove, FilesBehindACheckpointAreCutInStepsFromTheEndThenRemoved) {
    auto fs = std::make_shared<fault_file_system>();
    auto rec = std::make_shared<cut_recorder>(fs);
    auto s = open_store(rec, "/db", remove_options());
    ASSERT_NE(s, nullptr);
    ASSERT_NO_FATAL_FAILURE(append_all(*s));
    ASSERT_TRUE(s->close());
    const auto removed = rec->removed();
    ASSERT_GE(removed.size(), 2U);
    const auto cuts = rec->cuts();
    for (const auto& path : removed) {
        SCOPED_TRACE(path);
        auto it = cuts.find(path);
        ASSERT_NE(it, cuts.end()) << "removed without being cut";
        // A full file is a little over 3 MiB (the roll comes after the block that crosses it).
        EXPECT_EQ(it->second, (std::vector<std::uint64_t>{3 * kMiB, 2 * kMiB, kMiB}));
    }
    auto rep = verify(*fs, "/db");
    ASSERT_TRUE(rep);
    EXPECT_TRUE(rep->issues.empty()) << rep->issues[0].to_string();
    s = open_store(fs, "/db", remove_options());
    ASSERT_NE(s, nullptr);
    expect_all(*s);
}

// A removal that fails after its first cut leaves the file shorter; the store goes on, and the
// next open neither reads it nor loses anything.
TEST(JournalRemove, AFileLeftCutShortIsNeverRead) {
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
    auto rep = verify(*fs, "/db");
    ASSERT_TRUE(rep);
    EXPECT_TRUE(rep->issues.empty()) << rep->issues[0].to_string();
}

}  // namespace
}  // namespace nereus::storage
