#include "nereus/cursor/batch_bits.h"

#include <bit>

namespace nereus::cursor {
namespace {

std::size_t word_count(std::uint32_t size) {
    return (static_cast<std::size_t>(size) + 63) / 64;
}

}  // namespace

batch_bits batch_bits::none_set(std::uint32_t size) {
    batch_bits b;
    b.size_ = size;
    b.words_.assign(word_count(size), 0);
    return b;
}

batch_bits batch_bits::all_remaining(std::uint32_t size) {
    batch_bits b = none_set(size);
    for (auto& w : b.words_) {
        w = ~std::uint64_t{0};
    }
    if (size % 64 != 0) {
        b.words_.back() = (std::uint64_t{1} << (size % 64)) - 1;
    }
    return b;
}

batch_bits batch_bits::from_words(std::uint32_t size, std::vector<std::uint64_t> words) {
    batch_bits b;
    b.size_ = size;
    b.words_ = std::move(words);
    return b;
}

bool batch_bits::test(std::uint32_t i) const {
    return i < size_ && ((words_[i / 64] >> (i % 64)) & 1U) != 0;
}

void batch_bits::set(std::uint32_t i) {
    if (i < size_) {
        words_[i / 64] |= std::uint64_t{1} << (i % 64);
    }
}

void batch_bits::reset(std::uint32_t i) {
    if (i < size_) {
        words_[i / 64] &= ~(std::uint64_t{1} << (i % 64));
    }
}

void batch_bits::clear_bits(const batch_bits& acked) {
    for (std::size_t i = 0; i < words_.size() && i < acked.words_.size(); ++i) {
        words_[i] &= ~acked.words_[i];
    }
}

void batch_bits::clear_prefix(std::uint32_t n) {
    if (n >= size_) {
        for (auto& w : words_) {
            w = 0;
        }
        return;
    }
    for (std::size_t i = 0; i < n / 64; ++i) {
        words_[i] = 0;
    }
    if (n % 64 != 0) {
        words_[n / 64] &= ~((std::uint64_t{1} << (n % 64)) - 1);
    }
}

bool batch_bits::none() const {
    for (auto w : words_) {
        if (w != 0) {
            return false;
        }
    }
    return true;
}

std::uint32_t batch_bits::count() const {
    std::uint32_t n = 0;
    for (auto w : words_) {
        n += static_cast<std::uint32_t>(std::popcount(w));
    }
    return n;
}

std::vector<std::uint32_t> batch_bits::indices() const {
    std::vector<std::uint32_t> out;
    for (std::uint32_t i = 0; i < size_; ++i) {
        if (test(i)) {
            out.push_back(i);
        }
    }
    return out;
}

bool batch_bits::valid() const {
    if (size_ == 0 || size_ > max_size || words_.size() != word_count(size_)) {
        return false;
    }
    if (size_ % 64 != 0 && (words_.back() >> (size_ % 64)) != 0) {
        return false;
    }
    return true;
}

}  // namespace nereus::cursor
