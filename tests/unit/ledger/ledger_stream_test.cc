// ledger_stream's publish-time index: append completions before the index exists take no lock
// (ledger_stream.h), and whatever was appended meanwhile is found by every later lookup,
// including appends that completed while the first lookup was building the index.

#include "nereus/ledger/ledger_stream.h"

#include "nereus/ledger/records.h"

#include <gtest/gtest.h>

#include "support/harness.h"
#include <array>
#include <atomic>
#include <thread>

namespace nereus::ledger::test {
namespace {

constexpr std::int64_t kStep = 10;  // entry i has publish time i * kStep

// Appends entry `i` (header + 8 bytes) to stream `id` and completes it on `view`.
void append_entry(storage::stream_store& s,
                  storage::stream_id id,
                  ledger_stream& view,
                  std::uint64_t i) {
    std::array<std::byte, format::kEntryHeaderSize + 8> e{};
    const auto t = static_cast<std::int64_t>(i) * kStep;
    format::encode_entry_header(
        {1, t}, std::span<std::byte, format::kEntryHeaderSize>(e.data(), format::kEntryHeaderSize));
    auto at = s.append_sync(id, e);
    ASSERT_TRUE(at.has_value()) << at.error().message();
    ASSERT_EQ(at->value(), i);
    view.on_appended(i, t, e.size());
}

// Every entry below end() is found by its own publish time, and max_time sees the last one.
void expect_all_found(ledger_stream& view, std::uint64_t n) {
    ASSERT_EQ(view.end(), n);
    for (std::uint64_t i = 0; i < n; ++i) {
        auto r = view.lookup(static_cast<std::int64_t>(i) * kStep);
        ASSERT_TRUE(r.has_value()) << r.error().message();
        ASSERT_EQ(r->at, i) << "publish time " << i * kStep;
        // Between two entries: the later one.
        auto between = view.lookup(static_cast<std::int64_t>(i) * kStep - kStep / 2);
        ASSERT_TRUE(between.has_value());
        ASSERT_EQ(between->at, i);
    }
    auto past = view.lookup(static_cast<std::int64_t>(n) * kStep);
    ASSERT_TRUE(past.has_value());
    EXPECT_EQ(past->at, n);
    auto m = view.max_time(0, n);
    ASSERT_TRUE(m.has_value());
    ASSERT_TRUE(m->has_value());
    EXPECT_EQ(**m, static_cast<std::int64_t>(n - 1) * kStep);
}

TEST(LedgerStream, AppendsBeforeAndAfterTheFirstLookupAreAllFound) {
    harness h;
    const storage::stream_id id(0x5151);
    ASSERT_TRUE(h.streams().create_stream(id).has_value());
    ledger_stream view(&h.streams(), id, 16, 0, 0);
    for (std::uint64_t i = 0; i < 40; ++i) {  // no index yet: completions take no lock
        append_entry(h.streams(), id, view, i);
    }
    expect_all_found(view, 40);                // builds the index
    for (std::uint64_t i = 40; i < 75; ++i) {  // indexed as they complete
        append_entry(h.streams(), id, view, i);
    }
    expect_all_found(view, 75);
}

TEST(LedgerStream, AFirstLookupRacingAppendsMissesNoEntry) {
    // The first lookup builds the index while appends complete on another thread; an append
    // whose completion read "no index" just before it was built is caught up by the next
    // lookup. Many short rounds, so that the build lands inside a completion now and then.
    harness h;
    for (std::uint64_t round = 0; round < 40; ++round) {
        const storage::stream_id id(0x6000 + round);
        ASSERT_TRUE(h.streams().create_stream(id).has_value());
        ledger_stream view(&h.streams(), id, 4, 0, 0);
        constexpr std::uint64_t kEntries = 24;
        std::atomic<bool> go{false};
        std::thread appender([&] {
            while (!go.load()) {
            }
            for (std::uint64_t i = 0; i < kEntries; ++i) {
                append_entry(h.streams(), id, view, i);
            }
        });
        go.store(true);
        // Lookups while the appends run: each answer is an entry that completed, or end().
        while (view.end() < kEntries) {
            const std::uint64_t e = view.end();
            auto r = view.lookup(0);
            ASSERT_TRUE(r.has_value()) << r.error().message();
            EXPECT_LE(r->at, std::max<std::uint64_t>(e, view.end()));
        }
        appender.join();
        expect_all_found(view, kEntries);
    }
}

}  // namespace
}  // namespace nereus::ledger::test
