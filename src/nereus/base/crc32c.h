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

// ---- combining checksums without the bytes ---------------------------------------------------
// For byte strings A and B: value(A || B) == combine(value(A), value(B), B.size()), and so
// extend(crc, B) == combine(crc, value(B), B.size()). Lets a caller that already holds the CRC
// of B (a verified Pulsar checksum, a record's payload CRC) checksum a longer string without
// reading B again. combine() costs O(popcount(len_b)) 32-bit GF(2) multiplications (~0.1-0.5 us):
// for a length used once. shifter precomputes one length (4 KiB of tables, ~40 us to build)
// and then combines in a few ns.
std::uint32_t combine(std::uint32_t crc_a, std::uint32_t crc_b, std::size_t len_b);

class shifter {
public:
    explicit shifter(std::size_t len_b);
    [[nodiscard]] std::size_t length() const { return len_; }
    [[nodiscard]] std::uint32_t combine(std::uint32_t crc_a, std::uint32_t crc_b) const {
        return t_[0][crc_a & 0xff] ^ t_[1][(crc_a >> 8) & 0xff] ^ t_[2][(crc_a >> 16) & 0xff] ^
               t_[3][crc_a >> 24] ^ crc_b;
    }

private:
    std::size_t len_;
    std::uint32_t t_[4][256];
};

// The portable implementation, exposed so tests can compare it with the hardware one.
std::uint32_t extend_portable(std::uint32_t crc, const void* data, std::size_t n);
// True when extend() uses the SSE4.2 instruction on this machine.
bool hardware_accelerated();

}  // namespace nereus::crc32c
