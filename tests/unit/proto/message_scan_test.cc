// The direct MESSAGE scanner (message_scan.h) against the generic decoder: for arbitrary
// commands, metadata and whole frames, intact or corrupted, the scanner either declines
// (nullopt: frame_decoder decides) or accepts bytes the generic decoder decodes cleanly
// (complete, valid checksum, no message_error) and reports the same values. The frames a broker
// sends a consumer are accepted (the fast path is taken). And the consumer's direct ACK encoding
// (command_writer::ack) is byte for byte the generic one.

#include "nereus/proto/message_scan.h"

#include "nereus/proto/commands.h"
#include "nereus/proto/frame_decoder.h"
#include "nereus/proto/pulsar_api.h"

#include <gtest/gtest.h>

#include "support/bytes.h"
#include "support/corrupt.h"
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>
#include <string>
#include <utility>
#include <vector>

namespace nereus::proto {
namespace {

using test::corrupt;
using test::gen_u64;
using test::to_bytes;

// ---- the command ----

struct command_case {
    pb::BaseCommand cmd;
    bool common = true;  // what a broker sends: must be accepted
};

command_case gen_command() {
    command_case c;
    c.cmd.set_type(pb::BaseCommand::MESSAGE);
    auto* m = c.cmd.mutable_message();
    const auto big = [&](std::uint64_t v) {
        if (v >= (std::uint64_t{1} << 63)) {
            c.common = false;
        }
        return v;
    };
    m->set_consumer_id(big(*gen_u64()));
    auto* id = m->mutable_message_id();
    id->set_ledgerid(big(*gen_u64()));
    id->set_entryid(big(*gen_u64()));
    if (*rc::gen::arbitrary<bool>()) {
        const auto p = *rc::gen::oneOf(rc::gen::inRange(-1, 100), rc::gen::arbitrary<int>());
        id->set_partition(p);
        c.common = c.common && p >= 0;  // a negative int32 is a 10-byte varint
    }
    if (*rc::gen::inRange(0, 4) == 0) {
        const auto b = *rc::gen::inRange(0, 1000);
        id->set_batch_index(b);
        id->set_batch_size(b + 1);
    }
    if (*rc::gen::arbitrary<bool>()) {
        m->set_redelivery_count(*rc::gen::arbitrary<std::uint32_t>());
    }
    if (*rc::gen::inRange(0, 4) == 0) {
        m->set_consumer_epoch(*rc::gen::inRange<std::uint64_t>(0, 1000));
    }
    if (*rc::gen::inRange(0, 6) == 0) {
        m->add_ack_set(*rc::gen::arbitrary<std::int64_t>());
        c.common = false;
    }
    if (*rc::gen::inRange(0, 8) == 0) {
        id->add_ack_set(1);
        c.common = false;
    }
    return c;
}

std::optional<message_fields> generic_command(const std::vector<std::byte>& b) {
    pb::BaseCommand cmd;
    if (!cmd.ParsePartialFromArray(b.data(), static_cast<int>(b.size())) || !cmd.has_type() ||
        cmd.type() != pb::BaseCommand::MESSAGE || !cmd.has_message()) {
        return std::nullopt;
    }
    const auto& m = cmd.message();
    return message_fields{.consumer_id = m.consumer_id(),
                          .ledger_id = m.message_id().ledgerid(),
                          .entry_id = m.message_id().entryid(),
                          .partition = m.message_id().partition(),
                          .batch_index = m.message_id().batch_index(),
                          .redelivery_count = m.redelivery_count()};
}

void assert_same(const message_fields& a, const message_fields& b) {
    RC_ASSERT(a.consumer_id == b.consumer_id);
    RC_ASSERT(a.ledger_id == b.ledger_id);
    RC_ASSERT(a.entry_id == b.entry_id);
    RC_ASSERT(a.partition == b.partition);
    RC_ASSERT(a.batch_index == b.batch_index);
    RC_ASSERT(a.redelivery_count == b.redelivery_count);
}

RC_GTEST_PROP(MessageScan, CommandMatchesGenericParse, ()) {
    const auto c = gen_command();
    const auto bytes = to_bytes(c.cmd.SerializePartialAsString());
    const auto fast = scan_message_command(bytes);
    const auto slow = generic_command(bytes);
    RC_ASSERT(slow.has_value());
    if (c.common) {
        RC_ASSERT(fast.has_value());
    }
    if (fast) {
        assert_same(*fast, *slow);
    }
}

RC_GTEST_PROP(MessageScan, CorruptCommandNeverAcceptedWhereGenericRejects, ()) {
    const auto c = gen_command();
    const auto bytes = corrupt(to_bytes(c.cmd.SerializePartialAsString()));
    if (const auto fast = scan_message_command(bytes)) {
        const auto slow = generic_command(bytes);
        RC_ASSERT(slow.has_value());
        assert_same(*fast, *slow);
    }
}

// ---- the metadata ----

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
        md.set_compression(*rc::gen::element(pb::NONE, pb::LZ4, pb::ZLIB, pb::ZSTD, pb::SNAPPY));
    }
    if (*rc::gen::arbitrary<bool>()) {
        md.set_event_time(*rc::gen::inRange<std::uint64_t>(0, std::uint64_t{1} << 62));
        md.set_ordering_key(*rc::gen::arbitrary<std::string>());
        md.set_chunk_id(*rc::gen::inRange(0, 100));
    }
    if (*rc::gen::inRange(0, 6) == 0) {
        auto* kv = md.add_properties();
        kv->set_key(*rc::gen::arbitrary<std::string>());
        kv->set_value(*rc::gen::arbitrary<std::string>());
        c.common = false;
    }
    return c;
}

