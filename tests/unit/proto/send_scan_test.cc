// The direct SEND scanners (send_scan.h) against protobuf's generic parse: for arbitrary
// commands and metadata, and for arbitrary corruptions of them, a scanner either declines
// (nullopt: the generic parse decides) or accepts bytes protobuf also accepts and reports the
// same values. The common shapes a producer sends are accepted (the fast path is taken), and
// frame_decoder with fast_send decodes frames exactly like the generic decoder.

#include "nereus/proto/send_scan.h"

#include "nereus/proto/commands.h"
#include "nereus/proto/errc.h"
#include "nereus/proto/frame_decoder.h"
#include "nereus/proto/pulsar_api.h"

#include <gtest/gtest.h>

#include "support/bytes.h"
#include "support/corrupt.h"
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>
#include <string>
#include <vector>

namespace nereus::proto {
namespace {

using test::corrupt;
using test::gen_u64;
using test::to_bytes;

struct command_case {
    pb::BaseCommand cmd;
    bool common = true;  // only fields 1..8 of CommandSend, values < 2^63: must be accepted
};

command_case gen_command() {
    command_case c;
    c.cmd.set_type(pb::BaseCommand::SEND);
    auto* s = c.cmd.mutable_send();
    const auto set = [&](bool on, std::uint64_t v, auto setter) {
        if (on) {
            setter(v);
            if (v >= (std::uint64_t{1} << 63)) {
                c.common = false;
            }
        }
    };
    set(*rc::gen::arbitrary<bool>(), *gen_u64(), [&](std::uint64_t v) { s->set_producer_id(v); });
    set(*rc::gen::arbitrary<bool>(), *gen_u64(), [&](std::uint64_t v) { s->set_sequence_id(v); });
    if (*rc::gen::arbitrary<bool>()) {
        const auto n =
            *rc::gen::oneOf(rc::gen::inRange(0, 2000), rc::gen::arbitrary<std::int32_t>());
        s->set_num_messages(n);
        c.common = c.common && n >= 0;
    }
    set(*rc::gen::arbitrary<bool>(), *gen_u64(),
        [&](std::uint64_t v) { s->set_highest_sequence_id(v); });
    set(*rc::gen::arbitrary<bool>(), *gen_u64(),
        [&](std::uint64_t v) { s->set_txnid_least_bits(v); });
    if (*rc::gen::arbitrary<bool>()) {
        s->set_is_chunk(*rc::gen::arbitrary<bool>());
    }
    if (*rc::gen::arbitrary<bool>()) {
        s->set_marker(*rc::gen::arbitrary<bool>());
    }
    if (*rc::gen::inRange(0, 8) == 0) {
        s->mutable_message_id()->set_ledgerid(*gen_u64());
        s->mutable_message_id()->set_entryid(*gen_u64());
        c.common = false;
    }
    return c;
}

// The generic parse's view of the same bytes, or nullopt when it rejects them or they are not
// a SEND with a send body (the frame decoder's rule).
std::optional<send_fields> generic_send(const std::vector<std::byte>& b) {
    pb::BaseCommand cmd;
    if (!cmd.ParsePartialFromArray(b.data(), static_cast<int>(b.size())) || !cmd.has_type() ||
        cmd.type() != pb::BaseCommand::SEND || !cmd.has_send()) {
        return std::nullopt;
    }
    send_fields s;
    s.producer_id = cmd.send().producer_id();
    s.sequence_id = cmd.send().sequence_id();
    s.num_messages = cmd.send().num_messages();
    s.highest_sequence_id = cmd.send().highest_sequence_id();
    s.has_highest_sequence_id = cmd.send().has_highest_sequence_id();
    return s;
}

void assert_same(const send_fields& a, const send_fields& b) {
    RC_ASSERT(a.producer_id == b.producer_id);
    RC_ASSERT(a.sequence_id == b.sequence_id);
    RC_ASSERT(a.num_messages == b.num_messages);
    RC_ASSERT(a.highest_sequence_id == b.highest_sequence_id);
    RC_ASSERT(a.has_highest_sequence_id == b.has_highest_sequence_id);
}

RC_GTEST_PROP(SendScan, CommandMatchesGenericParse, ()) {
    const auto c = gen_command();
    const auto bytes = to_bytes(c.cmd.SerializePartialAsString());
    const auto fast = scan_send_command(bytes);
    const auto slow = generic_send(bytes);
    RC_ASSERT(slow.has_value());
    if (c.common) {
        RC_ASSERT(fast.has_value());  // the fast path is taken for what producers send
    }
    if (fast) {
        assert_same(*fast, *slow);
    }
}

RC_GTEST_PROP(SendScan, CorruptCommandNeverAcceptedWhereGenericRejects, ()) {
    const auto c = gen_command();
    const auto bytes = corrupt(to_bytes(c.cmd.SerializePartialAsString()));
    if (const auto fast = scan_send_command(bytes)) {
        const auto slow = generic_send(bytes);
        RC_ASSERT(slow.has_value());
        assert_same(*fast, *slow);
    }
}

struct metadata_case {
    pb::MessageMetadata md;
    bool common = true;
};

metadata_case gen_metadata() {
    metadata_case c;
    auto& md = c.md;
    md.set_producer_name(*rc::gen::arbitrary<std::string>());
    md.set_sequence_id(*rc::gen::inRange<std::uint64_t>(0, std::uint64_t{1} << 62));
    md.set_publish_time(*rc::gen::inRange<std::uint64_t>(0, std::uint64_t{1} << 62));
    if (*rc::gen::arbitrary<bool>()) {
        const auto n =
            *rc::gen::oneOf(rc::gen::inRange(0, 2000), rc::gen::arbitrary<std::int32_t>());
        md.set_num_messages_in_batch(n);
        c.common = c.common && n >= 0;
    }
    if (*rc::gen::arbitrary<bool>()) {
        md.set_partition_key(*rc::gen::arbitrary<std::string>());
    }
    if (*rc::gen::arbitrary<bool>()) {
        md.set_uncompressed_size(*rc::gen::arbitrary<std::uint32_t>());
        md.set_compression(pb::LZ4);
    }
    if (*rc::gen::arbitrary<bool>()) {
        md.set_event_time(*rc::gen::inRange<std::uint64_t>(0, std::uint64_t{1} << 62));
        md.set_ordering_key(*rc::gen::arbitrary<std::string>());
        md.set_uuid(*rc::gen::arbitrary<std::string>());
        md.set_chunk_id(*rc::gen::inRange(0, 100));
        md.set_null_partition_key(true);
        md.set_highest_sequence_id(*rc::gen::inRange<std::uint64_t>(0, 1000000));
    }
    if (*rc::gen::arbitrary<bool>()) {
        md.add_replicate_to(*rc::gen::arbitrary<std::string>());
        md.set_schema_version(*rc::gen::arbitrary<std::string>());
    }
    if (*rc::gen::inRange(0, 6) == 0) {
        auto* kv = md.add_properties();
        kv->set_key(*rc::gen::arbitrary<std::string>());
        kv->set_value(*rc::gen::arbitrary<std::string>());
        c.common = false;
    }
    return c;
}

std::optional<metadata_fields> generic_metadata(const std::vector<std::byte>& b) {
    pb::MessageMetadata md;
    if (!md.ParsePartialFromArray(b.data(), static_cast<int>(b.size()))) {
        return std::nullopt;
    }
    return metadata_fields{md.publish_time(), md.num_messages_in_batch(),
                           md.has_num_messages_in_batch()};
}

void assert_same(const metadata_fields& a, const metadata_fields& b) {
    RC_ASSERT(a.publish_time == b.publish_time);
    RC_ASSERT(a.num_messages_in_batch == b.num_messages_in_batch);
    RC_ASSERT(a.has_num_messages_in_batch == b.has_num_messages_in_batch);
}

RC_GTEST_PROP(SendScan, MetadataMatchesGenericParse, ()) {
    const auto c = gen_metadata();
    const auto bytes = to_bytes(c.md.SerializePartialAsString());
    const auto fast = scan_metadata(bytes);
    const auto slow = generic_metadata(bytes);
    RC_ASSERT(slow.has_value());
    if (c.common) {
        RC_ASSERT(fast.has_value());
    }
    if (fast) {
        assert_same(*fast, *slow);
    }
}

RC_GTEST_PROP(SendScan, CorruptMetadataNeverAcceptedWhereGenericRejects, ()) {
    const auto c = gen_metadata();
    const auto bytes = corrupt(to_bytes(c.md.SerializePartialAsString()));
    if (const auto fast = scan_metadata(bytes)) {
        const auto slow = generic_metadata(bytes);
        RC_ASSERT(slow.has_value());
        assert_same(*fast, *slow);
    }
}

// Whole frames through both decoders, intact or with one corrupted byte anywhere.
RC_GTEST_PROP(SendScan, FastSendDecoderDecodesLikeGeneric, ()) {
    const auto mc = gen_metadata();
    const auto payload = *rc::gen::arbitrary<std::string>();
    command_writer w;
    w.set_peer_protocol_version(*rc::gen::arbitrary<bool>() ? 20 : 5);
    frame_buffer out;
    RC_ASSERT(w.send(out, {.producer_id = *gen_u64(), .sequence_id = *gen_u64()}, mc.md,
                     test::bytes_of(payload))
                  .has_value());
    std::vector<std::byte> frame(out.begin(), out.end());
    if (*rc::gen::arbitrary<bool>()) {
        const auto at = *rc::gen::inRange<std::size_t>(0, frame.size());
        frame[at] ^= static_cast<std::byte>(*rc::gen::inRange(1, 256));
    }
    frame_decoder generic;
    frame_decoder fast({.fast_send = true});
    const auto a = generic.decode(frame);
    const auto b = fast.decode(frame);
    RC_ASSERT(a.has_value() == b.has_value());
    if (!a) {
        RC_ASSERT(a.error() == b.error());
        return;
    }
    RC_ASSERT(a->complete == b->complete);
    RC_ASSERT(a->bytes_needed == b->bytes_needed);
    if (!a->complete) {
        return;
    }
    const auto& x = a->frame;
    const auto& y = b->frame;
    RC_ASSERT(x.size == y.size);
    RC_ASSERT(x.raw_type == y.raw_type);
    RC_ASSERT(x.known_type == y.known_type);
    RC_ASSERT(x.message_error == y.message_error);
    RC_ASSERT(x.checksum == y.checksum);
    RC_ASSERT(x.headers_and_payload.data() == y.headers_and_payload.data());
    RC_ASSERT(x.headers_and_payload.size() == y.headers_and_payload.size());
    RC_ASSERT(x.metadata_values.has_value() == y.metadata_values.has_value());
    if (x.metadata_values) {
        assert_same(*x.metadata_values, *y.metadata_values);
    }
    if (x.known_type && x.type() == command_type::send) {
        assert_same(x.send, y.send);
    }
}

TEST(SendScan, ProducerFrameTakesTheFastPath) {
    pb::MessageMetadata md;
    md.set_producer_name("perf-producer");
    md.set_sequence_id(41);
    md.set_publish_time(1700000000123);
    command_writer w;
    frame_buffer out;
    ASSERT_TRUE(w.send(out, {.producer_id = 7, .sequence_id = 41}, md, test::bytes_of("hello")));
    frame_decoder fast({.fast_send = true});
    const auto r = fast.decode(out);
    ASSERT_TRUE(r && r->complete);
    const auto& f = r->frame;
    EXPECT_FALSE(f.has_command());     // read by the scanner, no BaseCommand parsed
    EXPECT_EQ(f.metadata(), nullptr);  // nor MessageMetadata
    EXPECT_EQ(f.type(), command_type::send);
    EXPECT_EQ(f.send.producer_id, 7U);
    EXPECT_EQ(f.send.sequence_id, 41U);
    ASSERT_TRUE(f.metadata_values.has_value());
    EXPECT_EQ(f.metadata_values->publish_time, 1700000000123U);
    EXPECT_FALSE(f.metadata_values->has_num_messages_in_batch);
    EXPECT_EQ(f.checksum, checksum_state::valid);
    EXPECT_EQ(test::string_of(f.payload), "hello");
}

TEST(SendScan, MalformedInputIsDeclinedAndRejectedByTheGenericPath) {
    // BaseCommand{type=SEND, send{producer_id=1, sequence_id=<truncated varint>}}.
    const std::vector<std::byte> truncated = {std::byte{0x08}, std::byte{0x06}, std::byte{0x32},
                                              std::byte{0x04}, std::byte{0x08}, std::byte{0x01},
                                              std::byte{0x10}, std::byte{0x80}};
    EXPECT_FALSE(scan_send_command(truncated));
    EXPECT_FALSE(generic_send(truncated));
    // send's length runs past the end.
    const std::vector<std::byte> overlong = {std::byte{0x08}, std::byte{0x06}, std::byte{0x32},
                                             std::byte{0x09}, std::byte{0x08}, std::byte{0x01}};
    EXPECT_FALSE(scan_send_command(overlong));
    EXPECT_FALSE(generic_send(overlong));
    // Metadata: a string whose length runs past the end, and field number 0.
    const std::vector<std::byte> bad_len = {std::byte{0x0a}, std::byte{0x05}, std::byte{'a'}};
    EXPECT_FALSE(scan_metadata(bad_len));
    EXPECT_FALSE(generic_metadata(bad_len));
    const std::vector<std::byte> field0 = {std::byte{0x00}, std::byte{0x01}};
    EXPECT_FALSE(scan_metadata(field0));
    EXPECT_FALSE(generic_metadata(field0));

    // Through the decoder (frames built by hand): a metadata the scanner declines and protobuf
    // rejects gives bad_metadata; a command both reject gives bad_command.
    const std::vector<std::byte> md_bad = {std::byte{0x0a}, std::byte{0x05}, std::byte{'a'}};
    std::vector<std::byte> f2;
    const auto put32 = [&](std::uint32_t v) {
        for (int s = 24; s >= 0; s -= 8) {
            f2.push_back(static_cast<std::byte>((v >> s) & 0xff));
        }
    };
    const std::vector<std::byte> cmd = {std::byte{0x08}, std::byte{0x06}, std::byte{0x32},
                                        std::byte{0x04}, std::byte{0x08}, std::byte{0x01},
                                        std::byte{0x10}, std::byte{0x02}};
    put32(static_cast<std::uint32_t>(4 + cmd.size() + 4 + md_bad.size()));
    put32(static_cast<std::uint32_t>(cmd.size()));
    f2.insert(f2.end(), cmd.begin(), cmd.end());
    put32(static_cast<std::uint32_t>(md_bad.size()));
    f2.insert(f2.end(), md_bad.begin(), md_bad.end());
    frame_decoder fast({.fast_send = true});
    const auto r = fast.decode(f2);
    ASSERT_TRUE(r && r->complete);
    EXPECT_EQ(r->frame.send.producer_id, 1U);
    EXPECT_EQ(r->frame.message_error, errc::bad_metadata);
    EXPECT_FALSE(r->frame.metadata_values.has_value());

    std::vector<std::byte> f3;
    f2.swap(f3);
    put32(static_cast<std::uint32_t>(4 + truncated.size() + 4));
    put32(static_cast<std::uint32_t>(truncated.size()));
    f2.insert(f2.end(), truncated.begin(), truncated.end());
    put32(0);
    frame_decoder fast2({.fast_send = true});
    const auto r2 = fast2.decode(f2);
    ASSERT_FALSE(r2.has_value());
    EXPECT_EQ(r2.error(), errc::bad_command);
}

}  // namespace
}  // namespace nereus::proto
