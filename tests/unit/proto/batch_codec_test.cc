// Batch payloads: build, read back, malformed batches (codecs: compression_test.cc).

#include "nereus/proto/batch_codec.h"

#include "nereus/proto/compression.h"
#include "nereus/proto/errc.h"
#include "nereus/proto/pulsar_api.h"

#include <gtest/gtest.h>

#include "support/bytes.h"

namespace nereus::proto {
namespace {

std::vector<std::byte> make_batch(int n) {
    std::vector<std::byte> out;
    batch_builder b(out);
    pb::SingleMessageMetadata md;
    for (int i = 0; i < n; ++i) {
        md.Clear();
        auto* kv = md.add_properties();
        kv->set_key("i");
        kv->set_value(std::to_string(i));
        if (i % 2 == 0) {
            md.set_partition_key("key-" + std::to_string(i));
        }
        md.set_sequence_id(static_cast<std::uint64_t>(100 + i));
        const std::string payload(static_cast<std::size_t>(i), char('a' + i));
        EXPECT_TRUE(b.add(md, test::bytes_of(payload)));
    }
    EXPECT_EQ(b.count(), n);
    return out;
}

TEST(BatchCodec, RoundTrip) {
    const auto batch = make_batch(5);
    batch_reader r;
    r.reset(batch, 5);
    for (int i = 0; i < 5; ++i) {
        auto more = r.next();
        ASSERT_TRUE(more && *more) << i;
        EXPECT_EQ(r.index(), i);
        EXPECT_EQ(r.metadata().properties(0).value(), std::to_string(i));
        EXPECT_EQ(r.metadata().has_partition_key(), i % 2 == 0);
        EXPECT_EQ(r.metadata().sequence_id(), static_cast<std::uint64_t>(100 + i));
        EXPECT_EQ(r.metadata().payload_size(), i);
        EXPECT_EQ(test::string_of(r.payload()),
                  std::string(static_cast<std::size_t>(i), char('a' + i)));
    }
    auto end = r.next();
    ASSERT_TRUE(end);
    EXPECT_FALSE(*end);
}

// pulsar-flex's wire form: [size][SingleMessageMetadata{1:properties, 3:payload_size}][payload]
TEST(BatchCodec, GoldenEntry) {
    std::vector<std::byte> out;
    batch_builder b(out);
    pb::SingleMessageMetadata md;
    ASSERT_TRUE(b.add(md, test::bytes_of("two")));
    EXPECT_EQ(test::to_hex(out), "00 00 00 02 18 03 74 77 6f");
}

TEST(BatchCodec, MalformedBatches) {
    const auto batch = make_batch(3);
    batch_reader r;
    // Count larger than the entries present.
    r.reset(batch, 4);
    for (int i = 0; i < 3; ++i) {
        ASSERT_TRUE(r.next());
    }
    EXPECT_EQ(r.next().error(), errc::bad_batch);
    // Count smaller: trailing bytes.
    r.reset(batch, 2);
    ASSERT_TRUE(r.next());
    ASSERT_TRUE(r.next());
    EXPECT_EQ(r.next().error(), errc::bad_batch);
    // Every truncation fails cleanly somewhere.
    for (std::size_t n = 0; n < batch.size(); ++n) {
        r.reset(std::span(batch).first(n), 3);
        bool failed = false;
        for (int i = 0; i < 4 && !failed; ++i) {
            auto more = r.next();
            if (!more) {
                EXPECT_EQ(more.error(), errc::bad_batch);
                failed = true;
            } else if (!*more) {
                break;
            }
        }
        EXPECT_TRUE(failed) << n;
    }
    // Negative payload_size.
    std::vector<std::byte> neg;
    batch_builder b(neg);
    pb::SingleMessageMetadata md;
    ASSERT_TRUE(b.add(md, {}));
    md.set_payload_size(-1);
    const std::string body = md.SerializeAsString();
    std::vector<std::byte> bad(4);
    detail::store_be32(bad.data(), static_cast<std::uint32_t>(body.size()));
    const auto bb = test::bytes_of(body);
    bad.insert(bad.end(), bb.begin(), bb.end());
    r.reset(bad, 1);
    EXPECT_EQ(r.next().error(), errc::bad_batch);
    r.reset({}, -1);
    EXPECT_EQ(r.next().error(), errc::bad_batch);
}

}  // namespace
}  // namespace nereus::proto
