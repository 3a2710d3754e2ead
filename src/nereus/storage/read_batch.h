#pragma once

// read_batch: the result of stream_store::read — consecutive entries of one stream.
//
// Ownership: owns ONE buffer; every entry's payload is a view into it (zero-copy from the read
// buffer), valid as long as the batch lives. Moving the batch keeps the views valid.
// Thread-safety: thread-compatible.

#include "nereus/base/file_system.h"
#include "nereus/storage/types.h"

#include <cstddef>
#include <memory>
#include <new>
#include <type_traits>
#include <utility>
#include <vector>

namespace nereus::storage {

// An allocator whose value-initialisation leaves bytes uninitialised: resize() of a read
// buffer does not zero-fill what the next pread overwrites at once (style: no per-read memset).
template <class T>
struct uninit_allocator : std::allocator<T> {
    using value_type = T;
    template <class U>
    struct rebind {
        using other = uninit_allocator<U>;
    };
    uninit_allocator() noexcept = default;
    template <class U>
    uninit_allocator(const uninit_allocator<U>&) noexcept {}
    template <class U>
    void construct(U* p) noexcept(std::is_nothrow_default_constructible_v<U>) {
        ::new (static_cast<void*>(p)) U;  // default-, not value-initialised
    }
    template <class U, class... Args>
    void construct(U* p, Args&&... args) {
        std::construct_at(p, std::forward<Args>(args)...);
    }
};

// A read buffer: grows without zero-filling (every byte handed out was read from a file).
using read_buffer = std::vector<std::byte, uninit_allocator<std::byte>>;

struct entry_view {
    offset at;
    bytes_view payload;
};

class read_batch {
public:
    read_batch() = default;
    read_batch(read_buffer buffer, std::vector<entry_view> entries)
        : buffer_(std::move(buffer)), entries_(std::move(entries)) {}
    read_batch(read_batch&&) noexcept = default;
    read_batch& operator=(read_batch&&) noexcept = default;
    read_batch(const read_batch&) = delete;
    read_batch& operator=(const read_batch&) = delete;
    ~read_batch() = default;

    [[nodiscard]] const std::vector<entry_view>& entries() const { return entries_; }
    [[nodiscard]] bool empty() const { return entries_.empty(); }
    [[nodiscard]] std::size_t size() const { return entries_.size(); }
    const entry_view& operator[](std::size_t i) const { return entries_[i]; }
    [[nodiscard]] auto begin() const { return entries_.begin(); }
    [[nodiscard]] auto end() const { return entries_.end(); }
    // One past the last entry's offset, i.e. where the next read continues; `from` if empty.
    [[nodiscard]] offset next(offset from) const {
        return entries_.empty() ? from : offset(entries_.back().at.value() + 1);
    }

private:
    read_buffer buffer_;  // moved vectors keep their heap block, so views stay valid
    std::vector<entry_view> entries_;
};

}  // namespace nereus::storage
