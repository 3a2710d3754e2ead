// Incremental decoding (byte by byte, random splits, every truncation), corruption of each
// framing field with its typed error, oversized frames, unknown command types.

#include "nereus/proto/frame_decoder.h"

#include "nereus/base/crc32c.h"
#include "nereus/proto/commands.h"
#include "nereus/proto/errc.h"
#include "nereus/proto/pulsar_api.h"

#include <gtest/gtest.h>

#include "support/bytes.h"
#include <random>

namespace nereus::proto {
namespace {

using test::hex;

pb::MessageMetadata make_metadata(std::uint64_t seq) {
    pb::MessageMetadata md;
    md.set_producer_name("producer-1");
    md.set_sequence_id(seq);
    md.set_publish_time(1700000000000 + seq);
    auto* kv = md.add_properties();
    kv->set_key("k");
    kv->set_value("v");
    return md;
}

// A stream of mixed frames: simple commands and SENDs with payloads.
frame_buffer make_stream(int n) {
    command_writer w;
    frame_buffer out;
    for (int i = 0; i < n; ++i) {
        switch (i % 4) {
            case 0:
                EXPECT_TRUE(w.ping(out));
                break;
            case 1:
                EXPECT_TRUE(w.flow(out, static_cast<std::uint64_t>(i), 1000));
                break;
            case 2: {
                const std::string payload(static_cast<std::size_t>(i * 7), 'x');
                EXPECT_TRUE(w.send(out, {.producer_id = 1, .sequence_id = std::uint64_t(i)},
                                   make_metadata(static_cast<std::uint64_t>(i)),
                                   test::bytes_of(payload)));
                break;
            }
            default:
                EXPECT_TRUE(w.lookup_connect(out, static_cast<std::uint64_t>(i),
                                             "pulsar://127.0.0.1:6650"));
        }
    }
    return out;
}

struct decoded_summary {
    std::int32_t type;
    std::uint64_t id;
    std::string payload;
    bool operator==(const decoded_summary&) const = default;
};

decoded_summary summarize(const frame_view& f) {
    decoded_summary s{f.raw_type, 0, test::string_of(f.payload)};
    switch (f.type()) {
        case command_type::flow:
            s.id = f.command().flow().consumer_id();
            break;
        case command_type::send:
            s.id = f.command().send().sequence_id();
            break;
        case command_type::lookup_response:
            s.id = f.command().lookuptopicresponse().request_id();
            break;
        default:
            break;
    }
    return s;
}

// Feeds `stream` to a decoder in chunks given by `next_chunk`, the way a read loop does.
template <class NextChunk>
std::vector<decoded_summary> feed(const frame_buffer& stream, NextChunk next_chunk) {
    frame_decoder d;
    std::vector<std::byte> buffer;
    std::vector<decoded_summary> out;
    std::size_t pos = 0;
    while (pos < stream.size()) {
        const std::size_t n = std::min(next_chunk(), stream.size() - pos);
        buffer.insert(buffer.end(), stream.begin() + static_cast<std::ptrdiff_t>(pos),
                      stream.begin() + static_cast<std::ptrdiff_t>(pos + n));
        pos += n;
        for (;;) {
            auto r = d.decode(buffer);
            EXPECT_TRUE(r.has_value());
            if (!r || !r->complete) {
                if (r) {
                    EXPECT_GT(r->bytes_needed, buffer.size());
                }
                break;
            }
            EXPECT_FALSE(r->frame.message_error);
            out.push_back(summarize(r->frame));
            buffer.erase(buffer.begin(),
                         buffer.begin() + static_cast<std::ptrdiff_t>(r->frame.size));
        }
    }
    EXPECT_TRUE(buffer.empty());
    return out;
}

TEST(FrameDecoder, WholeBufferByteByByteAndRandomSplitsAgree) {
    const frame_buffer stream = make_stream(40);
    const auto whole = feed(stream, [&] { return stream.size(); });
    ASSERT_EQ(whole.size(), 40u);
    EXPECT_EQ(feed(stream, [] { return std::size_t{1}; }), whole);
    std::mt19937 rng(42);
    for (int round = 0; round < 20; ++round) {
        std::uniform_int_distribution<std::size_t> dist(1, 64);
        EXPECT_EQ(feed(stream, [&] { return dist(rng); }), whole);
    }
}

TEST(FrameDecoder, EveryTruncationAsksForMoreAndNeverFails) {
    command_writer w;
    frame_buffer frame;
    ASSERT_TRUE(w.send(frame, {.producer_id = 7, .sequence_id = 9}, make_metadata(9),
                       test::bytes_of("payload")));
    frame_decoder d;
    for (std::size_t n = 0; n < frame.size(); ++n) {
        auto r = d.decode(std::span(frame).first(n));
        ASSERT_TRUE(r.has_value()) << n;
        EXPECT_FALSE(r->complete) << n;
        EXPECT_EQ(r->bytes_needed, n < 4 ? 4 : frame.size()) << n;
    }
    const frame_view f = test::decode_one(d, frame);
    EXPECT_EQ(f.command().send().sequence_id(), 9u);
}

TEST(FrameDecoder, OversizedFrameRejectedFromItsSizeField) {
    frame_decoder d({.max_frame_size = 1024});
    // totalSize 1021 → 1025 bytes on the wire: refused before the body arrives.
    auto r = d.decode(hex("00 00 03 fd"));
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error(), errc::frame_too_large);
    // 1020 → exactly 1024: accepted (asks for more).
    r = d.decode(hex("00 00 03 fc"));
    ASSERT_TRUE(r);
    EXPECT_FALSE(r->complete);
    EXPECT_EQ(r->bytes_needed, 1024u);
    // The default limit is 5 MiB + 10 KiB; 0xffffffff never overflows the check.
    frame_decoder def;
    r = def.decode(hex("ff ff ff ff"));
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error(), errc::frame_too_large);
    EXPECT_EQ(def.options().max_frame_size, 5u * 1024 * 1024 + 10 * 1024);
}

