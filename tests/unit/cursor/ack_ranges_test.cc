// ack_ranges, batch_bits and cursor_state: merge, adjacency, overlap, MDO advance, batch maps.

#include "nereus/cursor/ack_ranges.h"

#include "nereus/cursor/batch_bits.h"
#include "nereus/cursor/cursor_state.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>
#include <vector>

namespace nereus::cursor {
namespace {

std::vector<offset_range> v(std::initializer_list<offset_range> l) {
    return l;
}

TEST(CursorAckRanges, InsertMergesAdjacentAndOverlapping) {
    ack_ranges r;
    EXPECT_EQ(r.insert(5, 6), 1U);
    EXPECT_EQ(r.insert(7, 8), 1U);
    EXPECT_EQ(r.to_vector(), v({{5, 6}, {7, 8}}));
    EXPECT_EQ(r.insert(6, 7), 1U);  // adjacent on both sides
    EXPECT_EQ(r.to_vector(), v({{5, 8}}));
    EXPECT_EQ(r.insert(5, 8), 0U);   // duplicate
    EXPECT_EQ(r.insert(3, 10), 4U);  // overlap covering: 3, 4, 8, 9 are new
    EXPECT_EQ(r.to_vector(), v({{3, 10}}));
    EXPECT_EQ(r.insert(20, 30), 10U);
    EXPECT_EQ(r.insert(9, 21), 10U);
    EXPECT_EQ(r.to_vector(), v({{3, 30}}));
    EXPECT_EQ(r.covered(), 27U);
    EXPECT_TRUE(r.contains(3));
    EXPECT_TRUE(r.contains(29));
    EXPECT_FALSE(r.contains(30));
    EXPECT_FALSE(r.contains(2));
}

TEST(CursorAckRanges, EraseBelowCutsStraddlingRange) {
    ack_ranges r;
    r.insert(2, 4);
    r.insert(6, 10);
    r.insert(12, 13);
    EXPECT_EQ(r.erase_below(8), 4U);
    EXPECT_EQ(r.to_vector(), v({{8, 10}, {12, 13}}));
    EXPECT_EQ(r.covered(), 3U);
    EXPECT_EQ(r.erase_below(100), 3U);
    EXPECT_TRUE(r.empty());
}

// Random inserts across many chunks against a std::set model.
TEST(CursorAckRanges, RandomAgainstSetModel) {
    std::mt19937_64 rng(7);
    ack_ranges r;
    std::set<offset> model;
    for (int i = 0; i < 20000; ++i) {
        const offset a = rng() % 40000;
        const offset len = 1 + rng() % 3;
        std::uint64_t fresh = 0;
        for (offset x = a; x < a + len; ++x) {
            fresh += model.insert(x).second ? 1 : 0;
        }
        ASSERT_EQ(r.insert(a, a + len), fresh);
        if (i % 5000 == 4999) {
            const offset cut = rng() % 40000;
            std::uint64_t removed = 0;
            while (!model.empty() && *model.begin() < cut) {
                model.erase(model.begin());
                ++removed;
            }
            ASSERT_EQ(r.erase_below(cut), removed);
        }
    }
    ASSERT_EQ(r.covered(), model.size());
    std::vector<offset_range> want;
    for (offset x : model) {
        if (!want.empty() && want.back().end == x) {
            ++want.back().end;
        } else {
            want.push_back({x, x + 1});
        }
    }
    ASSERT_EQ(r.to_vector(), want);
    for (offset x = 0; x < 41000; x += 7) {
        ASSERT_EQ(r.contains(x), model.contains(x)) << x;
    }
}

TEST(CursorAckRanges, ResidentBytesPerHoleAtMost32) {
    ack_ranges r;
    for (offset i = 0; i < 1'000'000; ++i) {
        r.insert(2 * i + 1, 2 * i + 2);
    }
    EXPECT_EQ(r.size(), 1'000'000U);
    EXPECT_LE(static_cast<double>(r.memory_bytes()) / static_cast<double>(r.size()), 32.0);
    // Random order too.
    ack_ranges q;
    std::vector<offset> xs(200'000);
    for (offset i = 0; i < xs.size(); ++i) {
        xs[i] = 2 * i + 1;
    }
    std::shuffle(xs.begin(), xs.end(), std::mt19937_64(3));
    for (offset x : xs) {
        q.insert(x, x + 1);
    }
    EXPECT_LE(static_cast<double>(q.memory_bytes()) / static_cast<double>(q.size()), 32.5);
}

TEST(CursorBatchBits, ClearAndPrefix) {
    auto b = batch_bits::all_remaining(10);
    EXPECT_EQ(b.count(), 10U);
    auto acked = batch_bits::none_set(10);
    acked.set(1);
    acked.set(2);
    acked.set(3);
    b.clear_bits(acked);
    EXPECT_EQ(b.indices(), (std::vector<std::uint32_t>{0, 4, 5, 6, 7, 8, 9}));
    b.clear_prefix(5);
    EXPECT_EQ(b.indices(), (std::vector<std::uint32_t>{5, 6, 7, 8, 9}));
    b.clear_prefix(10);
    EXPECT_TRUE(b.none());
    EXPECT_TRUE(batch_bits::all_remaining(64).valid());
    EXPECT_TRUE(batch_bits::all_remaining(130).valid());
    EXPECT_FALSE(batch_bits::from_words(3, {0xff}).valid());
}

TEST(CursorState, MdoAdvanceFoldsRangesAndDropsMaps) {
    cursor_state s(0);
    EXPECT_TRUE(s.apply(ack_range_op{3, 4}));
    EXPECT_TRUE(s.apply(ack_range_op{0, 1}));
    EXPECT_EQ(s.mark_delete(), 1U);
    EXPECT_TRUE(s.apply(ack_range_op{2, 3}));
    EXPECT_FALSE(s.apply(ack_range_op{3, 4}));
    EXPECT_TRUE(s.apply(ack_range_op{1, 2}));
    EXPECT_EQ(s.mark_delete(), 4U);
    EXPECT_TRUE(s.ranges().empty());
    // Batch map on 6, then a cumulative ack past it drops it.
    auto acked = batch_bits::none_set(4);
    acked.set(0);
    EXPECT_TRUE(s.apply(ack_batch_op{6, acked}));
    ASSERT_NE(s.remaining(6), nullptr);
    EXPECT_TRUE(s.apply(ack_cumulative_op{7, std::nullopt, 0, {}}));
    EXPECT_EQ(s.mark_delete(), 8U);
    EXPECT_EQ(s.remaining(6), nullptr);
    EXPECT_TRUE(s.check());
    EXPECT_EQ(s.backlog(10), 2U);
}

TEST(CursorState, SkipCountsOnlyUnackedEntries) {
    cursor_state s(0);
    s.apply(ack_range_op{2, 5});           // acked 2,3,4
    EXPECT_EQ(s.skip_target(2, 100), 2U);  // skip 0,1
    EXPECT_EQ(s.skip_target(3, 100), 6U);  // skip 0,1,5
    EXPECT_EQ(s.skip_target(1000, 50), 50U);
}

}  // namespace
}  // namespace nereus::cursor
