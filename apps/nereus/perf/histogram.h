#pragma once

// A log-bucket latency histogram in the spirit of HdrHistogram (fixed memory, no allocation
// when recording).
//
// Values are non-negative integers (the perf tool records nanoseconds). Values below 2^7 have
// their own bucket; above, every power of two is split into 128 equal sub-buckets, so a bucket's
// width is at most 1/128 of its lower bound (relative error < 0.8 %). Values beyond 2^max_exp are
// counted in the last bucket; min, max, count and sum are kept exactly. percentile() returns the
// highest value equivalent to the bucket holding that rank (HdrHistogram's convention), clamped
// to the exact [min, max].
//
// Ownership: owns its counts (one array, sized at construction).
// Thread-safety: thread-compatible (the perf tool records from its one io thread).

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace nereus::app::perf {

class histogram {
public:
    static constexpr int sub_bucket_bits = 7;
    static constexpr std::uint64_t sub_buckets = std::uint64_t{1} << sub_bucket_bits;
    // Largest exponent with its own buckets: 2^43 ns is about 2.4 hours.
    static constexpr int max_exp = 43;
    static constexpr std::size_t bucket_count =
        static_cast<std::size_t>(max_exp - sub_bucket_bits + 2) * sub_buckets;

    histogram();

    // Inline, and without floating point (the sum is a 128-bit integer in two words): the
    // load generator records four values per receipt.
    void record(std::uint64_t value) noexcept {
        ++counts_[bucket_of(value)];
        ++count_;
        min_ = value < min_ ? value : min_;
        max_ = value > max_ ? value : max_;
        sum_lo_ += value;
        sum_hi_ += sum_lo_ < value ? 1 : 0;  // the carry
    }
    void reset() noexcept;
    // Adds every count of `other` into this one.
    void merge(const histogram& other) noexcept;

    [[nodiscard]] std::uint64_t count() const noexcept { return count_; }
    [[nodiscard]] std::uint64_t min() const noexcept { return count_ == 0 ? 0 : min_; }
    [[nodiscard]] std::uint64_t max() const noexcept { return max_; }
    [[nodiscard]] double mean() const noexcept;
    // p in [0, 1]; 0 for an empty histogram. percentile(1.0) == max().
    [[nodiscard]] std::uint64_t percentile(double p) const noexcept;

    // Bucket arithmetic (public for tests).
    [[nodiscard]] static std::size_t bucket_of(std::uint64_t value) noexcept {
        if (value < sub_buckets) {
            return static_cast<std::size_t>(value);
        }
        const int e = std::bit_width(value) - 1;  // >= sub_bucket_bits
        if (e > max_exp) {
            return bucket_count - 1;
        }
        const int shift = e - sub_bucket_bits;
        const std::uint64_t mantissa = (value >> shift) & (sub_buckets - 1);
        return static_cast<std::size_t>(static_cast<std::uint64_t>(shift + 1) * sub_buckets +
                                        mantissa);
    }
    [[nodiscard]] static std::uint64_t bucket_low(std::size_t index) noexcept;
    [[nodiscard]] static std::uint64_t bucket_high(std::size_t index) noexcept;

private:
    std::vector<std::uint64_t> counts_;
    std::uint64_t count_ = 0;
    std::uint64_t min_ = ~std::uint64_t{0};
    std::uint64_t max_ = 0;
    std::uint64_t sum_lo_ = 0;  // the exact sum of the values, modulo 2^64
    std::uint64_t sum_hi_ = 0;  // and its carries
};

}  // namespace nereus::app::perf
