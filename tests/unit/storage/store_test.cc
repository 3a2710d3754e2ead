// Functional tests of stream_store on the real (POSIX) file system.

#include "nereus/base/file_system.h"
#include "nereus/storage/journal_scan.h"
#include "nereus/storage/stream_store.h"
#include "nereus/storage/verify.h"

#include <gtest/gtest.h>

#include "support/payloads.h"
#include "support/store_helpers.h"
#include "support/temp_dir.h"
#include <atomic>
#include <chrono>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <thread>
#include <unistd.h>

namespace nereus::storage {
namespace {

using namespace testing;

class StreamStore : public ::testing::Test {
protected:
    std::unique_ptr<stream_store> open(store_options o = {}) {
        return open_store(posix_file_system(), dir_.path(), o);
    }
    temp_dir dir_;
};

TEST_F(StreamStore, AppendReadRoundTripIncludingEmptyPayloads) {
    auto s = open();
    ASSERT_NE(s, nullptr);
    const stream_id id(7);
    ASSERT_TRUE(s->create_stream(id));
    const std::vector<std::size_t> sizes{5, 0, 1000, 0, 1, 70000, 33};
    for (std::size_t i = 0; i < sizes.size(); ++i) {
        auto r = s->append_sync(id, payload(7, i, sizes[i]));
        ASSERT_TRUE(r) << r.error().message();
        EXPECT_EQ(r->value(), i);
    }
    auto all = read_all(*s, id);
    ASSERT_EQ(all.size(), sizes.size());
    for (std::size_t i = 0; i < sizes.size(); ++i) {
        EXPECT_EQ(all[i], payload(7, i, sizes[i])) << i;
    }
    auto inf = s->info(id);
    ASSERT_TRUE(inf);
    EXPECT_EQ(inf->first.value(), 0U);
    EXPECT_EQ(inf->end.value(), sizes.size());
    ASSERT_TRUE(s->close());
}

TEST_F(StreamStore, ReadHonoursByteBudgetAndMaxEntries) {
    auto s = open();
    ASSERT_NE(s, nullptr);
    const stream_id id(1);
    ASSERT_TRUE(s->create_stream(id));
    for (int i = 0; i < 10; ++i) {
        ASSERT_TRUE(s->append_sync(id, payload(1, i, 100)));
    }
    auto b = s->read(id, offset(0), 100, 250);
    ASSERT_TRUE(b);
    EXPECT_EQ(b->size(), 2U);
    b = s->read(id, offset(3), 100, 50);  // first entry even if larger than the budget
    ASSERT_TRUE(b);
    ASSERT_EQ(b->size(), 1U);
    EXPECT_EQ((*b)[0].at.value(), 3U);
    b = s->read(id, offset(2), 3, 1 << 20);
    ASSERT_TRUE(b);
    ASSERT_EQ(b->size(), 3U);
    EXPECT_EQ((*b)[2].at.value(), 4U);
    EXPECT_TRUE(
        std::equal((*b)[2].payload.begin(), (*b)[2].payload.end(), payload(1, 4, 100).begin()));
    b = s->read(id, offset(10), 10, 1000);  // at the end
    ASSERT_TRUE(b);
    EXPECT_TRUE(b->empty());
    b = s->read(id, offset(1000), 10, 1000);  // beyond the end
    ASSERT_TRUE(b);
    EXPECT_TRUE(b->empty());
    b = s->read(id, offset(0), 0, 1000);
    ASSERT_TRUE(b);
    EXPECT_TRUE(b->empty());
}

TEST_F(StreamStore, TypedErrorsForUnknownAndExistingStreams) {
    auto s = open();
    ASSERT_NE(s, nullptr);
    EXPECT_EQ(s->read(stream_id(5), offset(0), 1, 1).error(), errc::unknown_stream);
    EXPECT_EQ(s->append_sync(stream_id(5), payload(5, 0, 3)).error(), errc::unknown_stream);
    EXPECT_EQ(s->info(stream_id(5)).error(), errc::unknown_stream);
    ASSERT_TRUE(s->create_stream(stream_id(5)));
    EXPECT_EQ(s->create_stream(stream_id(5)).error(), errc::stream_exists);
    ASSERT_TRUE(s->create_stream(stream_id(2)));
    EXPECT_EQ(s->list_streams(), (std::vector<stream_id>{stream_id(2), stream_id(5)}));
    ASSERT_TRUE(s->close());
    EXPECT_EQ(s->append_sync(stream_id(5), payload(5, 0, 3)).error(), errc::closed);
}

TEST_F(StreamStore, SegmentsRollAndReadsCrossThem) {
    auto o = tiny_options();
    auto s = open(o);
    ASSERT_NE(s, nullptr);
    const stream_id id(3);
    ASSERT_TRUE(s->create_stream(id));
    std::mt19937_64 rng(42);
    std::vector<std::size_t> sizes;
    for (int i = 0; i < 300; ++i) {
        sizes.push_back(rng() % 120);
        s->append(id, payload(3, i, sizes.back()), [](result<offset> r) { ASSERT_TRUE(r); });
    }
    ASSERT_TRUE(s->append_sync(id, payload(3, 300, 7)));
    sizes.push_back(7);
    EXPECT_GT(s->stats().segment_rolls, 10U);
    auto check = [&](stream_store& st) {
        for (int k = 0; k < 200; ++k) {
            const std::uint64_t from = rng() % (sizes.size() + 3);
            const std::size_t max_entries = 1 + rng() % 40;
            const std::size_t max_bytes = rng() % 3000;
            auto b = st.read(id, offset(from), max_entries, max_bytes);
            ASSERT_TRUE(b) << b.error().message();
            if (from >= sizes.size()) {
                EXPECT_TRUE(b->empty());
                continue;
            }
            ASSERT_FALSE(b->empty());
            std::size_t bytes = 0;
            for (std::size_t i = 0; i < b->size(); ++i) {
                const auto& e = (*b)[i];
                ASSERT_EQ(e.at.value(), from + i);
                ASSERT_TRUE(
                    std::ranges::equal(e.payload, payload(3, e.at.value(), sizes[e.at.value()])));
                bytes += e.payload.size();
            }
            EXPECT_LE(b->size(), max_entries);
            if (b->size() > 1) {
                EXPECT_LE(bytes, max_bytes);
            }
            // Stopped only because of a limit or the end.
            const std::uint64_t next = from + b->size();
            if (next < sizes.size() && b->size() < max_entries) {
                EXPECT_GT(bytes + sizes[next], max_bytes);
            }
        }
    };
    check(*s);
    ASSERT_TRUE(s->close());
    s = open(o);  // sealed segments now get their index lazily
    ASSERT_NE(s, nullptr);
    check(*s);
    auto all = read_all(*s, id);
    EXPECT_EQ(all.size(), sizes.size());
    auto rep = verify(*posix_file_system(), dir_.path());
    ASSERT_TRUE(rep);
    EXPECT_TRUE(rep->ok());
    EXPECT_TRUE(rep->issues.empty());
    EXPECT_EQ(rep->segment_records, sizes.size());
}

TEST_F(StreamStore, ReopenAfterCleanCloseContinuesOffsets) {
    auto s = open();
    ASSERT_NE(s, nullptr);
    for (std::uint64_t sid = 1; sid <= 3; ++sid) {
        ASSERT_TRUE(s->create_stream(stream_id(sid)));
        for (std::uint64_t i = 0; i < 5 * sid; ++i) {
            ASSERT_TRUE(s->append_sync(stream_id(sid), payload(sid, i, 50 + i)));
        }
    }
    ASSERT_TRUE(s->close());
    s.reset();
    s = open();
    ASSERT_NE(s, nullptr);
    EXPECT_EQ(s->list_streams().size(), 3U);
    for (std::uint64_t sid = 1; sid <= 3; ++sid) {
        auto all = read_all(*s, stream_id(sid));
        ASSERT_EQ(all.size(), 5 * sid);
        for (std::uint64_t i = 0; i < all.size(); ++i) {
            EXPECT_EQ(all[i], payload(sid, i, 50 + i));
        }
        auto r = s->append_sync(stream_id(sid), payload(sid, 5 * sid, 9));
        ASSERT_TRUE(r);
        EXPECT_EQ(r->value(), 5 * sid);
    }
}

TEST_F(StreamStore, TrimDeletesWholeSegmentsAndReadsBelowAreTyped) {
    auto o = tiny_options();
    auto s = open(o);
    ASSERT_NE(s, nullptr);
    const stream_id id(9);
    ASSERT_TRUE(s->create_stream(id));
    for (int i = 0; i < 100; ++i) {
        ASSERT_TRUE(s->append_sync(id, payload(9, i, 100)));  // 116 B records: 8 per segment
    }
    auto first = s->trim(id, offset(20));
    ASSERT_TRUE(first);
    EXPECT_LE(first->value(), 20U);
    EXPECT_GT(first->value(), 20U - 9);  // only whole segments below the floor went
    EXPECT_EQ(s->read(id, offset(0), 10, 1000).error(), errc::trimmed);
    EXPECT_EQ(s->read(id, offset(first->value() - 1), 10, 1000).error(), errc::trimmed);
    auto b = s->read(id, *first, 1, 1000);
    ASSERT_TRUE(b);
    ASSERT_EQ(b->size(), 1U);
    EXPECT_EQ((*b)[0].at, *first);
    EXPECT_EQ(s->info(id)->first, *first);
    // Trimming past the end keeps the active segment.
    auto all_gone = s->trim(id, offset(1000));
    ASSERT_TRUE(all_gone);
    EXPECT_LT(all_gone->value(), 100U);
    EXPECT_EQ(s->info(id)->end.value(), 100U);
    ASSERT_TRUE(s->append_sync(id, payload(9, 100, 10)));
    ASSERT_TRUE(s->close());
    s = open(o);
    ASSERT_NE(s, nullptr);
    EXPECT_EQ(s->info(id)->first, *all_gone);  // journal replay never resurrects trimmed entries
    EXPECT_EQ(s->info(id)->end.value(), 101U);
    EXPECT_EQ(s->read(id, offset(0), 10, 1000).error(), errc::trimmed);
    auto rest = read_all(*s, id, all_gone->value());
    EXPECT_EQ(rest.size(), 101 - all_gone->value());
}

TEST_F(StreamStore, DeleteStreamIsFinal) {
    auto s = open();
    ASSERT_NE(s, nullptr);
    ASSERT_TRUE(s->create_stream(stream_id(4)));
    ASSERT_TRUE(s->create_stream(stream_id(5)));
    for (int i = 0; i < 5; ++i) {
        ASSERT_TRUE(s->append_sync(stream_id(4), payload(4, i, 10)));
    }
    ASSERT_TRUE(s->delete_stream(stream_id(4)));
    EXPECT_EQ(s->delete_stream(stream_id(4)).error(), errc::unknown_stream);
    EXPECT_EQ(s->read(stream_id(4), offset(0), 1, 1).error(), errc::unknown_stream);
    ASSERT_TRUE(s->create_stream(stream_id(4)));
    EXPECT_EQ(s->info(stream_id(4))->end.value(), 0U);
    ASSERT_TRUE(s->append_sync(stream_id(4), payload(4, 100, 10)));
    ASSERT_TRUE(s->close());
    s = open();
    ASSERT_NE(s, nullptr);
    auto all = read_all(*s, stream_id(4));
    ASSERT_EQ(all.size(), 1U);
    EXPECT_EQ(all[0], payload(4, 100, 10));
}

TEST_F(StreamStore, ConcurrentAppendersGetDenseOrderedOffsets) {
    auto s = open();
    ASSERT_NE(s, nullptr);
    constexpr int kThreads = 8;
    constexpr int kStreams = 4;
    constexpr int kPerThreadPerStream = 300;
    for (int i = 0; i < kStreams; ++i) {
        ASSERT_TRUE(s->create_stream(stream_id(i)));
    }
    // offsets[t][stream][seq]
    std::vector<std::vector<std::vector<std::uint64_t>>> offsets(
        kThreads, std::vector<std::vector<std::uint64_t>>(
                      kStreams, std::vector<std::uint64_t>(kPerThreadPerStream)));
    pending_counter pending;
    pending.add(kThreads * kStreams * kPerThreadPerStream);
    std::atomic<int> failures{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
        threads.emplace_back([&, t] {
            for (int i = 0; i < kPerThreadPerStream; ++i) {
                for (int sid = 0; sid < kStreams; ++sid) {
                    const std::uint64_t tag = static_cast<std::uint64_t>(t) * 1000000 + i;
                    std::uint64_t* slot = &offsets[t][sid][i];
                    s->append(stream_id(sid), payload(sid, tag, 24),
                              [slot, &pending, &failures](result<offset> r) {
                                  if (r) {
                                      *slot = r->value();
                                  } else {
                                      ++failures;
                                  }
                                  pending.done();
                              });
                }
            }
        });
    }
    for (auto& th : threads) {
        th.join();
    }
    pending.wait();
    EXPECT_EQ(failures.load(), 0);
    for (int sid = 0; sid < kStreams; ++sid) {
        std::vector<bool> seen(kThreads * kPerThreadPerStream, false);
        std::map<std::uint64_t, std::uint64_t> tag_at;
        for (int t = 0; t < kThreads; ++t) {
            for (int i = 0; i < kPerThreadPerStream; ++i) {
                const auto o = offsets[t][sid][i];
                ASSERT_LT(o, seen.size());
                EXPECT_FALSE(seen[o]) << "offset given twice";
                seen[o] = true;
                if (i > 0) {
                    EXPECT_GT(o, offsets[t][sid][i - 1]) << "per-thread order broken";
                }
                tag_at[o] = static_cast<std::uint64_t>(t) * 1000000 + i;
            }
        }
        auto all = read_all(*s, stream_id(sid));
        ASSERT_EQ(all.size(), seen.size());
        for (std::uint64_t o = 0; o < all.size(); ++o) {
            EXPECT_EQ(all[o], payload(sid, tag_at[o], 24));
        }
    }
}

// Prepared journal files on the real file system are written with O_DIRECT | O_DSYNC
// (store_options::direct_journal_writes): blocks of every size (one page, many pages, one
// larger than the first aligned buffer) and a concurrent burst read back, survive a reopen,
// and storage verify finds nothing.
TEST_F(StreamStore, DirectJournalWritesOnTheRealFileSystem) {
    store_options o = tiny_options();
    o.checkpoint_bytes = 1ULL << 30;
    auto s = open(o);
    ASSERT_NE(s, nullptr);
    const stream_id id(3);
    ASSERT_TRUE(s->create_stream(id));
    std::vector<std::size_t> sizes;
    // Until (after 200 appends, and the second prepared file) an append has just switched to a
    // prepared file: that file is then the active one. (Ending on the count alone raced with the
    // preparer: on a slow machine the active file was often an empty one created by a roll
    // that found no spare ready.)
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    bool switched = false;
    while (!switched && std::chrono::steady_clock::now() < deadline) {
        const std::uint64_t prepared = s->stats().prepared_journals;
        const std::size_t n = sizes.size() == 150 ? 300000 : sizes.size() * 397 % 2900;
        auto r = s->append_sync(id, payload(3, sizes.size(), n));
        ASSERT_TRUE(r) << r.error().message();
        sizes.push_back(n);
        const std::uint64_t now = s->stats().prepared_journals;
        switched = sizes.size() >= 200 && now >= 2 && now > prepared;
    }
    ASSERT_TRUE(switched) << "no switch to a prepared journal file in 60 s";
    // The active journal file's descriptor has O_DIRECT, where the file system has it.
    const std::string probe = dir_.path() + "/direct-probe";
    const int pfd = ::open(probe.c_str(), O_CREAT | O_RDWR | O_DIRECT, 0644);
    if (pfd >= 0) {
        ::close(pfd);
        ::unlink(probe.c_str());
        int direct = 0;
        for (const auto& e : std::filesystem::directory_iterator("/proc/self/fd")) {
            std::error_code ec;
            const auto target = std::filesystem::read_symlink(e.path(), ec).string();
            if (ec || !target.starts_with(dir_.path()) || !target.ends_with(".journal")) {
                continue;
            }
            std::ifstream info("/proc/self/fdinfo/" + e.path().filename().string());
            std::string key;
            std::string flags;
            while (info >> key >> flags && key != "flags:") {
            }
            if ((std::stoul(flags, nullptr, 8) & O_DIRECT) != 0) {
                ++direct;
            }
        }
        EXPECT_EQ(direct, 1) << "the active (prepared) journal file is not written direct";
    }
    // A concurrent burst: groups of many appends, so writes span pages.
    pending_counter pending;
    const std::size_t first = sizes.size();
    for (std::size_t i = 0; i < 500; ++i) {
        sizes.push_back(100 + i % 300);
        pending.add();
        s->append(id, payload(3, first + i, sizes.back()), [&pending](result<offset> r) {
            EXPECT_TRUE(r);
            pending.done();
        });
    }
    pending.wait();
    auto check = [&](stream_store& st) {
        auto all = read_all(st, id);
        ASSERT_EQ(all.size(), sizes.size());
        for (std::size_t i = 0; i < sizes.size(); ++i) {
            ASSERT_EQ(all[i], payload(3, i, sizes[i])) << i;
        }
    };
    check(*s);
    // Every journal file's blocks are intact (nothing syncs or rewrites them while idle).
    std::uint64_t blocks = 0;
    for (const auto& e : std::filesystem::directory_iterator(dir_.path() + "/journal")) {
        if (!e.path().string().ends_with(".journal")) {
            continue;
        }
        auto f = posix_file_system()->open(e.path().string(), open_mode::read_only);
        ASSERT_TRUE(f);
        auto scan = scan_journal_file(**f, 0, 0, nullptr);
        ASSERT_TRUE(scan);
        EXPECT_FALSE(scan->defect) << e.path();
        blocks += scan->blocks;
    }
    EXPECT_GE(blocks, first + 1);
    ASSERT_TRUE(s->close());
    auto rep = verify(*posix_file_system(), dir_.path());
    ASSERT_TRUE(rep);
    EXPECT_TRUE(rep->issues.empty()) << rep->issues[0].to_string();
    s = open(o);
    ASSERT_NE(s, nullptr);
    check(*s);
}

}  // namespace
}  // namespace nereus::storage
