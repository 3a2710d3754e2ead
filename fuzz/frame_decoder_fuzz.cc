// libFuzzer target: arbitrary bytes into frame_decoder, as a connection's receive loop would
// feed them (whole buffer, then again in two pieces), plus batch_reader over any payload.
// Invariants checked: no crash/UB/leak (sanitizers), a complete frame never claims more bytes
// than given, "need more" always asks for more than given, and a frame decoded from the whole
// buffer decodes identically when the bytes arrive split, and a decoder with fast_send (the
// broker's direct SEND scanners, send_scan.h) decodes every frame exactly as the generic one,
// and so does one with fast_send_receipt (a producer's SEND_RECEIPT scanner), one with
// fast_message (a client consumer's MESSAGE scanners: the same fields as protobuf's parse) and
// the broker's fast_ack (a plain ACK's ids and fields as protobuf reads them).

#include "nereus/proto/batch_codec.h"
#include "nereus/proto/frame_decoder.h"
#include "nereus/proto/pulsar_api.h"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>
#include <vector>

namespace {

using nereus::proto::frame_decoder;

void check(bool ok) {
    if (!ok) {
        std::abort();
    }
}

// The consumer decoder (fast_message) against the generic one on one frame.
void check_message(const nereus::proto::frame_view& a, const nereus::proto::frame_view& b) {
    check(a.size == b.size && a.raw_type == b.raw_type && a.known_type == b.known_type);
    check(a.message_error == b.message_error && a.checksum == b.checksum);
    check(a.payload.data() == b.payload.data() && a.payload.size() == b.payload.size());
    if (!a.known_type || a.type() != nereus::proto::command_type::message) {
        return;
    }
    const auto& c = a.command().message();
    check(b.message.consumer_id == c.consumer_id());
    check(b.message.ledger_id == c.message_id().ledgerid());
    check(b.message.entry_id == c.message_id().entryid());
    check(b.message.partition == c.message_id().partition());
    check(b.message.batch_index == c.message_id().batch_index());
    check(b.message.redelivery_count == c.redelivery_count());
    check(b.message.ack_set.size() == static_cast<std::size_t>(c.ack_set_size()));
    check(b.consumer_metadata.has_value() == (a.metadata() != nullptr));
    if (const auto* md = a.metadata()) {
        const auto& x = *b.consumer_metadata;
        check(x.producer_name == md->producer_name() && x.sequence_id == md->sequence_id());
        check(x.publish_time == md->publish_time() && x.event_time == md->event_time());
        check(x.has_event_time == md->has_event_time());
        check(x.partition_key == md->partition_key());
        check(x.has_partition_key == md->has_partition_key());
        check(x.ordering_key == md->ordering_key());
        check(x.has_ordering_key == md->has_ordering_key());
        check(x.compression == md->compression());
        check(x.uncompressed_size == md->uncompressed_size());
        check(x.num_messages_in_batch == md->num_messages_in_batch());
        check(x.has_num_messages_in_batch == md->has_num_messages_in_batch());
        check(x.properties.size() == static_cast<std::size_t>(md->properties_size()));
        for (int i = 0; i < md->properties_size(); ++i) {
            const auto& p = x.properties[static_cast<std::size_t>(i)];
            check(p.key == md->properties(i).key() && p.value == md->properties(i).value());
        }
    }
}

// The broker's decoder (fast_ack) against the generic one on one frame.
void check_ack(const nereus::proto::frame_view& a, const nereus::proto::frame_view& b) {
    if (!b.ack) {
        return;
    }
    check(a.known_type && a.type() == nereus::proto::command_type::ack && !b.has_command());
    const auto& c = a.command().ack();
    check(b.ack->consumer_id == c.consumer_id());
    check(b.ack->cumulative == (c.ack_type() == 1));
    check(b.ack->has_request_id == c.has_request_id() && b.ack->request_id == c.request_id());
    check(b.ack->ids.size() == static_cast<std::size_t>(c.message_id_size()));
    for (int i = 0; i < c.message_id_size(); ++i) {
        const auto& id = b.ack->ids[static_cast<std::size_t>(i)];
        check(id.ledger_id == c.message_id(i).ledgerid());
        check(id.entry_id == c.message_id(i).entryid());
        check(id.partition == c.message_id(i).partition());
        check(c.message_id(i).ack_set_size() == 0 && !c.message_id(i).has_batch_size());
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::span<const std::byte> input(reinterpret_cast<const std::byte*>(data), size);
    frame_decoder whole({.max_frame_size = 1 << 20});
    frame_decoder fast({.max_frame_size = 1 << 20, .fast_send = true, .fast_ack = true});
    frame_decoder consumer({.max_frame_size = 1 << 20, .fast_message = true});
    nereus::proto::decoder_options receipt_options;
    receipt_options.max_frame_size = 1 << 20;
    receipt_options.fast_send_receipt = true;
    frame_decoder fast_receipt(receipt_options);
    std::span<const std::byte> rest = input;
    std::vector<std::size_t> sizes;
    while (!rest.empty()) {
        auto r = whole.decode(rest);
        auto q = fast.decode(rest);
        auto u = fast_receipt.decode(rest);
        auto m = consumer.decode(rest);
        check(r.has_value() == q.has_value() && r.has_value() == u.has_value() &&
              r.has_value() == m.has_value());
        if (!r) {
            check(r.error() == q.error() && r.error() == u.error() && r.error() == m.error());
            break;
        }
        check(r->complete == m->complete && r->bytes_needed == m->bytes_needed);
        if (r->complete) {
            check_message(r->frame, m->frame);
            check_ack(r->frame, q->frame);
        }
        check(r->complete == q->complete && r->bytes_needed == q->bytes_needed);
        check(r->complete == u->complete && r->bytes_needed == u->bytes_needed);
        if (r->complete) {
            const auto& a = r->frame;
            const auto& c = u->frame;
            check(a.size == c.size && a.raw_type == c.raw_type && a.known_type == c.known_type);
            if (a.known_type && a.type() == nereus::proto::command_type::send_receipt) {
                check(a.receipt.producer_id == c.receipt.producer_id);
                check(a.receipt.sequence_id == c.receipt.sequence_id);
                check(a.receipt.highest_sequence_id == c.receipt.highest_sequence_id);
                check(a.receipt.has_message_id == c.receipt.has_message_id);
                check(a.receipt.ledger_id == c.receipt.ledger_id);
                check(a.receipt.entry_id == c.receipt.entry_id);
                check(a.receipt.partition == c.receipt.partition);
                check(a.receipt.batch_index == c.receipt.batch_index);
            }
        }
        if (r->complete) {
            const auto& a = r->frame;
            const auto& b = q->frame;
            check(a.size == b.size && a.raw_type == b.raw_type && a.known_type == b.known_type);
            check(a.message_error == b.message_error && a.checksum == b.checksum);
            check(a.payload.data() == b.payload.data() && a.payload.size() == b.payload.size());
            check(a.metadata_values.has_value() == b.metadata_values.has_value());
            if (a.metadata_values) {
                check(a.metadata_values->publish_time == b.metadata_values->publish_time);
                check(a.metadata_values->num_messages_in_batch ==
                      b.metadata_values->num_messages_in_batch);
                check(a.metadata_values->has_num_messages_in_batch ==
                      b.metadata_values->has_num_messages_in_batch);
            }
            if (a.known_type && a.type() == nereus::proto::command_type::send) {
                check(a.send.producer_id == b.send.producer_id);
                check(a.send.sequence_id == b.send.sequence_id);
                check(a.send.num_messages == b.send.num_messages);
                check(a.send.highest_sequence_id == b.send.highest_sequence_id);
                check(a.send.has_highest_sequence_id == b.send.has_highest_sequence_id);
            }
        }
        if (!r->complete) {
            check(r->bytes_needed > rest.size());
            break;
        }
        const auto& f = r->frame;
        check(f.size > 0 && f.size <= rest.size());
        check(f.payload.size() <= f.size);
        if (f.metadata() != nullptr && f.metadata()->has_num_messages_in_batch()) {
            nereus::proto::batch_reader br;
            br.reset(f.payload, f.metadata()->num_messages_in_batch());
            for (int i = 0; i < 10000; ++i) {
                auto more = br.next();
                if (!more || !*more) {
                    break;
                }
            }
        }
        sizes.push_back(f.size);
        rest = rest.subspan(f.size);
    }
    // Same bytes, delivered in two pieces: the first frame must come out the same size.
    if (!sizes.empty() && size > 1) {
        frame_decoder split({.max_frame_size = 1 << 20});
        const std::size_t cut = data[0] % size;
        auto first = split.decode(input.first(cut));
        check(first.has_value());  // the whole-buffer decode of this frame succeeded
        if (first->complete) {
            check(first->frame.size == sizes[0]);
        } else {
            auto second = split.decode(input);
            check(second && second->complete && second->frame.size == sizes[0]);
        }
    }
    return 0;
}
