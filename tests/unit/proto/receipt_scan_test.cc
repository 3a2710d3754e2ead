// The direct SEND_RECEIPT scanner (send_scan.h, decoder_options::fast_send_receipt) against the
// generic parse: for receipts of any field values and id shapes (partition, batch index, ack
// set, batch size), intact or with one byte corrupted, and for any BaseCommand bytes, the fast
// decoder reports what the generic one does (or declines and lets it decide); the broker's
// receipts take the fast path.

#include "nereus/proto/commands.h"
#include "nereus/proto/errc.h"
#include "nereus/proto/frame_decoder.h"
#include "nereus/proto/pulsar_api.h"
#include "nereus/proto/send_scan.h"

#include <gtest/gtest.h>

#include "support/bytes.h"
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>
#include <vector>

namespace nereus::proto {
namespace {

std::uint64_t gen_u64() {
    return *rc::gen::oneOf(rc::gen::arbitrary<std::uint64_t>(),
                           rc::gen::inRange<std::uint64_t>(0, 300),
                           rc::gen::element<std::uint64_t>(
                               0, 127, 128, 16384, std::uint64_t{1} << 63, ~std::uint64_t{0}));
}

void assert_same(const send_receipt_fields& a, const send_receipt_fields& b) {
    RC_ASSERT(a.producer_id == b.producer_id);
    RC_ASSERT(a.sequence_id == b.sequence_id);
    RC_ASSERT(a.highest_sequence_id == b.highest_sequence_id);
    RC_ASSERT(a.has_message_id == b.has_message_id);
    RC_ASSERT(a.ledger_id == b.ledger_id);
    RC_ASSERT(a.entry_id == b.entry_id);
    RC_ASSERT(a.partition == b.partition);
    RC_ASSERT(a.batch_index == b.batch_index);
}

// Decodes `frame` with both decoders and requires the same outcome and receipt fields.
void decode_both(const std::vector<std::byte>& frame) {
    frame_decoder generic;
    frame_decoder fast({.fast_send_receipt = true});
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
    RC_ASSERT(a->frame.size == b->frame.size);
    RC_ASSERT(a->frame.raw_type == b->frame.raw_type);
    RC_ASSERT(a->frame.known_type == b->frame.known_type);
    if (a->frame.known_type && a->frame.type() == command_type::send_receipt) {
        assert_same(a->frame.receipt, b->frame.receipt);
    }
}

RC_GTEST_PROP(ReceiptScan, FastDecoderDecodesReceiptsLikeGeneric, ()) {
    message_id id;
    id.ledger_id = gen_u64();
    id.entry_id = gen_u64();
    id.partition = *rc::gen::oneOf(rc::gen::just(-1), rc::gen::inRange(0, 100),
                                   rc::gen::arbitrary<std::int32_t>());
    id.batch_index = *rc::gen::oneOf(rc::gen::just(-1), rc::gen::inRange(0, 1000));
    const auto ack_set = *rc::gen::oneOf(
        rc::gen::just(std::vector<std::int64_t>{}),
        rc::gen::container<std::vector<std::int64_t>>(rc::gen::arbitrary<std::int64_t>()));
    id.ack_set = ack_set;
    id.batch_size = *rc::gen::oneOf(rc::gen::just(0), rc::gen::inRange(1, 1000));
    command_writer w;
    frame_buffer out;
    const auto producer = gen_u64();
    const auto sequence = gen_u64();
    const auto highest = gen_u64();
    if (*rc::gen::arbitrary<bool>()) {
        RC_ASSERT(w.send_receipt(out, producer, sequence, highest, id).has_value());
    } else {
        RC_ASSERT(w.send_receipt_generic(out, producer, sequence, highest, id).has_value());
    }
    std::vector<std::byte> frame(out.begin(), out.end());
    if (*rc::gen::arbitrary<bool>()) {
        const auto at = *rc::gen::inRange<std::size_t>(0, frame.size());
        frame[at] ^= static_cast<std::byte>(*rc::gen::inRange(1, 256));
    }
    decode_both(frame);
}

// Arbitrary command bytes (often starting like a receipt) in a well-formed frame.
RC_GTEST_PROP(ReceiptScan, ArbitraryCommandBytesDecodeLikeGeneric, ()) {
    auto body = *rc::gen::container<std::vector<std::uint8_t>>(rc::gen::oneOf(
        rc::gen::element<std::uint8_t>(0x08, 0x07, 0x3a, 0x10, 0x1a, 0x18, 0x20, 0x80, 0x01),
        rc::gen::arbitrary<std::uint8_t>()));
    if (*rc::gen::arbitrary<bool>()) {
        body.insert(body.begin(), {0x08, 0x07});
    }
    if (body.empty()) {
        return;
    }
    std::vector<std::byte> frame(8);
    detail::store_be32(frame.data(), static_cast<std::uint32_t>(4 + body.size()));
    detail::store_be32(frame.data() + 4, static_cast<std::uint32_t>(body.size()));
    for (auto c : body) {
        frame.push_back(static_cast<std::byte>(c));
    }
    decode_both(frame);
}

TEST(ReceiptScan, TheBrokersReceiptTakesTheFastPath) {
    command_writer w;
    frame_buffer out;
    ASSERT_TRUE(w.send_receipt(out, 3, 41, 41,
                               message_id{.ledger_id = 9, .entry_id = 1234, .partition = 2}));
    frame_decoder fast({.fast_send_receipt = true});
    const auto r = fast.decode(out);
    ASSERT_TRUE(r && r->complete);
    EXPECT_FALSE(r->frame.has_command());  // the scanner read it
    EXPECT_EQ(r->frame.type(), command_type::send_receipt);
    EXPECT_EQ(r->frame.receipt.producer_id, 3U);
    EXPECT_EQ(r->frame.receipt.sequence_id, 41U);
    EXPECT_EQ(r->frame.receipt.highest_sequence_id, 41U);
    EXPECT_TRUE(r->frame.receipt.has_message_id);
    EXPECT_EQ(r->frame.receipt.ledger_id, 9U);
    EXPECT_EQ(r->frame.receipt.entry_id, 1234U);
    EXPECT_EQ(r->frame.receipt.partition, 2);
    EXPECT_EQ(r->frame.receipt.batch_index, -1);
    // Without the option the generic parse runs and fills the same fields.
    frame_decoder generic;
    const auto g = generic.decode(out);
    ASSERT_TRUE(g && g->complete && g->frame.has_command());
    EXPECT_EQ(g->frame.receipt.sequence_id, 41U);
    EXPECT_EQ(g->frame.receipt.entry_id, 1234U);
}

}  // namespace
}  // namespace nereus::proto
