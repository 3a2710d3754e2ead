// The direct ACK scanner (ack_scan.h) against protobuf's parse, and the broker's decoder with
// fast_ack against the generic one: for arbitrary ACK commands (plain, or with the fields the
// scanner leaves to protobuf), intact, corrupted or cut short, the scanner either declines or
// reports exactly what protobuf's ParsePartial reads; the decoder's outcome is the same on
// both paths (error for error, byte-exact command bytes); and the ACKs this code base writes
// (command_writer::ack: nereus perf, the C++ client) take the fast path.

#include "nereus/proto/ack_scan.h"

#include "nereus/proto/commands.h"
#include "nereus/proto/frame_decoder.h"
#include "nereus/proto/frame_encoder.h"
#include "nereus/proto/pulsar_api.h"

#include <gtest/gtest.h>

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

struct ack_case {
    pb::BaseCommand cmd;
    bool plain = true;  // the shape the scanner reads: must be accepted
};

ack_case gen_ack() {
    ack_case c;
    c.cmd.set_type(pb::BaseCommand::ACK);
    auto* a = c.cmd.mutable_ack();
    const auto big = [&](std::uint64_t v) {
        if (v >= (std::uint64_t{1} << 63)) {
            c.plain = false;  // a 10-byte varint
        }
        return v;
    };
    a->set_consumer_id(big(*gen_u64()));
    a->set_ack_type(*rc::gen::element(pb::CommandAck::Individual, pb::CommandAck::Cumulative));
    const auto n = *rc::gen::oneOf(rc::gen::inRange(0, 4), rc::gen::inRange(0, 300));
    for (int i = 0; i < n; ++i) {
        auto* id = a->add_message_id();
        id->set_ledgerid(big(*gen_u64()));
        id->set_entryid(big(*gen_u64()));
        if (*rc::gen::arbitrary<bool>()) {
            const auto p = *rc::gen::oneOf(rc::gen::inRange(-1, 100), rc::gen::arbitrary<int>());
            id->set_partition(p);
            c.plain = c.plain && p >= 0;
        }
        switch (*rc::gen::inRange(0, 60)) {
            case 0:
                id->set_batch_index(*rc::gen::inRange(0, 10));
                c.plain = false;
                break;
            case 1:
                id->add_ack_set(*rc::gen::arbitrary<std::int64_t>());
                c.plain = false;
                break;
            case 2:
                id->set_batch_size(*rc::gen::inRange(0, 10));
                c.plain = false;
                break;
            case 3:
                id->mutable_first_chunk_message_id()->set_ledgerid(1);
                id->mutable_first_chunk_message_id()->set_entryid(2);
                c.plain = false;
                break;
            default:
                break;
        }
    }
    if (*rc::gen::arbitrary<bool>()) {
        a->set_request_id(big(*gen_u64()));
    }
    switch (*rc::gen::inRange(0, 16)) {
        case 0:
            a->set_validation_error(pb::CommandAck::ChecksumMismatch);
            c.plain = false;
            break;
        case 1:
            a->set_txnid_least_bits(*gen_u64());
            c.plain = false;
            break;
        case 2:
            a->set_txnid_most_bits(*gen_u64());
            c.plain = false;
            break;
        case 3: {
            auto* p = a->add_properties();
            p->set_key("k");
            p->set_value(1);
            c.plain = false;
            break;
        }
        default:
            break;
    }
    return c;
}

// The scanner's result equals what protobuf's parse of the same bytes holds.
void assert_same(const ack_fields& a, const pb::CommandAck& c) {
    RC_ASSERT(a.consumer_id == c.consumer_id());
    RC_ASSERT(a.cumulative == (c.ack_type() == pb::CommandAck::Cumulative));
    RC_ASSERT(a.has_request_id == c.has_request_id());
    RC_ASSERT(a.request_id == c.request_id());
    RC_ASSERT(a.ids.size() == static_cast<std::size_t>(c.message_id_size()));
    for (std::size_t i = 0; i < a.ids.size(); ++i) {
        const auto& m = c.message_id(static_cast<int>(i));
        RC_ASSERT(a.ids[i].ledger_id == m.ledgerid());
        RC_ASSERT(a.ids[i].entry_id == m.entryid());
        RC_ASSERT(a.ids[i].partition == m.partition());
        // What the scanner accepts carries none of the fields it does not report.
        RC_ASSERT(!m.has_batch_index() && m.ack_set_size() == 0 && !m.has_batch_size() &&
                  !m.has_first_chunk_message_id());
    }
    RC_ASSERT(!c.has_validation_error() && c.properties_size() == 0 && !c.has_txnid_least_bits() &&
              !c.has_txnid_most_bits());
}

// protobuf's reading of `b` as an ACK command, or nullopt when it rejects it or it is no ACK.
std::optional<pb::BaseCommand> generic(const std::vector<std::byte>& b) {
    pb::BaseCommand cmd;
    if (!cmd.ParsePartialFromArray(b.data(), static_cast<int>(b.size())) || !cmd.has_type() ||
        cmd.type() != pb::BaseCommand::ACK || !cmd.has_ack()) {
        return std::nullopt;
    }
    return cmd;
}