std::optional<message_metadata_fields> generic_metadata(const std::vector<std::byte>& b) {
    pb::MessageMetadata md;
    if (!md.ParsePartialFromArray(b.data(), static_cast<int>(b.size()))) {
        return std::nullopt;
    }
    return message_metadata_fields{md.publish_time(), md.num_messages_in_batch(),
                                   md.has_num_messages_in_batch(), md.compression()};
}

void assert_same(const message_metadata_fields& a, const message_metadata_fields& b) {
    RC_ASSERT(a.publish_time == b.publish_time);
    RC_ASSERT(a.num_messages_in_batch == b.num_messages_in_batch);
    RC_ASSERT(a.has_num_messages_in_batch == b.has_num_messages_in_batch);
    RC_ASSERT(a.compression == b.compression);
}

RC_GTEST_PROP(MessageScan, MetadataMatchesGenericParse, ()) {
    const auto c = gen_metadata();
    const auto bytes = to_bytes(c.md.SerializePartialAsString());
    const auto fast = scan_message_metadata(bytes);
    const auto slow = generic_metadata(bytes);
    RC_ASSERT(slow.has_value());
    if (c.common) {
        RC_ASSERT(fast.has_value());
    }
    if (fast) {
        assert_same(*fast, *slow);
    }
}

RC_GTEST_PROP(MessageScan, CorruptMetadataNeverAcceptedWhereGenericRejects, ()) {
    const auto c = gen_metadata();
    const auto bytes = corrupt(to_bytes(c.md.SerializePartialAsString()));
    if (const auto fast = scan_message_metadata(bytes)) {
        const auto slow = generic_metadata(bytes);
        RC_ASSERT(slow.has_value());
        assert_same(*fast, *slow);
    }
}

// The stored entry (headers and payload) of a SEND of `md` and `payload` from a producer whose
// peer version is `producer_version` (5: no checksum, 20: with one), as the broker keeps it.
std::vector<std::byte> stored_entry(const pb::MessageMetadata& md,
                                    const std::string& payload,
                                    int producer_version) {
    command_writer producer;
    producer.set_peer_protocol_version(producer_version);
    frame_buffer send;
    RC_ASSERT(producer.send(send, {.producer_id = 1, .sequence_id = 2}, md, test::bytes_of(payload))
                  .has_value());
    frame_decoder d;
    auto r = d.decode(send);
    RC_ASSERT(r && r->complete);
    return {r->frame.headers_and_payload.begin(), r->frame.headers_and_payload.end()};
}

