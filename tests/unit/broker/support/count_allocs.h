#pragma once

// Counts heap allocations (operator new calls) made while g_counting is set, by every thread
// but those that set t_excluded. It REPLACES the global operator new/delete: include it in
// exactly one source file of a test executable of its own (allocation tests).
//
// Ownership: process-wide counters. Thread-safety: the counters are atomics.

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <new>

// GCC 12 flags free() in the replaced operator delete as mismatched with the (replaced)
// operator new once both are inlined; here both go through malloc/free.
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"

namespace {
std::atomic<std::uint64_t> g_allocs{0};
std::atomic<bool> g_counting{false};
thread_local bool t_excluded = false;

void* counted_alloc(std::size_t n) {
    if (g_counting.load(std::memory_order_relaxed) && !t_excluded) {
        g_allocs.fetch_add(1, std::memory_order_relaxed);
    }
    return std::malloc(n == 0 ? 1 : n);
}
void* counted_aligned(std::size_t n, std::size_t align) {
    if (g_counting.load(std::memory_order_relaxed) && !t_excluded) {
        g_allocs.fetch_add(1, std::memory_order_relaxed);
    }
    const std::size_t rounded = (n + align - 1) / align * align;
    return std::aligned_alloc(align, rounded == 0 ? align : rounded);
}
// The allocations made while `run()` runs (by the counted threads), in all and per item.
struct allocation_count {
    std::uint64_t total = 0;
    double per_item = 0;
};
template <class Run>
allocation_count count_allocations(std::uint64_t items, Run&& run) {
    g_allocs.store(0);
    g_counting.store(true);
    run();
    g_counting.store(false);
    const std::uint64_t total = g_allocs.load();
    return {total, static_cast<double>(total) / static_cast<double>(items)};
}
}  // namespace

// NOLINTBEGIN(misc-new-delete-overloads)
void* operator new(std::size_t n) {
    if (void* p = counted_alloc(n)) {
        return p;
    }
    throw std::bad_alloc();
}
void* operator new[](std::size_t n) {
    if (void* p = counted_alloc(n)) {
        return p;
    }
    throw std::bad_alloc();
}
void* operator new(std::size_t n, const std::nothrow_t&) noexcept {
    return counted_alloc(n);
}
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept {
    return counted_alloc(n);
}
void* operator new(std::size_t n, std::align_val_t a) {
    if (void* p = counted_aligned(n, static_cast<std::size_t>(a))) {
        return p;
    }
    throw std::bad_alloc();
}
void* operator new[](std::size_t n, std::align_val_t a) {
    if (void* p = counted_aligned(n, static_cast<std::size_t>(a))) {
        return p;
    }
    throw std::bad_alloc();
}
void operator delete(void* p) noexcept {
    std::free(p);
}
void operator delete[](void* p) noexcept {
    std::free(p);
}
void operator delete(void* p, std::size_t) noexcept {
    std::free(p);
}
void operator delete[](void* p, std::size_t) noexcept {
    std::free(p);
}
void operator delete(void* p, std::align_val_t) noexcept {
    std::free(p);
}
void operator delete[](void* p, std::align_val_t) noexcept {
    std::free(p);
}
void operator delete(void* p, std::size_t, std::align_val_t) noexcept {
    std::free(p);
}
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept {
    std::free(p);
}
// NOLINTEND(misc-new-delete-overloads)
