// rapidcheck properties: arbitrary commands/metadata/payloads round-trip through the encoder
// and decoder, for any split of the byte stream; any single-byte corruption of a frame yields
// either a typed error or a frame (never a crash, never a frame of the wrong size).

#include "nereus/proto/commands.h"
#include "nereus/proto/errc.h"
#include "nereus/proto/frame_decoder.h"
#include "nereus/proto/pulsar_api.h"

#include "support/bytes.h"
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

namespace nereus::proto {
namespace {

struct sent_message {
    std::uint64_t producer_id;
    std::uint64_t sequence_id;
    std::string producer_name;
    std::uint64_t publish_time;
    std::vector<std::pair<std::string, std::string>> properties;
    std::string payload;
    bool checksum;
};

rc::Gen<sent_message> gen_message() {
    return rc::gen::build<sent_message>(
        rc::gen::set(&sent_message::producer_id, rc::gen::arbitrary<std::uint64_t>()),
        rc::gen::set(&sent_message::sequence_id, rc::gen::arbitrary<std::uint64_t>()),
        rc::gen::set(&sent_message::producer_name, rc::gen::arbitrary<std::string>()),
        rc::gen::set(&sent_message::publish_time, rc::gen::arbitrary<std::uint64_t>()),
        rc::gen::set(&sent_message::properties,
                     rc::gen::container<std::vector<std::pair<std::string, std::string>>>(
                         rc::gen::arbitrary<std::pair<std::string, std::string>>())),
        rc::gen::set(&sent_message::payload, rc::gen::arbitrary<std::string>()),
        rc::gen::set(&sent_message::checksum, rc::gen::arbitrary<bool>()));
}

void append(frame_buffer& out, command_writer& w, const sent_message& m) {
    pb::MessageMetadata md;
    md.set_producer_name(m.producer_name);
    md.set_sequence_id(m.sequence_id);
    md.set_publish_time(m.publish_time);
    for (const auto& [k, v] : m.properties) {
        auto* kv = md.add_properties();
        kv->set_key(k);
        kv->set_value(v);
    }
    w.set_peer_protocol_version(m.checksum ? 20 : 5);
    RC_ASSERT(w.send(out, {.producer_id = m.producer_id, .sequence_id = m.sequence_id}, md,
                     test::bytes_of(m.payload))
                  .has_value());
}

RC_GTEST_PROP(FrameProperties, SendRoundTripsUnderAnySplit, ()) {
    const auto messages = *rc::gen::container<std::vector<sent_message>>(gen_message());
    command_writer w;
    frame_buffer stream;
    for (const auto& m : messages) {
        append(stream, w, m);
    }
    // Random chunk sizes.
    const auto chunks =
        *rc::gen::container<std::vector<std::size_t>>(rc::gen::inRange<std::size_t>(1, 97));
    frame_decoder d;
    std::vector<std::byte> buffer;
    std::size_t pos = 0;
    std::size_t next = 0;
    std::size_t chunk_index = 0;
    while (next < messages.size()) {
        const std::size_t n =
            chunks.empty() ? stream.size() : chunks[chunk_index++ % chunks.size()];
        const std::size_t take = std::min(n, stream.size() - pos);
        RC_ASSERT(take > 0 || next == messages.size());
        buffer.insert(buffer.end(), stream.begin() + static_cast<std::ptrdiff_t>(pos),
                      stream.begin() + static_cast<std::ptrdiff_t>(pos + take));
        pos += take;
        for (;;) {
            auto r = d.decode(buffer);
            RC_ASSERT(r.has_value());
            if (!r->complete) {
                RC_ASSERT(r->bytes_needed > buffer.size());
                break;
            }
            const auto& f = r->frame;
            const auto& m = messages[next++];
            RC_ASSERT(f.type() == command_type::send);
            RC_ASSERT(!f.message_error);
            RC_ASSERT(f.checksum == (m.checksum ? checksum_state::valid : checksum_state::absent));
            RC_ASSERT(f.command().send().producer_id() == m.producer_id);
            RC_ASSERT(f.command().send().sequence_id() == m.sequence_id);
            RC_ASSERT(f.metadata() != nullptr);
            RC_ASSERT(f.metadata()->producer_name() == m.producer_name);
            RC_ASSERT(f.metadata()->publish_time() == m.publish_time);
            RC_ASSERT(f.metadata()->properties_size() == static_cast<int>(m.properties.size()));
            RC_ASSERT(test::string_of(f.payload) == m.payload);
            buffer.erase(buffer.begin(), buffer.begin() + static_cast<std::ptrdiff_t>(f.size));
        }
    }
    RC_ASSERT(buffer.empty());
}

RC_GTEST_PROP(FrameProperties, StoredEntryRedeliveredAsMessageIsIdentical, ()) {
    const auto m = *gen_message();
    command_writer w;
    frame_buffer send;
    append(send, w, m);
    frame_decoder d;
    auto r = d.decode(send);
    RC_ASSERT(r && r->complete);
    const std::vector<std::byte> stored(r->frame.headers_and_payload.begin(),
                                        r->frame.headers_and_payload.end());
    const auto ledger = *rc::gen::arbitrary<std::uint64_t>();
    const auto entry = *rc::gen::arbitrary<std::uint64_t>();
    w.set_peer_protocol_version(20);
    frame_buffer message;
    RC_ASSERT(
        w.message(message, 3, {.ledger_id = ledger, .entry_id = entry}, 0, {}, stored).has_value());
    auto back = d.decode(message);
    RC_ASSERT(back && back->complete);
    const auto& f = back->frame;
    RC_ASSERT(f.type() == command_type::message);
    RC_ASSERT(f.checksum == checksum_state::valid);  // added when the producer sent none
    RC_ASSERT(f.command().message().message_id().ledgerid() == ledger);
    RC_ASSERT(f.command().message().message_id().entryid() == entry);
    RC_ASSERT(test::string_of(f.payload) == m.payload);
    RC_ASSERT(f.metadata()->producer_name() == m.producer_name);
}

RC_GTEST_PROP(FrameProperties, AnySingleByteCorruptionIsTypedOrSized, ()) {
    const auto m = *gen_message();
    command_writer w;
    frame_buffer frame;
    append(frame, w, m);
    frame_decoder d;
    // Where the CRC coverage starts in the intact frame.
    std::size_t covered_from = frame.size();
    {
        auto intact = d.decode(frame);
        RC_ASSERT(intact && intact->complete);
        if (m.checksum) {
            covered_from =
                static_cast<std::size_t>(intact->frame.checksummed.data() - frame.data());
        }
    }
    const auto at = *rc::gen::inRange<std::size_t>(0, frame.size());
    const auto flip = *rc::gen::inRange<int>(1, 256);
    frame[at] ^= static_cast<std::byte>(flip);
    auto r = d.decode(frame);
    if (!r) {
        RC_ASSERT(r.error().category() == proto_category());
        return;
    }
    if (!r->complete) {
        RC_ASSERT(at < 4);  // the size field grew
        return;
    }
    RC_ASSERT(r->frame.size <= frame.size());
    // Any corruption inside the CRC coverage of an intact frame is caught by the CRC.
    if (at >= covered_from) {
        RC_ASSERT(r->frame.message_error == errc::checksum_mismatch);
        RC_ASSERT(r->frame.metadata() == nullptr);
    }
}

// SEND_RECEIPT is encoded directly (no protobuf objects, one per produced message); its bytes
// must be exactly the generic path's, for every value width and partition (incl. negative).
RC_GTEST_PROP(FrameProperties, DirectSendReceiptIsByteIdenticalToGeneric, ()) {
    const auto u64 = [] {
        return *rc::gen::oneOf(
            rc::gen::arbitrary<std::uint64_t>(), rc::gen::inRange<std::uint64_t>(0, 300),
            rc::gen::element<std::uint64_t>(127, 128, 16383, 16384, ~std::uint64_t{0}));
    };
    const std::uint64_t producer = u64();
    const std::uint64_t sequence = u64();
    const std::uint64_t highest = u64();
    message_id id;
    id.ledger_id = u64();
    id.entry_id = u64();
    id.partition = *rc::gen::oneOf(rc::gen::just(-1), rc::gen::arbitrary<std::int32_t>(),
                                   rc::gen::inRange(-2, 200));
    command_writer w;
    frame_buffer direct;
    frame_buffer generic;
    const auto a = w.send_receipt(direct, producer, sequence, highest, id);
    const auto b = w.send_receipt_generic(generic, producer, sequence, highest, id);
    RC_ASSERT(a.has_value());
    RC_ASSERT(b.has_value());
    RC_ASSERT(*a == *b);
    RC_ASSERT(std::vector<std::byte>(direct.begin(), direct.end()) ==
              std::vector<std::byte>(generic.begin(), generic.end()));
    // And it decodes to what was asked.
    frame_decoder d;
    const auto step = d.decode(std::span<const std::byte>(direct.data(), direct.size()));
    RC_ASSERT(step.has_value() && step->complete);
    const auto& r = step->frame.command().send_receipt();
    RC_ASSERT(r.producer_id() == producer);
    RC_ASSERT(r.sequence_id() == sequence);
    RC_ASSERT(r.highest_sequence_id() == highest);
    RC_ASSERT(r.message_id().ledgerid() == id.ledger_id);
    RC_ASSERT(r.message_id().entryid() == id.entry_id);
    RC_ASSERT(r.message_id().partition() == id.partition);
}

// Appended after existing bytes (the broker coalesces receipts into one buffer).
TEST(FrameProperties, DirectSendReceiptAppendsToAFilledBuffer) {
    command_writer w;
    frame_buffer direct;
    frame_buffer generic;
    for (std::uint64_t i = 0; i < 300; ++i) {
        const message_id id{.ledger_id = 7, .entry_id = i * 1000, .partition = i % 3 == 0 ? -1 : 2};
        ASSERT_TRUE(w.send_receipt(direct, 1, i, i, id));
        ASSERT_TRUE(w.send_receipt_generic(generic, 1, i, i, id));
    }
    EXPECT_TRUE(std::equal(direct.begin(), direct.end(), generic.begin(), generic.end()));
}

}  // namespace
}  // namespace nereus::proto

