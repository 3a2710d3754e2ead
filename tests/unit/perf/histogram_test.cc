#include "apps/nereus/perf/histogram.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <random>

namespace nereus::app::perf {
namespace {

TEST(PerfHistogram, EmptyReportsZero) {
    histogram h;
    EXPECT_EQ(h.count(), 0U);
    EXPECT_EQ(h.percentile(0.5), 0U);
    EXPECT_EQ(h.percentile(1.0), 0U);
    EXPECT_EQ(h.min(), 0U);
    EXPECT_EQ(h.max(), 0U);
    EXPECT_EQ(h.mean(), 0.0);
}

TEST(PerfHistogram, SmallValuesAreExact) {
    histogram h;
    for (std::uint64_t v = 0; v < 128; ++v) {
        h.record(v);
    }
    EXPECT_EQ(h.count(), 128U);
    EXPECT_EQ(h.min(), 0U);
    EXPECT_EQ(h.max(), 127U);
    EXPECT_EQ(h.percentile(0.5), 63U);  // rank 64 of 0..127
    EXPECT_EQ(h.percentile(1.0), 127U);
    EXPECT_EQ(h.percentile(0.0), 0U);
}

TEST(PerfHistogram, BucketsAreContiguousAndBounded) {
    // Every bucket starts right after the previous one ends, and its width is at most 1/128 of
    // its lower bound (the relative error).
    for (std::size_t i = 1; i + 1 < histogram::bucket_count; ++i) {
        ASSERT_EQ(histogram::bucket_low(i), histogram::bucket_high(i - 1) + 1) << i;
        const auto low = histogram::bucket_low(i);
        const auto width = histogram::bucket_high(i) - low + 1;
        if (low >= histogram::sub_buckets) {
            ASSERT_LE(width * histogram::sub_buckets, low) << i;
        }
        ASSERT_EQ(histogram::bucket_of(low), i);
        ASSERT_EQ(histogram::bucket_of(histogram::bucket_high(i)), i);
    }
}

TEST(PerfHistogram, PercentilesWithinRelativeError) {
    histogram h;
    // 1..1,000,000 ns uniformly: p50 = 500,000, p99 = 990,000, p999 = 999,000.
    for (std::uint64_t v = 1; v <= 1'000'000; ++v) {
        h.record(v);
    }
    auto near = [](std::uint64_t got, double want) {
        return static_cast<double>(got) >= want && static_cast<double>(got) <= want * 1.008;
    };
    EXPECT_TRUE(near(h.percentile(0.5), 500'000)) << h.percentile(0.5);
    EXPECT_TRUE(near(h.percentile(0.99), 990'000)) << h.percentile(0.99);
    EXPECT_TRUE(near(h.percentile(0.999), 999'000)) << h.percentile(0.999);
    EXPECT_EQ(h.percentile(1.0), 1'000'000U);
    EXPECT_EQ(h.max(), 1'000'000U);
    EXPECT_EQ(h.min(), 1U);
    EXPECT_NEAR(h.mean(), 500'000.5, 1e-6);
}

TEST(PerfHistogram, TailOfASkewedDistribution) {
    histogram h;
    // 999 fast values and one slow outlier: p99 stays fast, p999 and max see the outlier.
    for (int i = 0; i < 999; ++i) {
        h.record(1'000'000);  // 1 ms
    }
    h.record(2'000'000'000);  // 2 s
    EXPECT_LE(h.percentile(0.99), 1'008'000U);
    EXPECT_LE(h.percentile(0.999), 1'008'000U);  // rank 999 is still a fast one
    EXPECT_EQ(h.percentile(0.9995), 2'000'000'000U);
    EXPECT_EQ(h.max(), 2'000'000'000U);
}

TEST(PerfHistogram, HugeValuesAreClampedIntoTheLastBucketButMaxIsExact) {
    histogram h;
    const std::uint64_t huge = ~std::uint64_t{0} - 5;
    h.record(huge);
    h.record(10);
    EXPECT_EQ(histogram::bucket_of(huge), histogram::bucket_count - 1);
    EXPECT_EQ(h.max(), huge);
    EXPECT_EQ(h.percentile(1.0), huge);
    EXPECT_EQ(h.percentile(0.5), 10U);
}

TEST(PerfHistogram, MergeAndResetMatchRecordingDirectly) {
    std::mt19937_64 rng(42);
    std::lognormal_distribution<double> dist(13.0, 1.5);  // around 0.4 ms, long tail
    histogram a;
    histogram b;
    histogram both;
    for (int i = 0; i < 20'000; ++i) {
        const auto v = static_cast<std::uint64_t>(dist(rng));
        (i % 3 == 0 ? a : b).record(v);
        both.record(v);
    }
    a.merge(b);
    EXPECT_EQ(a.count(), both.count());
    EXPECT_EQ(a.min(), both.min());
    EXPECT_EQ(a.max(), both.max());
    for (double p : {0.1, 0.5, 0.9, 0.99, 0.999, 1.0}) {
        EXPECT_EQ(a.percentile(p), both.percentile(p)) << p;
    }
    a.reset();
    EXPECT_EQ(a.count(), 0U);
    EXPECT_EQ(a.percentile(0.99), 0U);
    a.record(7);
    EXPECT_EQ(a.min(), 7U);
    EXPECT_EQ(a.max(), 7U);
}

TEST(PerfHistogram, MeanIsExactPastTwoToThe64) {
    // The sum is kept in two 64-bit words: values whose sum overflows one word still average
    // exactly, recorded directly and through merge().
    histogram a;
    histogram b;
    histogram both;
    const std::uint64_t big = (std::uint64_t{1} << 63) + 6;
    for (int i = 0; i < 5; ++i) {
        a.record(big);
        both.record(big);
        b.record(big + 2);
        both.record(big + 2);
    }
    EXPECT_EQ(a.mean(), static_cast<double>(big));
    a.merge(b);
    EXPECT_EQ(a.count(), 10U);
    EXPECT_EQ(a.mean(), static_cast<double>(big + 1));
    EXPECT_EQ(a.mean(), both.mean());
    a.reset();
    a.record(3);
    a.record(4);
    EXPECT_EQ(a.mean(), 3.5);
}

}  // namespace
}  // namespace nereus::app::perf
