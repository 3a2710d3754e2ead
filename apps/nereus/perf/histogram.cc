#include "apps/nereus/perf/histogram.h"

#include <algorithm>
#include <bit>
#include <cmath>

namespace nereus::app::perf {

histogram::histogram() : counts_(bucket_count, 0) {}

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

void histogram::reset() noexcept {
    std::fill(counts_.begin(), counts_.end(), 0);
    count_ = 0;
    min_ = ~std::uint64_t{0};
    max_ = 0;
    sum_lo_ = 0;
    sum_hi_ = 0;
}

void histogram::merge(const histogram& other) noexcept {
    for (std::size_t i = 0; i < bucket_count; ++i) {
        counts_[i] += other.counts_[i];
    }
    count_ += other.count_;
    min_ = std::min(min_, other.min_);
    max_ = std::max(max_, other.max_);
    sum_lo_ += other.sum_lo_;
    sum_hi_ += other.sum_hi_ + (sum_lo_ < other.sum_lo_ ? 1 : 0);
}

double histogram::mean() const noexcept {
    if (count_ == 0) {
        return 0.0;
    }
    const long double sum = static_cast<long double>(sum_hi_) * 18446744073709551616.0L +
                            static_cast<long double>(sum_lo_);
    return static_cast<double>(sum / static_cast<long double>(count_));
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
