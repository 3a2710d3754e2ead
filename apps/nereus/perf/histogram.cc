#include "apps/nereus/perf/histogram.h"

#include <algorithm>
#include <bit>
#include <cmath>

namespace nereus::app::perf {

histogram::histogram() : counts_(bucket_count, 0) {}

std::size_t histogram::bucket_of(std::uint64_t value) noexcept {
    if (value < sub_buckets) {
        return static_cast<std::size_t>(value);
    }
    const int e = std::bit_width(value) - 1;  // >= sub_bucket_bits
    if (e > max_exp) {
        return bucket_count - 1;
    }
    const int shift = e - sub_bucket_bits;
    const std::uint64_t mantissa = (value >> shift) & (sub_buckets - 1);
    return static_cast<std::size_t>(static_cast<std::uint64_t>(shift + 1) * sub_buckets + mantissa);
}

std::uint64_t histogram::bucket_low(std::size_t index) noexcept {
    if (index < sub_buckets) {
        return index;
    }
    const auto shift = static_cast<int>(index / sub_buckets) - 1;
    const std::uint64_t mantissa = index % sub_buckets;
    return (sub_buckets + mantissa) << shift;
}

std::uint64_t histogram::bucket_high(std::size_t index) noexcept {
    if (index < sub_buckets) {
        return index;
    }
    if (index == bucket_count - 1) {
        return ~std::uint64_t{0};
    }
    const auto shift = static_cast<int>(index / sub_buckets) - 1;
    return bucket_low(index) + (std::uint64_t{1} << shift) - 1;
}

void histogram::record(std::uint64_t value) noexcept {
    ++counts_[bucket_of(value)];
    ++count_;
    min_ = std::min(min_, value);
    max_ = std::max(max_, value);
    sum_ += static_cast<long double>(value);
}

void histogram::reset() noexcept {
    std::fill(counts_.begin(), counts_.end(), 0);
    count_ = 0;
    min_ = ~std::uint64_t{0};
    max_ = 0;
    sum_ = 0;
}

void histogram::merge(const histogram& other) noexcept {
    for (std::size_t i = 0; i < bucket_count; ++i) {
        counts_[i] += other.counts_[i];
    }
    count_ += other.count_;
    min_ = std::min(min_, other.min_);
    max_ = std::max(max_, other.max_);
    sum_ += other.sum_;
}

double histogram::mean() const noexcept {
    return count_ == 0 ? 0.0 : static_cast<double>(sum_ / static_cast<long double>(count_));
}

std::uint64_t histogram::percentile(double p) const noexcept {
    if (count_ == 0) {
        return 0;
    }
    p = std::clamp(p, 0.0, 1.0);
    auto rank = static_cast<std::uint64_t>(std::ceil(p * static_cast<double>(count_)));
    rank = std::clamp<std::uint64_t>(rank, 1, count_);
    std::uint64_t seen = 0;
    for (std::size_t i = 0; i < bucket_count; ++i) {
        seen += counts_[i];
        if (seen >= rank) {
            return std::clamp(bucket_high(i), min(), max_);
        }
    }
    return max_;
}

}  // namespace nereus::app::perf