// A whole MESSAGE frame as the broker writes it (command_writer::message over a stored entry),
// for any ids, peer version (checksum kept, added or stripped) and ack set, intact, with one
// byte flipped anywhere, or cut short.
RC_GTEST_PROP(MessageScan, FrameScanAgreesWithGenericDecoder, ()) {
    const auto mc = gen_metadata();
    const auto payload = *rc::gen::arbitrary<std::string>();
    const bool producer_crc = *rc::gen::arbitrary<bool>();
    const std::vector<std::byte> stored = stored_entry(mc.md, payload, producer_crc ? 20 : 5);
    command_writer w;
    const int version = *rc::gen::element(5, 10, 11, 20);
    w.set_peer_protocol_version(version);
    message_id id;
    id.ledger_id = *gen_u64();
    id.entry_id = *gen_u64();
    id.partition = *rc::gen::oneOf(rc::gen::just(-1), rc::gen::inRange(0, 200));
    const auto consumer = *gen_u64();
    const auto redelivery = *rc::gen::arbitrary<std::uint32_t>();
    const bool with_ack_set = *rc::gen::inRange(0, 6) == 0;
    const std::int64_t words[] = {0x5a5a};
    frame_buffer out;
    RC_ASSERT(w.message(out, consumer, id, redelivery,
                        with_ack_set ? std::span<const std::int64_t>(words)
                                     : std::span<const std::int64_t>(),
                        stored)
                  .has_value());
    std::vector<std::byte> frame(out.begin(), out.end());
    const int damage = *rc::gen::inRange(0, 4);  // 0: flip a byte, 1: cut short, else intact
    if (damage == 0) {
        const auto at = *rc::gen::inRange<std::size_t>(0, frame.size());
        frame[at] ^= static_cast<std::byte>(*rc::gen::inRange(1, 256));
    } else if (damage == 1) {
        frame.resize(*rc::gen::inRange<std::size_t>(0, frame.size()));
    }
    const auto fast = scan_message_frame(frame, default_max_frame_size);
    frame_decoder d;
    const auto slow = d.decode(frame);
    const bool broker_shape =
        damage > 1 && !with_ack_set && mc.common && consumer < (std::uint64_t{1} << 63) &&
        id.ledger_id < (std::uint64_t{1} << 63) && id.entry_id < (std::uint64_t{1} << 63);
    if (broker_shape && version >= 20) {
        RC_ASSERT(fast.has_value());  // a checksummed MESSAGE a broker sends: the fast path
    }
    if (!fast) {
        return;
    }
    RC_ASSERT(slow.has_value() && slow->complete);
    const auto& f = slow->frame;
    RC_ASSERT(!f.message_error);
    RC_ASSERT(f.checksum == checksum_state::valid);
    RC_ASSERT(f.type() == command_type::message);
    RC_ASSERT(fast->size == f.size);
    RC_ASSERT(fast->payload.data() == f.payload.data());
    RC_ASSERT(fast->payload.size() == f.payload.size());
    RC_ASSERT(fast->metadata_bytes.data() == f.metadata_bytes.data());
    RC_ASSERT(fast->metadata_bytes.size() == f.metadata_bytes.size());
    const auto& m = f.command().message();
    assert_same(fast->message, message_fields{.consumer_id = m.consumer_id(),
                                              .ledger_id = m.message_id().ledgerid(),
                                              .entry_id = m.message_id().entryid(),
                                              .partition = m.message_id().partition(),
                                              .batch_index = m.message_id().batch_index(),
                                              .redelivery_count = m.redelivery_count()});
    RC_ASSERT(f.metadata() != nullptr);
    assert_same(fast->metadata, message_metadata_fields{f.metadata()->publish_time(),
                                                        f.metadata()->num_messages_in_batch(),
                                                        f.metadata()->has_num_messages_in_batch(),
                                                        f.metadata()->compression()});
    if (damage == 1) {
        RC_FAIL("a cut-short frame was accepted");
    }
}

