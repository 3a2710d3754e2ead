#pragma once

// latency_histogram: counts of durations in fixed buckets, for /metrics and benchmarks.
//
// The buckets are cumulative-friendly upper bounds (Prometheus `le`): 25 µs … 1 s, then +Inf.
// A record() is one bucket search over 20 bounds and three relaxed atomic adds: cheap enough for
// once per journal commit, not meant for once per message on a hot path (there, tally into a
// local `counts` with counts::record() and add() it once per batch). Percentiles are
// estimated from a snapshot (or the difference of two snapshots, for a window) by the bucket
// that holds the rank: the answer is that bucket's upper bound, so a p99 of "≤ 750 µs" means
// 99 % of the durations were at most 750 µs.
//
// Ownership: plain value; snapshot() copies the counts out.
// Thread-safety: record() and snapshot() may run on any threads at once. A snapshot taken
//   during record()s may see a count without its sum (each field is read on its own); it is
//   for monitoring, never for decisions.
// Durability: in memory only; counts start at zero when the process starts.

#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>

namespace nereus {

class latency_histogram {
public:
    // Upper bounds in microseconds; a last, implicit bucket holds everything above (+Inf).
    static constexpr std::array<std::uint64_t, 20> kBoundsUs = {
        25,   50,   100,  200,   300,   500,   750,    1000,   1500,   2000,
        3000, 5000, 7500, 10000, 20000, 50000, 100000, 250000, 500000, 1000000};
    static constexpr std::size_t kBuckets = kBoundsUs.size() + 1;

    // The counts at one moment (not cumulative: counts[i] is bucket i alone).
    struct counts {
        std::array<std::uint64_t, kBuckets> buckets{};
        std::uint64_t count = 0;
        std::uint64_t sum_ns = 0;

        // A plain (single-thread) record, for a local tally that add() publishes later.
        void record(std::chrono::nanoseconds d) {
            ++buckets[bucket_of(d)];
            ++count;
            sum_ns += d.count() <= 0 ? 0 : static_cast<std::uint64_t>(d.count());
        }
        counts& operator+=(const counts& o) {
            for (std::size_t i = 0; i < kBuckets; ++i) {
                buckets[i] += o.buckets[i];
            }
            count += o.count;
            sum_ns += o.sum_ns;
            return *this;
        }
        // This window's counts since `earlier` (a snapshot of the same histogram).
        counts since(const counts& earlier) const {
            counts d = *this;
            for (std::size_t i = 0; i < kBuckets; ++i) {
                d.buckets[i] -= earlier.buckets[i];
            }
            d.count -= earlier.count;
            d.sum_ns -= earlier.sum_ns;
            return d;
        }
        // The upper bound (µs) of the bucket holding quantile q (0 < q ≤ 1); 0 when empty;
        // UINT64_MAX when it falls in the +Inf bucket.
        std::uint64_t quantile_bound_us(double q) const {
            std::uint64_t total = 0;
            for (const auto b : buckets) {
                total += b;
            }
            if (total == 0) {
                return 0;
            }
            auto rank = static_cast<std::uint64_t>(q * static_cast<double>(total) + 0.999999);
            rank = rank == 0 ? 1 : rank;
            std::uint64_t seen = 0;
            for (std::size_t i = 0; i < kBoundsUs.size(); ++i) {
                seen += buckets[i];
                if (seen >= rank) {
                    return kBoundsUs[i];
                }
            }
            return UINT64_MAX;
        }
    };

    // The first bucket whose bound is at least `d` (a bound is inclusive, as Prometheus' `le`).
    static std::size_t bucket_of(std::chrono::nanoseconds d) {
        std::size_t i = 0;
        while (i < kBoundsUs.size() && d.count() > static_cast<std::int64_t>(kBoundsUs[i]) * 1000) {
            ++i;
        }
        return i;
    }

    void record(std::chrono::nanoseconds d) {
        buckets_[bucket_of(d)].fetch_add(1, std::memory_order_relaxed);
        count_.fetch_add(1, std::memory_order_relaxed);
        sum_ns_.fetch_add(d.count() <= 0 ? 0 : static_cast<std::uint64_t>(d.count()),
                          std::memory_order_relaxed);
    }

    // Adds a tally (counts::record): one relaxed atomic add per non-zero field.
    void add(const counts& c) {
        for (std::size_t i = 0; i < kBuckets; ++i) {
            if (c.buckets[i] != 0) {
                buckets_[i].fetch_add(c.buckets[i], std::memory_order_relaxed);
            }
        }
        if (c.count != 0) {
            count_.fetch_add(c.count, std::memory_order_relaxed);
            sum_ns_.fetch_add(c.sum_ns, std::memory_order_relaxed);
        }
    }

    counts snapshot() const {
        counts c;
        for (std::size_t i = 0; i < kBuckets; ++i) {
            c.buckets[i] = buckets_[i].load(std::memory_order_relaxed);
        }
        c.count = count_.load(std::memory_order_relaxed);
        c.sum_ns = sum_ns_.load(std::memory_order_relaxed);
        return c;
    }

private:
    std::array<std::atomic<std::uint64_t>, kBuckets> buckets_{};
    std::atomic<std::uint64_t> count_{0};
    std::atomic<std::uint64_t> sum_ns_{0};
};

}  // namespace nereus
