// base/completion.h: inline storage for small callables, the heap box for large ones, call-once,
// move-only hand-over and nesting (the produce path's layers).

#include "nereus/base/completion.h"

#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <memory>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>
#include <string>
#include <utility>
#include <vector>

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

// relocatable_if{true}: moves copy the bytes (no indirect call), and a layer wrapping a
// relocatable completion may declare itself relocatable too (topic::append, the ledger).
TEST(Completion, RelocatableChainsMoveByCopyingAndReleaseEachCaptureOnce) {
    auto inner_token = std::make_shared<int>(0);
    auto outer_token = std::make_shared<int>(0);
    int got = 0;
    small_fn inner(relocatable_if{true}, [t = inner_token, &got](int v) { got = v; });
    ASSERT_TRUE(inner.relocatable());
    const bool r = inner.relocatable();
    big_fn outer(relocatable_if{r}, [done = std::move(inner), t = outer_token,
                                     add = 100](int v) mutable { done(v + add); });
    EXPECT_TRUE(outer.relocatable());
    EXPECT_EQ(inner_token.use_count(), 2);
    EXPECT_EQ(outer_token.use_count(), 2);
    // Moved around as the store's queue does (a vector that grows relocates its elements).
    std::vector<big_fn> q;
    for (int i = 0; i < 40; ++i) {
        q.emplace_back(relocatable_if{true}, [t = outer_token](int) {});
    }
    q.push_back(std::move(outer));
    EXPECT_FALSE(outer);  // NOLINT(bugprone-use-after-move): moved-from is empty by contract
    for (int i = 0; i < 200; ++i) {
        q.emplace_back(relocatable_if{true}, [](int) {});  // reallocates: every element moves
    }
    EXPECT_EQ(inner_token.use_count(), 2);   // copied bytes, not copies of the shared_ptr
    EXPECT_EQ(outer_token.use_count(), 42);  // 40 + the chain's + this one
    big_fn moved = std::move(q[40]);
    big_fn assigned;
    assigned = std::move(moved);
    assigned(1);
    EXPECT_EQ(got, 101);
    EXPECT_FALSE(assigned);
    EXPECT_EQ(inner_token.use_count(), 1);  // the chain released both captures, once
    EXPECT_EQ(outer_token.use_count(), 41);
    q.clear();
    EXPECT_EQ(outer_token.use_count(), 1);
}

TEST(Completion, ANonRelocatableInnerKeepsTheOuterOnIndirectMoves) {
    // A capture that points into itself (a std::string's short buffer) must be moved by its
    // move constructor: an inner completion not declared relocatable reports it, and the
    // layer above passes that on.
    std::string seen;
    small_fn inner = [s = std::string("short"), &seen](int) {
        seen = s;
    };
    EXPECT_FALSE(inner.relocatable());
    const bool r = inner.relocatable();
    big_fn outer(relocatable_if{r}, [done = std::move(inner)](int v) mutable { done(v); });
    EXPECT_FALSE(outer.relocatable());
    std::vector<big_fn> q;
    q.push_back(std::move(outer));
    for (int i = 0; i < 100; ++i) {
        q.emplace_back([](int) {});
    }
    q[0](0);
    EXPECT_EQ(seen, "short");
    big_fn empty;
    EXPECT_TRUE(empty.relocatable());  // nothing to move
}

// Property: a three-layer chain (48 -> 80 -> 144 bytes, as connection -> topic -> store) with
// any mix of relocatable and indirect layers (a layer is relocatable only if declared so and
// its inner one is), moved any number of times through vectors that grow, move assignment and
// swaps, then invoked once or destroyed uninvoked: the call sees every layer's addition exactly
// once, and every capture is released exactly once.
RC_GTEST_PROP(Completion, ChainsOfMixedLayersSurviveAnyMovesAndReleaseOnce, ()) {
    using l1 = inline_completion<void(int), 48>;
    using l2 = inline_completion<void(int), 80>;
    using l3 = inline_completion<void(int), 144>;
    const auto decl = *rc::gen::container<std::vector<bool>>(3, rc::gen::arbitrary<bool>());
    const auto moves = *rc::gen::inRange(0, 40);
    const bool invoke = *rc::gen::arbitrary<bool>();
    auto t1 = std::make_shared<int>(0);
    auto t2 = std::make_shared<int>(0);
    auto t3 = std::make_shared<int>(0);
    int got = -1;
    int calls = 0;
    {
        l1 a(relocatable_if{decl[0]}, [t = t1, &got, &calls](int v) {
            got = v;
            ++calls;
        });
        RC_ASSERT(a.relocatable() == decl[0]);
        const bool r1 = a.relocatable() && decl[1];
        l2 b(relocatable_if{r1}, [done = std::move(a), t = t2](int v) mutable { done(v + 10); });
        RC_ASSERT(b.relocatable() == r1);
        const bool r2 = b.relocatable() && decl[2];
        l3 c(relocatable_if{r2},
             [done = std::move(b), t = t3, pad = std::array<std::uint64_t, 2>{}](int v) mutable {
                 done(v + 100 + static_cast<int>(pad[0]));
             });
        RC_ASSERT(c.relocatable() == r2);
        std::vector<l3> q;
        q.push_back(std::move(c));
        std::size_t at = 0;
        for (int i = 0; i < moves; ++i) {
            switch (*rc::gen::inRange(0, 3)) {
                case 0:  // grow: the vector relocates every element
                    for (int k = 0; k < 8; ++k) {
                        q.emplace_back(relocatable_if{true}, [](int) {});
                    }
                    break;
                case 1: {  // move-assign into another slot
                    const std::size_t to = *rc::gen::inRange<std::size_t>(0, q.size());
                    if (to != at) {
                        q[to] = std::move(q[at]);
                        at = to;
                    }
                    break;
                }
                default: {  // swap through a temporary
                    const std::size_t to = *rc::gen::inRange<std::size_t>(0, q.size());
                    l3 tmp = std::move(q[to]);
                    q[to] = std::move(q[at]);
                    q[at] = std::move(tmp);
                    at = to;
                    break;
                }
            }
            RC_ASSERT(t1.use_count() == 2);
            RC_ASSERT(t2.use_count() == 2);
            RC_ASSERT(t3.use_count() == 2);
        }
        RC_ASSERT(static_cast<bool>(q[at]));
        if (invoke) {
            q[at](1);
            RC_ASSERT(!q[at]);
            RC_ASSERT(t1.use_count() == 1);
            RC_ASSERT(t3.use_count() == 1);
        }
    }
    RC_ASSERT(calls == (invoke ? 1 : 0));
    if (invoke) {
        RC_ASSERT(got == 111);
    }
    RC_ASSERT(t1.use_count() == 1);
    RC_ASSERT(t2.use_count() == 1);
    RC_ASSERT(t3.use_count() == 1);
}

}  // namespace
}  // namespace nereus