TEST(MessageScan, DeclinesWhatItDoesNotRead) {
    pb::MessageMetadata md;
    md.set_producer_name("p");
    md.set_sequence_id(1);
    md.set_publish_time(2);
    command_writer producer;
    frame_buffer send;
    ASSERT_TRUE(producer.send(send, {.producer_id = 1, .sequence_id = 1}, md,
                              test::bytes_of(std::string("hello"))));
    // A SEND is not a MESSAGE.
    EXPECT_FALSE(scan_message_frame(send, default_max_frame_size));
    frame_decoder d;
    auto r = d.decode(send);
    ASSERT_TRUE(r && r->complete);
    const std::vector<std::byte> stored(r->frame.headers_and_payload.begin(),
                                        r->frame.headers_and_payload.end());
    command_writer w;
    frame_buffer out;
    ASSERT_TRUE(w.message(out, 3, {.ledger_id = 4, .entry_id = 5}, 0, {}, stored));
    const auto ok = scan_message_frame(out, default_max_frame_size);
    ASSERT_TRUE(ok);
    EXPECT_EQ(ok->size, out.size());
    EXPECT_EQ(ok->message.consumer_id, 3U);
    EXPECT_EQ(ok->message.ledger_id, 4U);
    EXPECT_EQ(ok->message.entry_id, 5U);
    EXPECT_EQ(ok->message.partition, -1);
    EXPECT_EQ(ok->metadata.publish_time, 2U);
    EXPECT_EQ(test::string_of(ok->payload), "hello");
    // Over the frame size limit, incomplete, or a wrong checksum: declined.
    EXPECT_FALSE(scan_message_frame(out, static_cast<std::uint32_t>(out.size() - 1)));
    EXPECT_FALSE(scan_message_frame(std::span<const std::byte>(out.data(), out.size() - 1),
                                    default_max_frame_size));
    std::vector<std::byte> bad(out.begin(), out.end());
    bad.back() ^= std::byte{1};
    EXPECT_FALSE(scan_message_frame(bad, default_max_frame_size));
    auto slow = d.decode(bad);
    ASSERT_TRUE(slow && slow->complete);
    EXPECT_TRUE(slow->frame.message_error);  // the generic path reports the mismatch
}

// ---- a client consumer's metadata (scan_consumer_metadata, decoder_options::fast_message) ----

struct consumer_md_case {
    pb::MessageMetadata md;
    bool common = true;  // what a client producer sends: must be accepted
};

consumer_md_case gen_consumer_metadata() {
    auto base = gen_metadata();
    consumer_md_case c{std::move(base.md), true};
    auto& md = c.md;
    md.clear_properties();  // gen_metadata's property marks it uncommon; here they are common
    const auto n = *rc::gen::oneOf(rc::gen::just(0), rc::gen::inRange(0, 5));
    for (int i = 0; i < n; ++i) {
        auto* kv = md.add_properties();
        kv->set_key(*rc::gen::arbitrary<std::string>());
        kv->set_value(*rc::gen::arbitrary<std::string>());
    }
    if (md.has_num_messages_in_batch() && md.num_messages_in_batch() < 0) {
        c.common = false;  // a negative int32 is a 10-byte varint
    }
    if (*rc::gen::inRange(0, 3) == 0) {
        md.set_uncompressed_size(*rc::gen::arbitrary<std::uint32_t>());
    }
    if (*rc::gen::inRange(0, 4) == 0) {
        md.set_event_time(*rc::gen::inRange<std::uint64_t>(0, std::uint64_t{1} << 62));
    }
    if (*rc::gen::inRange(0, 5) == 0) {
        md.add_replicate_to("r");
        md.set_schema_version("v1");
        md.set_null_value(*rc::gen::arbitrary<bool>());
    }
    if (*rc::gen::inRange(0, 8) == 0) {
        auto* k = md.add_encryption_keys();
        k->set_key("k");
        k->set_value("v");
        c.common = false;
    }
    return c;
}

// What a received message exposes, read from protobuf's parse (the reference).
struct expected_md {
    std::string producer_name;
    std::uint64_t sequence_id;
    std::uint64_t publish_time;
    std::uint64_t event_time;
    bool has_event_time;
    std::string partition_key;
    bool has_partition_key;
    std::string ordering_key;
    bool has_ordering_key;
    std::int32_t compression;
    std::uint32_t uncompressed_size;
    std::int32_t num_messages_in_batch;
    bool has_num_messages_in_batch;
    std::vector<std::pair<std::string, std::string>> properties;
};

expected_md expected_of(const pb::MessageMetadata& md) {
    expected_md e{md.producer_name(),
                  md.sequence_id(),
                  md.publish_time(),
                  md.event_time(),
                  md.has_event_time(),
                  md.partition_key(),
                  md.has_partition_key(),
                  md.ordering_key(),
                  md.has_ordering_key(),
                  md.compression(),
                  md.uncompressed_size(),
                  md.num_messages_in_batch(),
                  md.has_num_messages_in_batch(),
                  {}};
    for (const auto& kv : md.properties()) {
        e.properties.emplace_back(kv.key(), kv.value());
    }
    return e;
}

