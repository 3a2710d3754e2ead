// managed_cursor::try_read (the broker's inline dispatch reads): the same entries as read(),
// and a would-block answer that moves nothing (the read position, the fence it was taken at,
// a non-durable cursor's trimmed-range skip).

#include "nereus/cursor/errc.h"
#include "nereus/ledger/records.h"

#include <gtest/gtest.h>

#include "support/harness.h"

namespace nereus::ledger::test {
namespace {

using cursor::ack_status;
using cursor::batch_bits;
using cursor::initial_position;
using cursor::reset_target;

struct seen {
    offset at;
    std::vector<std::uint32_t> remaining;
    std::string payload;
    friend bool operator==(const seen&, const seen&) = default;
};

std::vector<seen> flat(const read_result& r) {
    std::vector<seen> out;
    for (const auto& e : r.entries) {
        out.push_back(
            {e.at, e.remaining ? e.remaining->indices() : std::vector<std::uint32_t>{},
             std::string(reinterpret_cast<const char*>(e.payload.data()), e.payload.size())});
    }
    return out;
}

bool would_block(const result<read_result>& r) {
    return !r && r.error() == std::errc::operation_would_block;
}

// Two cursors with the same acks, one read with read(), one with try_read(), in steps of
// 1..7 entries: the same entries, remaining bits and payloads, in the same order, over
// several segments (every one open: the ledger created them).
TEST(LedgerTryRead, DeliversWhatReadDelivers) {
    harness h;
    auto& l = h.open();
    h.append_n(35, 1000, 4);
    auto a = *l->open_cursor("a", initial_position::earliest());
    auto b = *l->open_cursor("b", initial_position::earliest());
    for (auto* c : {a.get(), b.get()}) {
        const auto f = c->current_fence();
        EXPECT_EQ(ok(c->ack_sync(f, 2)).status, ack_status::ok);
        EXPECT_EQ(ok(c->ack_sync(f, 3)).status, ack_status::ok);
        EXPECT_EQ(ok(c->ack_sync(f, 17)).status, ack_status::ok);
        auto bits = batch_bits::none_set(4);
        bits.set(1);
        EXPECT_EQ(ok(c->ack_batch_index_sync(f, 12, bits)).status, ack_status::ok);
    }
    std::vector<seen> by_read;
    std::vector<seen> by_try;
    for (std::size_t step = 1;; step = step % 7 + 1) {
        auto r = a->read(step);
        auto t = b->try_read(step);
        ASSERT_TRUE(r.has_value());
        ASSERT_TRUE(t.has_value()) << t.error().message();
        EXPECT_EQ(flat(*t), flat(*r));
        const auto fr = flat(*r);
        by_read.insert(by_read.end(), fr.begin(), fr.end());
        const auto ft = flat(*t);
        by_try.insert(by_try.end(), ft.begin(), ft.end());
        EXPECT_EQ(b->read_position(), a->read_position());
        if (r->entries.empty()) {
            break;
        }
    }
    EXPECT_EQ(by_try, by_read);
    EXPECT_EQ(by_read.size(), 32U);
    EXPECT_GT(h.stream_spy().nowait_reads.load(), 0U);
    // The tail, appended after the read caught up: served at once.
    h.append_n(2);
    auto t = b->try_read(10);
    ASSERT_TRUE(t.has_value()) << t.error().message();
    ASSERT_EQ(t->entries.size(), 2U);
    EXPECT_EQ(t->entries[0].at, 35U);
}

// A would-block answer leaves the read position where it was: the next read() (or try_read once
// the bytes are cached) starts exactly there, and nothing is skipped or delivered twice.
TEST(LedgerTryRead, WouldBlockMovesNothing) {
    harness h;
    auto& l = h.open();
    h.append_n(20);
    auto c = *l->open_cursor("s", initial_position::earliest());
    auto first = c->read(3);
    ASSERT_TRUE(first.has_value());
    ASSERT_EQ(first->entries.size(), 3U);
    EXPECT_EQ(c->read_position(), 3U);

    h.fs().set_nowait_reads(false);  // a cold page cache
    EXPECT_TRUE(would_block(c->try_read(5)));
    EXPECT_EQ(c->read_position(), 3U);

    // Also across a fence change: the would-block try does not take the new fence (read() must
    // still see the change and restart at MDO).
    const auto f = c->current_fence();
    EXPECT_EQ(ok(c->ack_cumulative_sync(f, 0)).status, ack_status::ok);  // MDO 1
    ASSERT_TRUE(c->reset(reset_target::to_offset(1)).has_value());       // epoch moves on
    EXPECT_TRUE(would_block(c->try_read(5)));
    EXPECT_EQ(c->read_position(), 3U);
    h.fs().set_nowait_reads(true);
    auto again = c->try_read(5);
    ASSERT_TRUE(again.has_value()) << again.error().message();
    ASSERT_FALSE(again->entries.empty());
    EXPECT_EQ(again->entries[0].at, 1U);  // restarted at MDO under the new fence
    EXPECT_EQ(again->entries[0].fence, c->current_fence());

    h.fs().set_nowait_reads(false);
    const offset pos = c->read_position();
    EXPECT_TRUE(would_block(c->try_read(5)));
    EXPECT_EQ(c->read_position(), pos);
    auto r = c->read(5);  // the blocking read continues from the same place
    ASSERT_TRUE(r.has_value());
    ASSERT_FALSE(r->entries.empty());
    EXPECT_EQ(r->entries[0].at, pos);
}

// A non-durable cursor whose read position was trimmed away: try_read leaves it to read(),
// which reports the skipped range (a try_read that moved past it would lose the report).
TEST(LedgerTryRead, TrimmedNonDurablePositionIsLeftToRead) {
    harness h;
    auto& l = h.open();
    h.append_n(40);
    auto nd = *l->open_cursor("reader", initial_position::earliest(),
                              subscription_options{.durable = false});
    ok(nd->ack_sync(nd->current_fence(), 0));
    ASSERT_TRUE(l->trim().has_value());
    h.append_n(3);
    EXPECT_TRUE(would_block(nd->try_read(100)));
    EXPECT_EQ(nd->mark_delete(), 1U);
    auto r = nd->read(100);
    ASSERT_TRUE(r.has_value());
    ASSERT_TRUE(r->skipped.has_value());
    EXPECT_EQ(r->skipped->begin, 1U);
    EXPECT_EQ(r->skipped->end, 40U);
    // From there on the non-durable cursor reads inline too.
    h.append_n(2);
    auto t = nd->try_read(100);
    ASSERT_TRUE(t.has_value()) << t.error().message();
    ASSERT_EQ(t->entries.size(), 2U);
    EXPECT_EQ(t->entries[0].at, 43U);
}

// On the real file system (preadv2 with RWF_NOWAIT): entries just appended are in the page
// cache and served by try_read.
TEST(LedgerTryRead, RealFileSystemServesTheTail) {
    harness h(ten_per_segment(), /*real_fs=*/true);
    auto& l = h.open();
    h.append_n(25);
    auto c = *l->open_cursor("s", initial_position::earliest());
    auto t = c->try_read(100);
    if (would_block(t)) {
        GTEST_SKIP() << "this kernel/file system does not serve RWF_NOWAIT reads";
    }
    ASSERT_TRUE(t.has_value()) << t.error().message();
    ASSERT_EQ(t->entries.size(), 25U);
    for (std::size_t i = 0; i < 25; ++i) {
        EXPECT_EQ(t->entries[i].at, i);
    }
    EXPECT_EQ(c->read_position(), 25U);
}

}  // namespace
}  // namespace nereus::ledger::test
