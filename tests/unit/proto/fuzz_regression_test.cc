// Inputs found by the fuzz targets (fuzz/), replayed. Each test names the target and the
// finding; the bytes are the target's input as libFuzzer wrote it.

#include "nereus/proto/batch_codec.h"
#include "nereus/proto/pulsar_api.h"

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace nereus::proto {
namespace {

std::vector<std::byte> bytes(std::initializer_list<std::uint8_t> b) {
    std::vector<std::byte> out;
    for (auto x : b) {
        out.push_back(std::byte{x});
    }
    return out;
}

// batch_fuzz, crash-2bdd031c86c2d9c64c9a0db1426b9a0f409a04b7: a batch entry whose
// SingleMessageMetadata has no payload_size (a required field). The reader is lenient (as for
// every message it parses): the entry has an empty payload. The builder always writes
// payload_size, so the rebuilt entry differs by exactly that field (the target's comparison
// was too strict; no change to the reader).
TEST(FuzzRegression, BatchEntryWithoutPayloadSizeReadsAsEmpty) {
    const auto input =
        bytes({0x09, 0x0a, 0x01, 0x70, 0x10, 0x01, 0x18, 0x01, 0x58, 0x01, 0x00, 0x00, 0x00, 0x0e,
               0x0a, 0x06, 0x0a, 0x01, 0x61, 0x12, 0x01, 0x62, 0x52, 0x04, 0x00, 0x00, 0x2d, 0x30});
    // Byte 0 is the MessageMetadata length; it carries num_messages_in_batch = 1.
    const auto meta_bytes = std::span(input).subspan(1, 9);
    pb::MessageMetadata meta;
    ASSERT_TRUE(meta.ParsePartialFromArray(meta_bytes.data(), static_cast<int>(meta_bytes.size())));
    ASSERT_EQ(meta.num_messages_in_batch(), 1);
    const auto batch = std::span(input).subspan(10);

    batch_reader r;
    r.reset(batch, meta.num_messages_in_batch());
    auto more = r.next();
    ASSERT_TRUE(more && *more);
    EXPECT_FALSE(r.metadata().has_payload_size());
    EXPECT_TRUE(r.payload().empty());
    ASSERT_EQ(r.metadata().properties_size(), 1);
    EXPECT_EQ(r.metadata().properties(0).key(), "a");
    more = r.next();
    ASSERT_TRUE(more);
    EXPECT_FALSE(*more);

    // Rebuilt, the entry carries payload_size 0 and reads back the same otherwise.
    std::vector<std::byte> rebuilt;
    batch_builder b(rebuilt);
    pb::SingleMessageMetadata m = r.metadata();
    ASSERT_TRUE(b.add(m, {}));
    batch_reader again;
    again.reset(rebuilt, 1);
    more = again.next();
    ASSERT_TRUE(more && *more);
    EXPECT_TRUE(again.metadata().has_payload_size());
    EXPECT_EQ(again.metadata().payload_size(), 0);
    EXPECT_TRUE(again.payload().empty());
    pb::SingleMessageMetadata with_size = r.metadata();
    with_size.set_payload_size(0);
    EXPECT_EQ(again.metadata().SerializePartialAsString(), with_size.SerializePartialAsString());
}

}  // namespace
}  // namespace nereus::proto