void assert_same(const consumer_metadata_fields& a, const expected_md& e) {
    RC_ASSERT(a.producer_name == e.producer_name);
    RC_ASSERT(a.sequence_id == e.sequence_id);
    RC_ASSERT(a.publish_time == e.publish_time);
    RC_ASSERT(a.event_time == e.event_time);
    RC_ASSERT(a.has_event_time == e.has_event_time);
    RC_ASSERT(a.partition_key == e.partition_key);
    RC_ASSERT(a.has_partition_key == e.has_partition_key);
    RC_ASSERT(a.ordering_key == e.ordering_key);
    RC_ASSERT(a.has_ordering_key == e.has_ordering_key);
    RC_ASSERT(a.compression == e.compression);
    RC_ASSERT(a.uncompressed_size == e.uncompressed_size);
    RC_ASSERT(a.num_messages_in_batch == e.num_messages_in_batch);
    RC_ASSERT(a.has_num_messages_in_batch == e.has_num_messages_in_batch);
    RC_ASSERT(a.properties.size() == e.properties.size());
    for (std::size_t i = 0; i < e.properties.size(); ++i) {
        RC_ASSERT(a.properties[i].key == e.properties[i].first);
        RC_ASSERT(a.properties[i].value == e.properties[i].second);
    }
}

RC_GTEST_PROP(MessageScan, ConsumerMetadataMatchesGenericParse, ()) {
    auto c = gen_consumer_metadata();
    if (c.md.properties_size() > 0 && *rc::gen::inRange(0, 4) == 0) {
        c.md.mutable_properties(0)->clear_value();  // ParsePartial reads it as empty
    }
    const auto bytes = to_bytes(c.md.SerializePartialAsString());
    std::vector<property_view> props;
    const auto fast = scan_consumer_metadata(bytes, props);
    if (c.common) {
        RC_ASSERT(fast.has_value());
    }
    if (fast) {
        assert_same(*fast, expected_of(c.md));
    }
}

RC_GTEST_PROP(MessageScan, CorruptConsumerMetadataNeverAcceptedWhereGenericRejects, ()) {
    const auto c = gen_consumer_metadata();
    const auto bytes = corrupt(to_bytes(c.md.SerializePartialAsString()));
    std::vector<property_view> props;
    if (const auto fast = scan_consumer_metadata(bytes, props)) {
        pb::MessageMetadata md;
        RC_ASSERT(md.ParsePartialFromArray(bytes.data(), static_cast<int>(bytes.size())));
        assert_same(*fast, expected_of(md));
    }
}

