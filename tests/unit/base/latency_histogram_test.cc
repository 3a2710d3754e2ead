// latency_histogram: bucket bounds, quantiles from counts, windows, concurrent records.

#include "nereus/base/latency_histogram.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

namespace nereus {
namespace {

using std::chrono::microseconds;
using std::chrono::nanoseconds;

TEST(LatencyHistogram, BoundsAreInclusiveUpperBounds) {
    EXPECT_EQ(latency_histogram::bucket_of(nanoseconds(0)), 0U);
    EXPECT_EQ(latency_histogram::bucket_of(nanoseconds(-5)), 0U);
    EXPECT_EQ(latency_histogram::bucket_of(microseconds(25)), 0U);
    EXPECT_EQ(latency_histogram::bucket_of(nanoseconds(25'001)), 1U);
    EXPECT_EQ(latency_histogram::bucket_of(microseconds(1000)), 7U);  // le 1 ms
    EXPECT_EQ(latency_histogram::bucket_of(microseconds(1001)), 8U);
    EXPECT_EQ(latency_histogram::bucket_of(std::chrono::seconds(1)),
              latency_histogram::kBoundsUs.size() - 1);
    EXPECT_EQ(latency_histogram::bucket_of(std::chrono::seconds(2)),
              latency_histogram::kBoundsUs.size());  // +Inf
}

TEST(LatencyHistogram, QuantileIsTheBoundOfTheBucketHoldingTheRank) {
    latency_histogram h;
    EXPECT_EQ(h.snapshot().quantile_bound_us(0.99), 0U);  // empty
    for (int i = 0; i < 98; ++i) {
        h.record(microseconds(80));  // le 100 µs
    }
    h.record(microseconds(400));   // le 500 µs
    h.record(microseconds(9000));  // le 10 ms
    const auto c = h.snapshot();
    EXPECT_EQ(c.count, 100U);
    EXPECT_EQ(c.sum_ns, (98U * 80 + 400 + 9000) * 1000);
    EXPECT_EQ(c.quantile_bound_us(0.5), 100U);
    EXPECT_EQ(c.quantile_bound_us(0.98), 100U);
    EXPECT_EQ(c.quantile_bound_us(0.99), 500U);
    EXPECT_EQ(c.quantile_bound_us(1.0), 10000U);
    h.record(std::chrono::seconds(5));
    EXPECT_EQ(h.snapshot().quantile_bound_us(1.0), UINT64_MAX);
}

TEST(LatencyHistogram, SinceGivesTheWindowAndPlusSums) {
    latency_histogram h;
    h.record(microseconds(10));
    const auto a = h.snapshot();
    h.record(microseconds(3000));
    h.record(microseconds(3000));
    const auto w = h.snapshot().since(a);
    EXPECT_EQ(w.count, 2U);
    EXPECT_EQ(w.quantile_bound_us(0.01), 3000U);  // the earlier 10 µs is outside the window
    auto sum = a;
    sum += w;
    EXPECT_EQ(sum.count, 3U);
    EXPECT_EQ(sum.buckets, h.snapshot().buckets);
}

// A local tally (counts::record) added once equals the same durations recorded one by one,
// buckets, count and sum (negative durations count as 0 in the sum, as record() does).
TEST(LatencyHistogram, ATallyAddedOnceEqualsTheRecordsItHolds) {
    latency_histogram direct;
    latency_histogram tallied;
    tallied.record(microseconds(60));  // what was there before the tally stays
    direct.record(microseconds(60));
    latency_histogram::counts tally;
    for (const auto d : {nanoseconds(-3), nanoseconds(25'000), nanoseconds(25'001),
                         nanoseconds(700'000), nanoseconds(2'000'000'000)}) {
        tally.record(d);
        direct.record(d);
    }
    EXPECT_EQ(tally.count, 5U);
    tallied.add(tally);
    tallied.add(latency_histogram::counts{});  // an empty tally adds nothing
    const auto a = direct.snapshot();
    const auto b = tallied.snapshot();
    EXPECT_EQ(b.buckets, a.buckets);
    EXPECT_EQ(b.count, a.count);
    EXPECT_EQ(b.sum_ns, a.sum_ns);
}

TEST(LatencyHistogram, ConcurrentRecordsAreAllCounted) {
    latency_histogram h;
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
        threads.emplace_back([&h, t] {
            for (int i = 0; i < 10000; ++i) {
                h.record(microseconds(t * 300 + i % 7));
            }
        });
    }
    for (auto& t : threads) {
        t.join();
    }
    const auto c = h.snapshot();
    EXPECT_EQ(c.count, 40000U);
    std::uint64_t in_buckets = 0;
    for (const auto b : c.buckets) {
        in_buckets += b;
    }
    EXPECT_EQ(in_buckets, 40000U);
}

}  // namespace
}  // namespace nereus
