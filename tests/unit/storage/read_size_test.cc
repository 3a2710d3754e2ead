// Reads are sized by the segment index (journaled_store_read.cc): a read of N entries preads
// about the bytes of those N records (plus at most one index interval), not the whole byte
// budget; and whatever the sizes, a read returns exactly the entries a reference model says
// (consecutive from `from`, at most max_entries, the byte budget with the first entry always
// taken, across segments).

#include "nereus/base/file_system.h"
#include "nereus/base/forwarding_file_system.h"
#include "nereus/storage/format.h"
#include "nereus/storage/stream_store.h"

#include <gtest/gtest.h>

#include "support/payloads.h"
#include "support/store_helpers.h"
#include "support/temp_dir.h"
#include <atomic>
#include <memory>
#include <rapidcheck/gtest.h>

namespace nereus::storage {
namespace {

using namespace testing;

// Counts the bytes asked of read_at() on segment files (*.log).
class read_counting_fs final : public forwarding_file_system {
public:
    explicit read_counting_fs(std::shared_ptr<file_system> inner)
        : forwarding_file_system(std::move(inner)) {}
    std::atomic<std::uint64_t> segment_read_bytes{0};
    std::atomic<std::uint64_t> segment_reads{0};

    result<std::unique_ptr<file>> open(const std::string& path, open_mode mode) override {
        auto f = inner_->open(path, mode);
        if (!f || !path.ends_with(".log")) {
            return f;
        }
        return std::unique_ptr<file>(std::make_unique<counted>(this, std::move(*f)));
    }

private:
    class counted final : public forwarding_file {
    public:
        counted(read_counting_fs* fs, std::unique_ptr<file> inner)
            : forwarding_file(std::move(inner)), fs_(fs) {}
        result<std::size_t> read_at(std::uint64_t o, std::span<std::byte> out) override {
            fs_->segment_read_bytes += out.size();
            ++fs_->segment_reads;
            return inner_->read_at(o, out);
        }

    private:
        read_counting_fs* fs_;
    };
};

TEST(StoreReadSize, ReadOfFewSmallEntriesPreadsAboutTheirBytes) {
    temp_dir dir;
    auto fs = std::make_shared<read_counting_fs>(posix_file_system());
    store_options o;  // default index interval (32 KiB) and segment size
    auto s = open_store(fs, dir.path(), o);
    ASSERT_NE(s, nullptr);
    const stream_id id(3);
    ASSERT_TRUE(s->create_stream(id));
    constexpr std::size_t kSize = 100;
    constexpr std::uint64_t kEntries = 5'000;  // ~580 KB: several index intervals
    for (std::uint64_t i = 0; i < kEntries; ++i) {
        ASSERT_TRUE(s->append_sync(id, payload(3, i, kSize)));
    }
    const std::uint64_t record = format::kRecordHeaderSize + kSize;
    for (const std::uint64_t from : {0ULL, 1'234ULL, 4'000ULL}) {
        for (const std::size_t n : {1U, 50U, 500U}) {
            const auto before = fs->segment_read_bytes.load();
            auto b = s->read(id, offset(from), n, std::size_t{4} << 20);
            ASSERT_TRUE(b) << b.error().message();
            ASSERT_EQ(b->size(), n);
            for (std::size_t i = 0; i < n; ++i) {
                ASSERT_EQ((*b)[i].at.value(), from + i);
                ASSERT_TRUE(std::ranges::equal((*b)[i].payload, payload(3, from + i, kSize)));
            }
            const auto read = fs->segment_read_bytes.load() - before;
            // The records themselves, the index interval before `from` and the one after the
            // last wanted record, at most. (Sized by the byte budget, this was >= 256 KiB.)
            EXPECT_LE(read, n * record + 2 * o.index_interval_bytes + record)
                << "from " << from << " n " << n;
        }
    }
    ASSERT_TRUE(s->close());
}

// Reference: what read(from, max_entries, max_bytes) returns given every entry's size.
std::vector<std::uint64_t> model_read(const std::vector<std::size_t>& sizes,
                                      std::uint64_t from,
                                      std::size_t max_entries,
                                      std::size_t max_bytes) {
    std::vector<std::uint64_t> out;
    std::size_t taken = 0;
    for (std::uint64_t i = from; i < sizes.size() && out.size() < max_entries; ++i) {
        if (!out.empty() && taken + sizes[i] > max_bytes) {
            break;
        }
        out.push_back(i);
        taken += sizes[i];
    }
    return out;
}

RC_GTEST_PROP(StoreReadSize, ReadsReturnExactlyTheModelsEntries, ()) {
    temp_dir dir;
    store_options o = tiny_options();  // 1 KiB segments, 128 B index interval: many of both
    o.segment_max_bytes = *rc::gen::element<std::uint64_t>(1024, 4096, 64 << 10);
    auto s = open_store(posix_file_system(), dir.path(), o);
    RC_ASSERT(s != nullptr);
    const stream_id id(1);
    RC_ASSERT(s->create_stream(id).has_value());
    const auto sizes = *rc::gen::container<std::vector<std::size_t>>(
        *rc::gen::inRange<std::size_t>(1, 60),
        rc::gen::weightedOneOf<std::size_t>({{6, rc::gen::inRange<std::size_t>(0, 200)},
                                             {1, rc::gen::inRange<std::size_t>(200, 3000)}}));
    for (std::size_t i = 0; i < sizes.size(); ++i) {
        RC_ASSERT(s->append_sync(id, payload(1, i, sizes[i])).has_value());
    }
    for (int q = 0; q < 30; ++q) {
        const auto from = *rc::gen::inRange<std::uint64_t>(0, sizes.size());
        const auto n = *rc::gen::inRange<std::size_t>(1, sizes.size() + 2);
        const auto budget = *rc::gen::inRange<std::size_t>(1, 20'000);
        auto b = s->read(id, offset(from), n, budget);
        RC_ASSERT(b.has_value());
        const auto want = model_read(sizes, from, n, budget);
        RC_ASSERT(b->size() == want.size());
        for (std::size_t i = 0; i < want.size(); ++i) {
            RC_ASSERT((*b)[i].at.value() == want[i]);
            RC_ASSERT(std::ranges::equal((*b)[i].payload, payload(1, want[i], sizes[want[i]])));
        }
    }
    RC_ASSERT(s->close().has_value());
}

}  // namespace
}  // namespace nereus::storage