TEST(FrameDecoder, CorruptSizesGiveTypedErrors) {
    frame_decoder d;
    // totalSize < 4.
    auto r = d.decode(hex("00 00 00 03 00 00 00"));
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error(), errc::frame_too_small);
    // commandSize larger than the frame.
    r = d.decode(hex("00 00 00 09 00 00 00 06 08 12 92 01 00"));
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error(), errc::bad_command_size);
    // commandSize 0.
    r = d.decode(hex("00 00 00 04 00 00 00 00"));
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error(), errc::bad_command_size);
    // Garbage protobuf (truncated length-delimited field).
    r = d.decode(hex("00 00 00 07 00 00 00 03 08 12 92"));
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error(), errc::bad_command);
    // A command without `type`.
    r = d.decode(hex("00 00 00 07 00 00 00 03 92 01 00"));
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error(), errc::bad_command);
    // A known type without its sub-message (SUCCESS without field 13).
    r = d.decode(hex("00 00 00 06 00 00 00 02 08 0d"));
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error(), errc::missing_command_body);
}

TEST(FrameDecoder, UnknownCommandTypeIsReportedNotFatal) {
    frame_decoder d;
    // TOPIC_MIGRATED (68) with a body field we do not describe, then a PING.
    auto wire = hex("00 00 00 0b 00 00 00 07 08 44 a2 04 02 08 01");
    const auto ping = hex("00 00 00 09 00 00 00 05 08 12 92 01 00");
    wire.insert(wire.end(), ping.begin(), ping.end());
    auto r = d.decode(wire);
    ASSERT_TRUE(r);
    ASSERT_TRUE(r->complete);
    EXPECT_FALSE(r->frame.known_type);
    EXPECT_EQ(r->frame.raw_type, 68);
    EXPECT_EQ(r->frame.size, 15u);
    r = d.decode(std::span(wire).subspan(15));
    ASSERT_TRUE(r && r->complete);
    EXPECT_EQ(r->frame.type(), command_type::ping);
    // Type 200 (no body at all).
    r = d.decode(hex("00 00 00 07 00 00 00 03 08 c8 01"));
    ASSERT_TRUE(r && r->complete);
    EXPECT_FALSE(r->frame.known_type);
    EXPECT_EQ(r->frame.raw_type, 200);
}

