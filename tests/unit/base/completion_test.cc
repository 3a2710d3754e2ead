// base/completion.h: inline storage for small callables, the heap box for large ones, call-once,
// move-only hand-over and nesting (the produce path's layers).

#include "nereus/base/completion.h"

#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <memory>
#include <utility>

namespace nereus {
namespace {

using small_fn = inline_completion<void(int), 48>;
using big_fn = inline_completion<void(int), 80>;

TEST(Completion, InvokesOnceThenIsEmpty) {
    int calls = 0;
    int seen = 0;
    small_fn f = [&](int v) {
        ++calls;
        seen = v;
    };
    ASSERT_TRUE(f);
    f(7);
    EXPECT_EQ(calls, 1);
    EXPECT_EQ(seen, 7);
    EXPECT_FALSE(f);
    f(8);  // empty: a no-op
    EXPECT_EQ(calls, 1);
}

TEST(Completion, DestroysCapturesAfterTheCallAndWhenNeverCalled) {
    auto token = std::make_shared<int>(0);
    {
        small_fn f = [t = token](int) {
            ++*t;
        };
        EXPECT_EQ(token.use_count(), 2);
        f(0);
        EXPECT_EQ(token.use_count(), 1);  // released right after the call
        EXPECT_EQ(*token, 1);
    }
    {
        small_fn f = [t = token](int) {
            ++*t;
        };
        EXPECT_EQ(token.use_count(), 2);
    }
    EXPECT_EQ(token.use_count(), 1);  // released by the destructor, never called
    EXPECT_EQ(*token, 1);
}

TEST(Completion, MoveTransfersOwnership) {
    auto token = std::make_shared<int>(0);
    small_fn a = [t = token](int v) {
        *t += v;
    };
    small_fn b = std::move(a);
    EXPECT_FALSE(a);  // NOLINT(bugprone-use-after-move): moved-from is empty by contract
    ASSERT_TRUE(b);
    EXPECT_EQ(token.use_count(), 2);
    small_fn c;
    c = std::move(b);
    EXPECT_FALSE(b);  // NOLINT(bugprone-use-after-move)
    c(5);
    EXPECT_EQ(*token, 5);
    EXPECT_EQ(token.use_count(), 1);
}

TEST(Completion, SmallCapturesAreInlineLargeOnesBoxed) {
    auto p = std::make_shared<int>(0);
    auto small = [p, q = p, n = std::uint64_t{1}](int) {
        (void)n;
    };
    static_assert(small_fn::fits_inline<decltype(small)>);
    auto large = [arr = std::array<std::uint64_t, 16>{}](int v) {
        (void)arr[0];
        (void)v;
    };
    static_assert(!small_fn::fits_inline<decltype(large)>);
    (void)small;
    (void)large;
    // The boxed one still works like the inline one.
    int got = 0;
    small_fn f = [arr = std::array<std::uint64_t, 16>{}, &got](int v) {
        got = v + static_cast<int>(arr[3]);
    };
    small_fn g = std::move(f);
    g(11);
    EXPECT_EQ(got, 11);
}

TEST(Completion, NestsInsideALargerCompletion) {
    // A layer wraps the caller's completion plus its own captures, like topic::append does.
    int got = 0;
    auto inner_token = std::make_shared<int>(0);
    small_fn inner = [t = inner_token, &got](int v) {
        got = v;
    };
    auto outer_lambda = [done = std::move(inner), add = 100](int v) mutable {
        done(v + add);
    };
    static_assert(big_fn::fits_inline<decltype(outer_lambda)>);
    big_fn outer = std::move(outer_lambda);
    EXPECT_EQ(inner_token.use_count(), 2);
    outer(1);
    EXPECT_EQ(got, 101);
    EXPECT_EQ(inner_token.use_count(), 1);
}

}  // namespace
}  // namespace nereus
