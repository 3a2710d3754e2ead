#pragma once

// direct_io_buffer: an owned byte buffer for direct I/O (file_system::open_direct), aligned to
// kDirectIoAlign, its size rounded up to whole pages (aligned_alloc's requirement; ASan
// rejects the rest).
//
// Ownership: unique (a unique_ptr that frees with std::free).
// Thread-safety: none of its own.
// Durability: none (memory).

#include "nereus/base/file_system.h"

#include <cstddef>
#include <cstdlib>
#include <memory>

namespace nereus {

struct free_deleter {
    void operator()(std::byte* p) const noexcept { std::free(p); }
};

using direct_io_buffer = std::unique_ptr<std::byte[], free_deleter>;

// At least `bytes` (rounded up to a multiple of kDirectIoAlign; 0 gives one page); nullptr
// when out of memory.
inline direct_io_buffer allocate_direct_io_buffer(std::size_t bytes) {
    const std::size_t pages = bytes == 0 ? 1 : (bytes + kDirectIoAlign - 1) / kDirectIoAlign;
    return direct_io_buffer(
        static_cast<std::byte*>(std::aligned_alloc(kDirectIoAlign, pages * kDirectIoAlign)));
}

}  // namespace nereus