TEST(FrameDecoder, UnknownFieldsAndMissingRequiredFieldsAreTolerated) {
    // SUBSCRIBE without `subscription` (pulsar-flex may omit it) and with an unknown field 99.
    pb::BaseCommand cmd;
    reset_command(cmd, command_type::subscribe);
    auto* s = cmd.mutable_subscribe();
    s->set_topic("t");
    s->set_subtype(pb::CommandSubscribe::Shared);
    s->set_consumer_id(1);
    s->set_request_id(2);
    std::string body = cmd.SerializePartialAsString();
    body += std::string("\x98\x06\x01", 3);  // field 99, varint 1
    frame_buffer wire(8);
    detail::store_be32(wire.data(), static_cast<std::uint32_t>(4 + body.size()));
    detail::store_be32(wire.data() + 4, static_cast<std::uint32_t>(body.size()));
    const auto b = test::bytes_of(body);
    wire.insert(wire.end(), b.begin(), b.end());
    frame_decoder d;
    const frame_view f = test::decode_one(d, wire);
    EXPECT_EQ(f.type(), command_type::subscribe);
    EXPECT_EQ(f.command().subscribe().topic(), "t");
    EXPECT_EQ(f.command().subscribe().subscription(), "");
    EXPECT_TRUE(f.command().subscribe().durable());  // default
    // ...but we refuse to SEND such a command (strict sending).
    frame_buffer out;
    auto sent = append_simple_frame(out, cmd);
    ASSERT_FALSE(sent);
    EXPECT_EQ(sent.error(), errc::missing_required_field);
    EXPECT_TRUE(out.empty());
}

// A SEND frame with a payload section, parts spelled out so tests can corrupt each one.
frame_buffer send_frame(bool with_checksum) {
    command_writer w(encode_options{.peer_protocol_version = with_checksum ? 20 : 5});
    frame_buffer out;
    EXPECT_TRUE(w.send(out, {.producer_id = 1, .sequence_id = 5}, make_metadata(5),
                       test::bytes_of("hello")));
    return out;
}

std::size_t section_offset(const frame_buffer& f) {
    return 8 + detail::load_be32(f.data() + 4);
}

TEST(FrameDecoder, ChecksumMismatchIsPerMessage) {
    frame_buffer f = send_frame(true);
    f.back() ^= std::byte{0x01};  // corrupt the payload
    frame_decoder d;
    const frame_view v = test::decode_one(d, f);
    EXPECT_EQ(v.type(), command_type::send);
    EXPECT_EQ(v.command().send().sequence_id(), 5u);  // enough to answer SEND_ERROR
    EXPECT_EQ(v.checksum, checksum_state::mismatch);
    EXPECT_EQ(v.message_error, errc::checksum_mismatch);
    EXPECT_EQ(v.metadata(), nullptr);
    // The stream stays usable: the next frame decodes.
    const auto ping = hex("00 00 00 09 00 00 00 05 08 12 92 01 00");
    EXPECT_EQ(test::decode_one(d, ping).type(), command_type::ping);
    // Corrupting the checksum field itself is the same per-message error.
    frame_buffer g = send_frame(true);
    g[section_offset(g) + 3] ^= std::byte{0x80};
    EXPECT_EQ(test::decode_one(d, g).message_error, errc::checksum_mismatch);
}

TEST(FrameDecoder, ChecksumNotVerifiedWhenDisabled) {
    frame_buffer f = send_frame(true);
    f.back() ^= std::byte{0x01};
    frame_decoder d({.verify_checksum = false});
    const frame_view v = test::decode_one(d, f);
    EXPECT_EQ(v.checksum, checksum_state::unchecked);
    EXPECT_FALSE(v.message_error);
}

TEST(FrameDecoder, SendWithoutChecksum) {
    const frame_buffer f = send_frame(false);
    frame_decoder d;
    const frame_view v = test::decode_one(d, f);
    EXPECT_EQ(v.checksum, checksum_state::absent);
    EXPECT_FALSE(v.message_error);
    EXPECT_EQ(test::string_of(v.payload), "hello");
    EXPECT_EQ(v.headers_and_payload.data(), v.checksummed.data());
}