// The client's decoder (fast_message) against the generic one on the same MESSAGE frames, as
// the broker writes them (any ids, redelivery count, peer version, ack set, metadata with
// properties, keys, compression fields, uncommon fields), intact, with a byte flipped or
// inserted, or cut short: the same outcome (error for error, bytes needed, frame size, payload
// views, message_error, checksum state), and f.message / f.consumer_metadata hold what
// protobuf's parse of the same bytes holds. Common shapes take the fast path.
RC_GTEST_PROP(MessageScan, FastMessageDecodeAgreesWithGeneric, ()) {
    const auto mc = gen_consumer_metadata();
    const auto payload = *rc::gen::arbitrary<std::string>();
    const std::vector<std::byte> stored = stored_entry(mc.md, payload, *rc::gen::element(5, 20));
    command_writer w;
    const int version = *rc::gen::element(5, 11, 20);
    w.set_peer_protocol_version(version);
    message_id id;
    id.ledger_id = *gen_u64();
    id.entry_id = *gen_u64();
    id.partition = *rc::gen::oneOf(rc::gen::just(-1), rc::gen::inRange(0, 200));
    const auto consumer = *gen_u64();
    const auto redelivery = *rc::gen::arbitrary<std::uint32_t>();
    const bool with_ack_set = *rc::gen::inRange(0, 6) == 0;
    const std::int64_t words[] = {0x5a5a, -1};
    frame_buffer out;
    RC_ASSERT(w.message(out, consumer, id, redelivery,
                        with_ack_set ? std::span<const std::int64_t>(words)
                                     : std::span<const std::int64_t>(),
                        stored)
                  .has_value());
    std::vector<std::byte> frame(out.begin(), out.end());
    const int damage = *rc::gen::inRange(0, 5);  // 0 flip, 1 cut, 2 insert, else intact
    if (damage == 0) {
        const auto at = *rc::gen::inRange<std::size_t>(0, frame.size());
        frame[at] ^= static_cast<std::byte>(*rc::gen::inRange(1, 256));
    } else if (damage == 1) {
        frame.resize(*rc::gen::inRange<std::size_t>(0, frame.size()));
    } else if (damage == 2) {
        const auto at = *rc::gen::inRange<std::size_t>(0, frame.size());
        frame.insert(frame.begin() + static_cast<std::ptrdiff_t>(at),
                     static_cast<std::byte>(*rc::gen::arbitrary<std::uint8_t>()));
    }
    frame_decoder fast_decoder(decoder_options{.fast_message = true});
    frame_decoder slow_decoder;
    const auto a = fast_decoder.decode(frame);
    const auto b = slow_decoder.decode(frame);
    RC_ASSERT(a.has_value() == b.has_value());
    if (!a) {
        RC_ASSERT(a.error() == b.error());
        return;
    }
    RC_ASSERT(a->complete == b->complete);
    if (!a->complete) {
        RC_ASSERT(a->bytes_needed == b->bytes_needed);
        return;
    }
    const auto& fa = a->frame;
    const auto& fb = b->frame;
    RC_ASSERT(fa.size == fb.size);
    RC_ASSERT(fa.raw_type == fb.raw_type);
    RC_ASSERT(fa.known_type == fb.known_type);
    RC_ASSERT(fa.message_error == fb.message_error);
    RC_ASSERT(fa.checksum == fb.checksum);
    RC_ASSERT(fa.payload.data() == fb.payload.data());
    RC_ASSERT(fa.payload.size() == fb.payload.size());
    RC_ASSERT(fa.metadata_bytes.data() == fb.metadata_bytes.data());
    RC_ASSERT(fa.metadata_bytes.size() == fb.metadata_bytes.size());
    if (!fb.known_type || fb.type() != command_type::message) {
        return;  // damaged into another command: both took the generic path
    }
    const auto& m = fb.command().message();
    assert_same(fa.message, message_fields{.consumer_id = m.consumer_id(),
                                           .ledger_id = m.message_id().ledgerid(),
                                           .entry_id = m.message_id().entryid(),
                                           .partition = m.message_id().partition(),
                                           .batch_index = m.message_id().batch_index(),
                                           .redelivery_count = m.redelivery_count()});
    RC_ASSERT(std::vector<std::int64_t>(fa.message.ack_set.begin(), fa.message.ack_set.end()) ==
              std::vector<std::int64_t>(m.ack_set().begin(), m.ack_set().end()));
    RC_ASSERT(fa.consumer_metadata.has_value() == (fb.metadata() != nullptr));
    if (fb.metadata() != nullptr) {
        assert_same(*fa.consumer_metadata, expected_of(*fb.metadata()));
    }
    const bool common =
        damage > 2 && !with_ack_set && mc.common && consumer < (std::uint64_t{1} << 63) &&
        id.ledger_id < (std::uint64_t{1} << 63) && id.entry_id < (std::uint64_t{1} << 63);
    if (common) {
        RC_ASSERT(!fa.has_command());         // the command was scanned
        RC_ASSERT(fa.metadata() == nullptr);  // and so was the metadata
    }
}

TEST(MessageScan, ConsumerMetadataReadsEveryExposedField) {
    pb::MessageMetadata md;
    md.set_producer_name("producer-with-a-long-name");
    md.set_sequence_id(7);
    md.set_publish_time(1700000000000);
    md.set_event_time(1600000000000);
    md.set_partition_key("key");
    md.set_ordering_key("ord");
    md.set_compression(pb::ZSTD);
    md.set_uncompressed_size(1000);
    md.set_num_messages_in_batch(3);
    auto* kv = md.add_properties();
    kv->set_key("a");
    kv->set_value("1");
    kv = md.add_properties();
    kv->set_key("b");
    kv->set_value("2");
    const auto bytes = to_bytes(md.SerializeAsString());
    std::vector<property_view> props;
    const auto c = scan_consumer_metadata(bytes, props);
    ASSERT_TRUE(c);
    EXPECT_EQ(c->producer_name, "producer-with-a-long-name");
    EXPECT_EQ(c->sequence_id, 7U);
    EXPECT_EQ(c->publish_time, 1700000000000U);
    EXPECT_TRUE(c->has_event_time);
    EXPECT_EQ(c->event_time, 1600000000000U);
    EXPECT_TRUE(c->has_partition_key);
    EXPECT_EQ(c->partition_key, "key");
    EXPECT_TRUE(c->has_ordering_key);
    EXPECT_EQ(c->ordering_key, "ord");
    EXPECT_EQ(c->compression, pb::ZSTD);
    EXPECT_EQ(c->uncompressed_size, 1000U);
    EXPECT_TRUE(c->has_num_messages_in_batch);
    EXPECT_EQ(c->num_messages_in_batch, 3);
    ASSERT_EQ(c->properties.size(), 2U);
    EXPECT_EQ(c->properties[1].key, "b");
    EXPECT_EQ(c->properties[1].value, "2");
    // Encryption keys: declined (the generic parse takes them).
    md.add_encryption_keys()->set_key("k");
    EXPECT_FALSE(scan_consumer_metadata(to_bytes(md.SerializePartialAsString()), props));
}

