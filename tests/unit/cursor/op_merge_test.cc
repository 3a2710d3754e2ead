// merge_ops: one group's acks become one range op per run of adjacent acks and one batch op per
// entry, and applying the merged ops gives exactly the state the original ops give.

#include "nereus/cursor/op_merge.h"

#include "nereus/cursor/record_format.h"

#include <gtest/gtest.h>

#include <random>

namespace nereus::cursor {
namespace {

cursor_state apply_all(cursor_state s, const std::vector<state_op>& ops) {
    for (const auto& op : ops) {
        EXPECT_TRUE(s.validate(op).has_value());
        s.apply(op);
    }
    return s;
}

batch_bits bits_of(std::uint32_t size, std::initializer_list<std::uint32_t> set) {
    auto b = batch_bits::none_set(size);
    for (auto i : set) {
        b.set(i);
    }
    return b;
}

TEST(CursorOpMerge, InOrderAcksBecomeOneRange) {
    cursor_state s(0);
    s.apply(ack_range_op{1, 2});  // a hole at 0, so nothing folds into MDO
    std::vector<state_op> ops;
    for (offset x = 100; x < 164; ++x) {
        ops.emplace_back(ack_range_op{x, x + 1});
    }
    const auto merged = merge_ops(s, ops);
    ASSERT_EQ(merged.size(), 1U);
    EXPECT_EQ(merged[0], state_op(ack_range_op{100, 164}));
    EXPECT_TRUE(apply_all(s, merged) == apply_all(s, ops));
}

TEST(CursorOpMerge, OverlappingAndOutOfOrderRangesJoin) {
    const cursor_state s(0);
    const std::vector<state_op> ops = {ack_range_op{20, 25}, ack_range_op{10, 12},
                                       ack_range_op{12, 14}, ack_range_op{22, 30},
                                       ack_range_op{40, 41}};
    const auto merged = merge_ops(s, ops);
    EXPECT_EQ(merged, (std::vector<state_op>{ack_range_op{10, 14}, ack_range_op{20, 30},
                                             ack_range_op{40, 41}}));
    EXPECT_TRUE(apply_all(s, merged) == apply_all(s, ops));
}

TEST(CursorOpMerge, BatchIndexAcksOfOneEntryBecomeOneOp) {
    cursor_state s(0);
    s.apply(ack_batch_op{7, bits_of(8, {0})});
    const std::vector<state_op> ops = {ack_batch_op{7, bits_of(8, {1})},
                                       ack_batch_op{9, bits_of(8, {3})},
                                       ack_batch_op{7, bits_of(8, {2, 5})}};
    const auto merged = merge_ops(s, ops);
    EXPECT_EQ(merged, (std::vector<state_op>{ack_batch_op{7, bits_of(8, {1, 2, 5})},
                                             ack_batch_op{9, bits_of(8, {3})}}));
    EXPECT_TRUE(apply_all(s, merged) == apply_all(s, ops));
}

// Batch-index acks that complete entries become whole-entry ranges and join their neighbours.
TEST(CursorOpMerge, CompletedBatchEntriesJoinRanges) {
    cursor_state s(0);
    s.apply(ack_range_op{1, 2});
    s.apply(ack_batch_op{100, bits_of(8, {0, 1, 2, 3, 4})});  // 5, 6, 7 remain
    std::vector<state_op> ops;
    for (std::uint32_t i = 5; i < 8; ++i) {
        ops.emplace_back(ack_batch_op{100, bits_of(8, {i})});
    }
    for (offset e = 101; e < 108; ++e) {
        for (std::uint32_t i = 0; i < 8; ++i) {
            ops.emplace_back(ack_batch_op{e, bits_of(8, {i})});
        }
    }
    ops.emplace_back(ack_batch_op{108, bits_of(8, {0})});
    ops.emplace_back(ack_range_op{108, 109});  // acks 108 whole: its batch op is dropped
    ops.emplace_back(ack_batch_op{109, bits_of(8, {0, 1})});
    const auto merged = merge_ops(s, ops);
    EXPECT_EQ(merged, (std::vector<state_op>{ack_range_op{100, 109},
                                             ack_batch_op{109, bits_of(8, {0, 1})}}));
    EXPECT_TRUE(apply_all(s, merged) == apply_all(s, ops));
}

// Other ops end a run and keep their place.
TEST(CursorOpMerge, OtherOpsSplitRuns) {
    const cursor_state s(0);
    const std::vector<state_op> ops = {ack_range_op{5, 6},
                                       ack_range_op{6, 7},
                                       put_property_op{"k", "v"},
                                       ack_range_op{7, 8},
                                       ack_cumulative_op{3, std::nullopt, 0, {}},
                                       ack_range_op{8, 9},
                                       redelivery_op{20, 2}};
    const auto merged = merge_ops(s, ops);
    EXPECT_EQ(merged,
              (std::vector<state_op>{ack_range_op{5, 7}, put_property_op{"k", "v"},
                                     ack_range_op{7, 8}, ack_cumulative_op{3, std::nullopt, 0, {}},
                                     ack_range_op{8, 9}, redelivery_op{20, 2}}));
    EXPECT_TRUE(apply_all(s, merged) == apply_all(s, ops));
}

// Random states and random groups: the merged ops always give the same state, are never more,
// and round-trip through the delta codec.
TEST(CursorOpMerge, RandomGroupsGiveTheSameState) {
    std::mt19937_64 rng(42);
    auto size_of = [](offset e) -> std::uint32_t {
        return e % 5 == 0 ? 70 : 8;
    };
    auto random_bits = [&](offset e) {
        const std::uint32_t n = size_of(e);
        auto b = batch_bits::none_set(n);
        const int k = 1 + static_cast<int>(rng() % 3);
        for (int i = 0; i < k; ++i) {
            b.set(static_cast<std::uint32_t>(rng() % n));
        }
        return b;
    };
    for (int round = 0; round < 2000; ++round) {
        cursor_state s(rng() % 20);
        for (int i = 0; i < 30; ++i) {
            const offset e = rng() % 200;
            if (rng() % 2 == 0) {
                s.apply(ack_range_op{e, e + 1 + rng() % 4});
            } else {
                s.apply(ack_batch_op{e, random_bits(e)});
            }
        }
        std::vector<state_op> ops;
        const int n = 1 + static_cast<int>(rng() % 80);
        for (int i = 0; i < n; ++i) {
            const offset e = rng() % 200;
            const auto kind = rng() % 20;
            state_op op;
            if (kind < 9) {
                op = ack_range_op{e, e + 1 + rng() % 3};
            } else if (kind < 18) {
                op = ack_batch_op{e, random_bits(e)};
            } else if (kind == 18) {
                op = ack_cumulative_op{rng() % 40, std::nullopt, 0, {}};
            } else {
                op = put_property_op{"k", std::to_string(i)};
            }
            if (s.validate(op)) {
                ops.push_back(std::move(op));
            }
        }
        if (ops.empty()) {
            continue;
        }
        const auto merged = merge_ops(s, ops);
        ASSERT_LE(merged.size(), ops.size());
        ASSERT_TRUE(apply_all(s, merged) == apply_all(s, ops)) << "round " << round;
        const format::delta_record d{2, 77, merged};
        auto back = format::decode_delta(format::encode_delta(d), 2, 77);
        ASSERT_TRUE(back.has_value());
        ASSERT_EQ(back->ops, merged);
    }
}

}  // namespace
}  // namespace nereus::cursor
