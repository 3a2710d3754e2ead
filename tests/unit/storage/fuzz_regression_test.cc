// Inputs found by the fuzz targets (fuzz/), replayed. Each test names the target and the
// finding; the bytes are the target's input as libFuzzer wrote it.

#include "nereus/base/crc32c.h"
#include "nereus/storage/format.h"

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace nereus::storage {
namespace {

// storage_recovery_fuzz, crash-e2e9c851a018db8e8f3f9e54491e12037236f51f (mode 6: a checkpoint
// with its CRC repaired): the u32 at [36], always written as zero, was not checked, so a
// checkpoint with a non-zero value there decoded (and re-encoded to other bytes). Fixed:
// decode_checkpoint refuses it (recovery reports corrupt_checkpoint).
TEST(FuzzRegression, CheckpointWithNonZeroReservedFieldIsRejected) {
    const std::uint8_t input[] = {
        0x06, 0x4e, 0x52, 0x43, 0x4b, 0x01, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x28, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00};
    // The target's repair: the bytes after the mode byte, then their CRC32C.
    std::vector<std::byte> b;
    for (std::size_t i = 1; i < sizeof input; ++i) {
        b.push_back(std::byte{input[i]});
    }
    const std::uint32_t crc = crc32c::value(b.data(), b.size());
    b.resize(b.size() + 4);
    format::put_u32(b.data() + b.size() - 4, crc);
    ASSERT_EQ(b.size(), format::kCheckpointHeaderSize + format::kStreamMarkSize + 4);
    ASSERT_NE(format::get_u32(b.data() + 36), 0U);
    EXPECT_FALSE(format::decode_checkpoint(b));

    // The same checkpoint with [36] zero (and its CRC redone) decodes and re-encodes exactly.
    format::put_u32(b.data() + 36, 0);
    format::put_u32(b.data() + b.size() - 4, crc32c::value(b.data(), b.size() - 4));
    auto d = format::decode_checkpoint(b);
    ASSERT_TRUE(d);
    EXPECT_EQ(format::encode_checkpoint(d->pos, d->marks), b);
}

}  // namespace
}  // namespace nereus::storage