// ---- the consumer's ACK (command_writer::ack's direct encoding) ----

// For any ids (plain, or with batch fields that take the generic path), ack type, request id,
// validation error and peer version, appended after existing bytes: ack() writes byte for byte
// what ack_generic() writes, or fails the same way; and the frame decodes to what was asked.
RC_GTEST_PROP(MessageScan, DirectAckIsByteIdenticalToGeneric, ()) {
    const auto n = *rc::gen::oneOf(rc::gen::inRange<std::size_t>(0, 4),
                                   rc::gen::inRange<std::size_t>(0, 1200));
    std::vector<message_id> ids(n);
    const std::int64_t words[] = {3};
    for (auto& id : ids) {
        id.ledger_id = *gen_u64();
        id.entry_id = *gen_u64();
        id.partition = *rc::gen::oneOf(rc::gen::just(-1), rc::gen::inRange(-3, 200),
                                       rc::gen::arbitrary<std::int32_t>());
        if (*rc::gen::inRange(0, 20) == 0) {
            id.batch_index = *rc::gen::inRange(0, 10);
            id.batch_size = *rc::gen::inRange(0, 12);
        }
        if (*rc::gen::inRange(0, 40) == 0) {
            id.ack_set = words;
        }
    }
    ack_args a;
    a.consumer_id = *gen_u64();
    a.cumulative = *rc::gen::inRange(0, 4) == 0;
    a.ids = ids;
    if (*rc::gen::arbitrary<bool>()) {
        a.request_id = *gen_u64();
    }
    if (*rc::gen::inRange(0, 10) == 0) {
        a.validation_error = *rc::gen::inRange(-1, 6);
    }
    command_writer w;
    w.set_peer_protocol_version(*rc::gen::element(1, 11, 12, 16, 17, 20));
    if (*rc::gen::inRange(0, 10) == 0) {
        w.options().max_frame_size = *rc::gen::inRange<std::uint32_t>(8, 4000);
    }
    const auto prefix = *rc::gen::inRange<std::size_t>(0, 40);
    frame_buffer direct(prefix, std::byte{0x5a});
    frame_buffer generic(prefix, std::byte{0x5a});
    const auto x = w.ack(direct, a);
    const auto y = w.ack_generic(generic, a);
    RC_ASSERT(x.has_value() == y.has_value());
    if (!x) {
        RC_ASSERT(x.error() == y.error());
        return;
    }
    RC_ASSERT(*x == *y);
    RC_ASSERT(std::vector<std::byte>(direct.begin(), direct.end()) ==
              std::vector<std::byte>(generic.begin(), generic.end()));
    frame_decoder d;
    const auto r =
        d.decode(std::span<const std::byte>(direct.data() + prefix, direct.size() - prefix));
    RC_ASSERT(r && r->complete);
    RC_ASSERT(r->frame.type() == command_type::ack);
    const auto& c = r->frame.command().ack();
    RC_ASSERT(c.consumer_id() == a.consumer_id);
    RC_ASSERT(c.ack_type() ==
              (a.cumulative ? pb::CommandAck::Cumulative : pb::CommandAck::Individual));
    RC_ASSERT(static_cast<std::size_t>(c.message_id_size()) == ids.size());
    for (std::size_t i = 0; i < ids.size(); ++i) {
        RC_ASSERT(c.message_id(static_cast<int>(i)).ledgerid() == ids[i].ledger_id);
        RC_ASSERT(c.message_id(static_cast<int>(i)).entryid() == ids[i].entry_id);
        RC_ASSERT(c.message_id(static_cast<int>(i)).partition() == ids[i].partition);
    }
    RC_ASSERT(c.has_request_id() == a.request_id.has_value());
    if (a.request_id) {
        RC_ASSERT(c.request_id() == *a.request_id);
    }
}

}  // namespace
}  // namespace nereus::proto