TEST(FrameDecoder, CorruptPayloadSectionGivesTypedMessageErrors) {
    frame_decoder d;
    {  // Unknown magic 0x0e07.
        frame_buffer f = send_frame(true);
        f[section_offset(f) + 1] = std::byte{0x07};
        EXPECT_EQ(test::decode_one(d, f).message_error, errc::bad_magic);
    }
    {  // metadataSize past the end (no checksum so the CRC does not catch it first).
        frame_buffer f = send_frame(false);
        f[section_offset(f) + 2] = std::byte{0x7f};
        EXPECT_EQ(test::decode_one(d, f).message_error, errc::bad_metadata_size);
    }
    {  // Unparsable metadata.
        frame_buffer f = send_frame(false);
        f[section_offset(f) + 4] = std::byte{0xff};
        EXPECT_EQ(test::decode_one(d, f).message_error, errc::bad_metadata);
    }
    {  // 0x0e02 from a client on SEND.
        frame_buffer f = send_frame(true);
        f[section_offset(f) + 1] = std::byte{0x02};
        EXPECT_EQ(test::decode_one(d, f).message_error, errc::bad_magic);
    }
    {  // SEND without any payload section.
        command_writer w;
        frame_buffer f;
        auto& cmd = w.scratch(command_type::send);
        cmd.mutable_send()->set_producer_id(1);
        cmd.mutable_send()->set_sequence_id(2);
        ASSERT_TRUE(w.write_scratch(f));
        const frame_view v = test::decode_one(d, f);
        EXPECT_EQ(v.message_error, errc::missing_metadata);
        EXPECT_FALSE(v.has_payload_section);
    }
    {  // Magic cut off by the frame end: rebuild the frame with only "0e 01 aa".
        frame_buffer f = send_frame(true);
        const std::size_t off = section_offset(f);
        f.resize(off + 3);
        detail::store_be32(f.data(), static_cast<std::uint32_t>(f.size() - 4));
        EXPECT_EQ(test::decode_one(d, f).message_error, errc::truncated_section);
    }
}

TEST(FrameDecoder, BrokerEntryMetadataOnMessage) {
    pb::BrokerEntryMetadata bem;
    bem.set_broker_timestamp(123);
    bem.set_index(7);
    frame_buffer stored;
    ASSERT_TRUE(append_headers_and_payload(stored, make_metadata(1), test::bytes_of("m")));
    command_writer w;
    auto& cmd = w.scratch(command_type::message);
    cmd.mutable_message()->set_consumer_id(4);
    cmd.mutable_message()->mutable_message_id()->set_ledgerid(1);
    cmd.mutable_message()->mutable_message_id()->set_entryid(2);
    frame_buffer out;
    ASSERT_TRUE(append_stored_payload_frame(out, cmd, stored, {.broker_entry_metadata = &bem}));
    frame_decoder d;
    const frame_view v = test::decode_one(d, out);
    EXPECT_FALSE(v.message_error);
    EXPECT_EQ(v.checksum, checksum_state::valid);
    pb::BrokerEntryMetadata back;
    ASSERT_TRUE(back.ParseFromArray(v.broker_entry_metadata.data(),
                                    static_cast<int>(v.broker_entry_metadata.size())));
    EXPECT_EQ(back.broker_timestamp(), 123u);
    EXPECT_EQ(back.index(), 7u);
    EXPECT_EQ(test::string_of(v.payload), "m");
    EXPECT_EQ(test::to_hex(v.headers_and_payload), test::to_hex(stored));
}

TEST(FrameDecoder, TrailingBytesAfterSimpleCommandAreIgnored) {
    frame_decoder d;
    const frame_view v = test::decode_one(d, hex("00 00 00 0b 00 00 00 05 08 12 92 01 00 aa bb"));
    EXPECT_EQ(v.type(), command_type::ping);
    EXPECT_FALSE(v.has_payload_section);
}

TEST(FindVarintField, SkipsOtherWireTypes) {
    // field 2 len 1, field 3 fixed64, field 4 fixed32, then field 1 = 300.
    const auto b = hex("12 01 aa 19 00 00 00 00 00 00 00 00 25 00 00 00 00 08 ac 02");
    EXPECT_EQ(find_varint_field(b, 1), 300u);
    EXPECT_EQ(find_varint_field(b, 5), std::nullopt);
    EXPECT_EQ(find_varint_field(hex("08"), 1), std::nullopt);
}

}  // namespace
}  // namespace nereus::proto