RC_GTEST_PROP(AckScan, MatchesGenericParse, ()) {
    const auto c = gen_ack();
    const auto bytes = to_bytes(c.cmd.SerializePartialAsString());
    std::vector<ack_entry> ids;
    const auto fast = scan_ack_command(bytes, ids);
    if (c.plain) {
        RC_ASSERT(fast.has_value());
    }
    if (fast) {
        const auto slow = generic(bytes);
        RC_ASSERT(slow.has_value());
        assert_same(*fast, slow->ack());
    }
}

RC_GTEST_PROP(AckScan, CorruptCommandNeverAcceptedWhereGenericRejects, ()) {
    const auto c = gen_ack();
    const auto bytes = corrupt(to_bytes(c.cmd.SerializePartialAsString()));
    std::vector<ack_entry> ids;
    if (const auto fast = scan_ack_command(bytes, ids)) {
        const auto slow = generic(bytes);
        RC_ASSERT(slow.has_value());
        assert_same(*fast, slow->ack());
    }
}

// A whole ACK frame through the broker's decoder (fast_send + fast_ack) and the generic one,
// intact, with a byte flipped or inserted, or cut short: the same outcome; a fast ACK's
// fields equal the generic parse's command.
RC_GTEST_PROP(AckScan, FastAckDecodeAgreesWithGeneric, ()) {
    const auto c = gen_ack();
    frame_buffer out;
    RC_ASSERT(append_simple_frame(out, c.cmd).has_value());
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
    frame_decoder fast_decoder(decoder_options{.fast_send = true, .fast_ack = true});
    frame_decoder slow_decoder(decoder_options{.fast_send = true});
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
    RC_ASSERT(fa.command_bytes.data() == fb.command_bytes.data());
    RC_ASSERT(fa.command_bytes.size() == fb.command_bytes.size());
    RC_ASSERT(fa.message_error == fb.message_error);
    RC_ASSERT(!fb.ack.has_value());
    if (fa.ack) {
        RC_ASSERT(!fa.has_command());
        RC_ASSERT(fb.type() == command_type::ack);
        assert_same(*fa.ack, fb.command().ack());
    } else {
        RC_ASSERT(fa.has_command() == fb.has_command());
    }
    if (damage > 2 && c.plain) {
        RC_ASSERT(fa.ack.has_value());  // a plain ACK takes the fast path
    }
}

// What command_writer::ack writes for plain ids (nereus perf, the C++ client) is scanned; ids
// with batch fields go to protobuf.
TEST(AckScan, PlainAcksOfTheWriterAreScanned) {
    command_writer w;
    w.set_peer_protocol_version(20);
    std::vector<message_id> ids;
    for (std::uint64_t i = 0; i < 1000; ++i) {
        ids.push_back({.ledger_id = 7, .entry_id = 1000 + i});
    }
    ids[3].partition = 2;
    frame_buffer out;
    ASSERT_TRUE(w.ack(out, {.consumer_id = 9, .cumulative = false, .ids = ids, .request_id = 5}));
    frame_decoder d(decoder_options{.fast_ack = true});
    auto r = d.decode(out);
    ASSERT_TRUE(r && r->complete);
    ASSERT_TRUE(r->frame.ack);
    EXPECT_FALSE(r->frame.has_command());
    EXPECT_EQ(r->frame.type(), command_type::ack);
    const auto& a = *r->frame.ack;
    EXPECT_EQ(a.consumer_id, 9U);
    EXPECT_FALSE(a.cumulative);
    EXPECT_TRUE(a.has_request_id);
    EXPECT_EQ(a.request_id, 5U);
    ASSERT_EQ(a.ids.size(), 1000U);
    EXPECT_EQ(a.ids[999].entry_id, 1999U);
    EXPECT_EQ(a.ids[3].partition, 2);
    EXPECT_EQ(a.ids[4].partition, -1);

    frame_buffer cumulative;
    ASSERT_TRUE(w.ack(cumulative, {.consumer_id = 1, .cumulative = true, .ids = {&ids[0], 1}}));
    r = d.decode(cumulative);
    ASSERT_TRUE(r && r->complete && r->frame.ack);
    EXPECT_TRUE(r->frame.ack->cumulative);
    EXPECT_FALSE(r->frame.ack->has_request_id);

    const std::int64_t words[] = {6};
    ids[0].batch_index = 1;
    ids[0].batch_size = 3;
    ids[0].ack_set = words;
    frame_buffer batched;
    ASSERT_TRUE(w.ack(batched, {.consumer_id = 1, .ids = {&ids[0], 1}, .request_id = 2}));
    r = d.decode(batched);
    ASSERT_TRUE(r && r->complete);
    EXPECT_FALSE(r->frame.ack);
    ASSERT_TRUE(r->frame.has_command());
    EXPECT_EQ(r->frame.command().ack().message_id(0).ack_set(0), 6);
}

}  // namespace
}  // namespace nereus::proto