namespace nereus::proto {
namespace {

// The broker's MESSAGE (one per delivered entry) is encoded directly; it must be byte for byte
// what the generic protobuf path writes, for any ids, redelivery count, peer version (checksum
// kept, added or stripped) and stored entry (with or without its 0x0e01 section), appended
// after existing bytes, and decode to what was asked.
RC_GTEST_PROP(FrameProperties, DirectMessageIsByteIdenticalToGeneric, ()) {
    const auto m = *gen_message();
    command_writer producer;
    frame_buffer send;
    append(send, producer, m);
    frame_decoder d;
    auto r = d.decode(send);
    RC_ASSERT(r && r->complete);
    const std::vector<std::byte> stored(r->frame.headers_and_payload.begin(),
                                        r->frame.headers_and_payload.end());
    const auto u64 = [] {
        return *rc::gen::oneOf(
            rc::gen::arbitrary<std::uint64_t>(), rc::gen::inRange<std::uint64_t>(0, 300),
            rc::gen::element<std::uint64_t>(127, 128, 16383, 16384, ~std::uint64_t{0}));
    };
    const std::uint64_t consumer = u64();
    message_id id;
    id.ledger_id = u64();
    id.entry_id = u64();
    id.partition = *rc::gen::oneOf(rc::gen::just(-1), rc::gen::arbitrary<std::int32_t>(),
                                   rc::gen::inRange(-2, 200));
    const auto redelivery =
        *rc::gen::oneOf(rc::gen::just(std::uint32_t{0}), rc::gen::arbitrary<std::uint32_t>(),
                        rc::gen::inRange<std::uint32_t>(0, 300));
    const auto prefix = *rc::gen::inRange<std::size_t>(0, 40);
    command_writer w;
    w.set_peer_protocol_version(*rc::gen::element(5, 10, 11, 20));
    frame_buffer direct(prefix, std::byte{0x5a});
    frame_buffer generic(prefix, std::byte{0x5a});
    const auto a = w.message(direct, consumer, id, redelivery, {}, stored);
    const auto b = w.message_generic(generic, consumer, id, redelivery, {}, stored);
    RC_ASSERT(a.has_value());
    RC_ASSERT(b.has_value());
    RC_ASSERT(*a == *b);
    RC_ASSERT(std::vector<std::byte>(direct.begin(), direct.end()) ==
              std::vector<std::byte>(generic.begin(), generic.end()));
    auto back =
        d.decode(std::span<const std::byte>(direct.data() + prefix, direct.size() - prefix));
    RC_ASSERT(back && back->complete);
    const auto& f = back->frame;
    RC_ASSERT(f.type() == command_type::message);
    RC_ASSERT(f.command().message().consumer_id() == consumer);
    RC_ASSERT(f.command().message().message_id().ledgerid() == id.ledger_id);
    RC_ASSERT(f.command().message().message_id().entryid() == id.entry_id);
    RC_ASSERT(f.command().message().message_id().partition() == id.partition);
    RC_ASSERT(f.command().message().redelivery_count() == redelivery);
    RC_ASSERT(test::string_of(f.payload) == m.payload);
}

// With an ack_set the generic path is taken; both still agree.
TEST(FrameProperties, MessageWithAckSetTakesTheGenericPath) {
    command_writer producer;
    frame_buffer send;
    pb::MessageMetadata md;
    md.set_producer_name("p");
    md.set_sequence_id(1);
    md.set_publish_time(2);
    ASSERT_TRUE(producer.send(send, {.producer_id = 1, .sequence_id = 1}, md,
                              test::bytes_of(std::string("hello"))));
    frame_decoder d;
    auto r = d.decode(send);
    ASSERT_TRUE(r && r->complete);
    const std::vector<std::byte> stored(r->frame.headers_and_payload.begin(),
                                        r->frame.headers_and_payload.end());
    command_writer w;
    const std::int64_t words[] = {5};
    frame_buffer a;
    frame_buffer b;
    ASSERT_TRUE(w.message(a, 9, {.ledger_id = 1, .entry_id = 2}, 3, words, stored));
    ASSERT_TRUE(w.message_generic(b, 9, {.ledger_id = 1, .entry_id = 2}, 3, words, stored));
    EXPECT_TRUE(std::equal(a.begin(), a.end(), b.begin(), b.end()));
}

}  // namespace
}  // namespace nereus::proto
