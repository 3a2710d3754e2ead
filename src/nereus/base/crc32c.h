#pragma once

// CRC32C (Castagnoli), the checksum of every on-disk record and Pulsar frame.
//
// Uses the SSE4.2 crc32 instruction when the CPU has it (checked once at start-up) and a
// slicing-by-8 table otherwise. Both give identical results; tests check the two agree.
// Thread-safety: thread-safe (pure functions).

#include <cstddef>
#include <cstdint>
#include <span>

namespace nereus::crc32c {

// Extends `crc` (the value of earlier bytes, 0 for none) over `n` more bytes.
std::uint32_t extend(std::uint32_t crc, const void* data, std::size_t n);

inline std::uint32_t extend(std::uint32_t crc, std::span<const std::byte> data) {
    return extend(crc, data.data(), data.size());
}
inline std::uint32_t value(const void* data, std::size_t n) {
    return extend(0, data, n);
}
inline std::uint32_t value(std::span<const std::byte> data) {
    return extend(0, data);
}

// The portable implementation, exposed so tests can compare it with the hardware one.
std::uint32_t extend_portable(std::uint32_t crc, const void* data, std::size_t n);
// True when extend() uses the SSE4.2 instruction on this machine.
bool hardware_accelerated();

}  // namespace nereus::crc32c
