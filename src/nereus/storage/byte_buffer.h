#pragma once

// byte_buffer: a growable byte array that does not zero new bytes and keeps its capacity across
// clear(), so the commit path reuses one allocation group after group (style R7).
//
// Thread-safety: thread-compatible.

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <memory>

namespace nereus::storage {

class byte_buffer {
public:
    byte_buffer() = default;
    byte_buffer(byte_buffer&&) noexcept = default;
    byte_buffer& operator=(byte_buffer&&) noexcept = default;
    byte_buffer(const byte_buffer&) = delete;
    byte_buffer& operator=(const byte_buffer&) = delete;
    ~byte_buffer() = default;

    [[nodiscard]] std::byte* data() { return data_.get(); }
    [[nodiscard]] const std::byte* data() const { return data_.get(); }
    [[nodiscard]] std::size_t size() const { return size_; }
    [[nodiscard]] std::size_t capacity() const { return capacity_; }
    // Sets the size; new bytes are uninitialised.
    void resize(std::size_t n) {
        if (n > capacity_) {
            grow(n);
        }
        size_ = n;
    }
    // Appends n uninitialised bytes and returns a pointer to them.
    std::byte* extend(std::size_t n) {
        const std::size_t old = size_;
        resize(size_ + n);
        return data_.get() + old;
    }
    void clear() { size_ = 0; }

private:
    void grow(std::size_t n) {
        const std::size_t cap = std::max(n, std::max<std::size_t>(capacity_ * 2, 4096));
        auto fresh = std::make_unique_for_overwrite<std::byte[]>(cap);
        if (size_ > 0) {
            std::memcpy(fresh.get(), data_.get(), size_);
        }
        data_ = std::move(fresh);
        capacity_ = cap;
    }

    std::unique_ptr<std::byte[]> data_;
    std::size_t size_ = 0;
    std::size_t capacity_ = 0;
};

}  // namespace nereus::storage
