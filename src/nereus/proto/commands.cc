#include "nereus/proto/commands.h"

#include "nereus/base/crc32c.h"
#include "nereus/proto/detail/wire.h"
#include "nereus/proto/errc.h"
#include "nereus/proto/protocol_version.h"
#include "nereus/proto/pulsar_api.h"

#include <algorithm>
#include <bit>
#include <cstring>

namespace nereus::proto {

using detail::max_varint_bytes;
using detail::put_varint;
using detail::varint_size;

namespace {

// The largest MessageIdData put_plain_id writes.
constexpr std::size_t max_plain_id_bytes = 3 * (1 + max_varint_bytes);

// A MessageIdData of ledger, entry and (if any) partition, as protobuf serialises it; for the
// direct encoders of the hot paths (their callers check the id has no batch fields). Returns
// the position after it.
std::byte* put_plain_id(std::byte* m, const message_id& id) {
    *m++ = std::byte{0x08};  // MessageIdData.ledgerId
    m = put_varint(m, id.ledger_id);
    *m++ = std::byte{0x10};  // entryId
    m = put_varint(m, id.entry_id);
    if (id.partition != -1) {
        *m++ = std::byte{0x18};  // partition: int32, sign-extended to 64 bits on the wire
        m = put_varint(m, static_cast<std::uint64_t>(static_cast<std::int64_t>(id.partition)));
    }
    return m;
}

pb::ServerError wire(server_error e) {
    return static_cast<pb::ServerError>(e);
}

void fill_id(pb::MessageIdData& out, const message_id& id) {
    out.set_ledgerid(id.ledger_id);
    out.set_entryid(id.entry_id);
    if (id.partition != -1) {
        out.set_partition(id.partition);
    }
    if (id.batch_index != -1) {
        out.set_batch_index(id.batch_index);
    }
    for (const std::int64_t word : id.ack_set) {
        out.add_ack_set(word);
    }
    if (id.batch_size > 0) {
        out.set_batch_size(id.batch_size);
    }
}

template <class Repeated>
void fill_key_values(Repeated& out, std::span<const key_value> kvs) {
    for (const auto& kv : kvs) {
        auto* p = out.Add();
        p->set_key(kv.key.data(), kv.key.size());
        p->set_value(kv.value.data(), kv.value.size());
    }
}

void fill_schema(pb::Schema& out, const schema_info& s) {
    out.set_name(s.name.data(), s.name.size());
    out.set_schema_data(s.data.data(), s.data.size());
    out.set_type(pb::Schema::Type_IsValid(s.type) ? static_cast<pb::Schema::Type>(s.type)
                                                  : pb::Schema::None);
    fill_key_values(*out.mutable_properties(), s.properties);
}

}  // namespace

command_writer::command_writer(encode_options options)
    : cmd_(std::make_unique<pb::BaseCommand>()), options_(options) {}
command_writer::~command_writer() = default;
command_writer::command_writer(command_writer&&) noexcept = default;
command_writer& command_writer::operator=(command_writer&&) noexcept = default;

pb::BaseCommand& command_writer::scratch(command_type t) {
    reset_command(*cmd_, t);
    return *cmd_;
}

command_writer::written command_writer::write_scratch(frame_buffer& out) {
    return append_simple_frame(out, *cmd_, options_);
}

// ---- broker → client ----

command_writer::written command_writer::connected(frame_buffer& out, const connected_args& a) {
    auto* c = scratch(command_type::connected).mutable_connected();
    c->set_server_version(a.server_version.data(), a.server_version.size());
    c->set_protocol_version(a.protocol_version);
    if (a.max_message_size) {
        c->set_max_message_size(*a.max_message_size);
    }
    return write_scratch(out);
}

command_writer::written command_writer::ping(frame_buffer& out) {
    scratch(command_type::ping);
    return write_scratch(out);
}

command_writer::written command_writer::pong(frame_buffer& out) {
    scratch(command_type::pong);
    return write_scratch(out);
}

command_writer::written command_writer::lookup_connect(frame_buffer& out,
                                                       std::uint64_t request_id,
                                                       std::string_view broker_url,
                                                       std::string_view broker_url_tls,
                                                       bool authoritative) {
    auto* c = scratch(command_type::lookup_response).mutable_lookuptopicresponse();
    c->set_request_id(request_id);
    c->set_response(pb::CommandLookupTopicResponse::Connect);
    c->set_brokerserviceurl(broker_url.data(), broker_url.size());
    if (!broker_url_tls.empty()) {
        c->set_brokerserviceurltls(broker_url_tls.data(), broker_url_tls.size());
    }
    c->set_authoritative(authoritative);
    return write_scratch(out);
}

command_writer::written command_writer::lookup_redirect(frame_buffer& out,
                                                        std::uint64_t request_id,
                                                        std::string_view broker_url,
                                                        std::string_view broker_url_tls,
                                                        bool authoritative) {
    auto* c = scratch(command_type::lookup_response).mutable_lookuptopicresponse();
    c->set_request_id(request_id);
    c->set_response(pb::CommandLookupTopicResponse::Redirect);
    c->set_brokerserviceurl(broker_url.data(), broker_url.size());
    if (!broker_url_tls.empty()) {
        c->set_brokerserviceurltls(broker_url_tls.data(), broker_url_tls.size());
    }
    c->set_authoritative(authoritative);
    return write_scratch(out);
}

command_writer::written command_writer::lookup_failed(frame_buffer& out,
                                                      std::uint64_t request_id,
                                                      server_error error,
                                                      std::string_view message) {
    auto* c = scratch(command_type::lookup_response).mutable_lookuptopicresponse();
    c->set_request_id(request_id);
    c->set_response(pb::CommandLookupTopicResponse::Failed);
    c->set_error(wire(error));
    c->set_message(message.data(), message.size());
    return write_scratch(out);
}

command_writer::written command_writer::partitioned_metadata_ok(frame_buffer& out,
                                                                std::uint64_t request_id,
                                                                std::uint32_t partitions) {
    auto* c =
        scratch(command_type::partitioned_metadata_response).mutable_partitionmetadataresponse();
    c->set_request_id(request_id);
    c->set_partitions(partitions);
    c->set_response(pb::CommandPartitionedTopicMetadataResponse::Success);
    return write_scratch(out);
}

command_writer::written command_writer::partitioned_metadata_failed(frame_buffer& out,
                                                                    std::uint64_t request_id,
                                                                    server_error error,
                                                                    std::string_view message) {
    auto* c =
        scratch(command_type::partitioned_metadata_response).mutable_partitionmetadataresponse();
    c->set_request_id(request_id);
    c->set_response(pb::CommandPartitionedTopicMetadataResponse::Failed);
    c->set_error(wire(error));
    c->set_message(message.data(), message.size());
    return write_scratch(out);
}

command_writer::written command_writer::producer_success(frame_buffer& out,
                                                         const producer_success_args& a) {
    auto* c = scratch(command_type::producer_success).mutable_producer_success();
    c->set_request_id(a.request_id);
    c->set_producer_name(a.producer_name.data(), a.producer_name.size());
    c->set_last_sequence_id(a.last_sequence_id);
    if (a.schema_version) {
        c->set_schema_version(a.schema_version->data(), a.schema_version->size());
    }
    if (a.topic_epoch) {
        c->set_topic_epoch(*a.topic_epoch);
    }
    if (!a.producer_ready) {
        c->set_producer_ready(false);
    }
    return write_scratch(out);
}

command_writer::written command_writer::send_receipt(frame_buffer& out,
                                                     std::uint64_t producer_id,
                                                     std::uint64_t sequence_id,
                                                     std::uint64_t highest_sequence_id,
                                                     const message_id& id) {
    // One per produced message: the broker's receipts (ledger, entry, partition) are encoded
    // directly, byte for byte what the generic path below writes (proto tests compare them),
    // without clearing, checking, sizing and serialising the scratch BaseCommand.
    if (id.batch_index == -1 && id.ack_set.empty() && id.batch_size <= 0 &&
        peer_knows(command_type::send_receipt, options_.peer_protocol_version)) {
        std::byte mid[max_plain_id_bytes];
        std::byte* m = put_plain_id(mid, id);
        std::byte body[4 * (1 + max_varint_bytes) + 1 + sizeof mid];
        std::byte* b = body;
        *b++ = std::byte{0x08};  // CommandSendReceipt.producer_id
        b = put_varint(b, producer_id);
        *b++ = std::byte{0x10};  // sequence_id
        b = put_varint(b, sequence_id);
        *b++ = std::byte{0x1a};  // message_id (length-delimited, < 128 bytes)
        *b++ = static_cast<std::byte>(m - mid);
        b = std::copy(mid, m, b);
        *b++ = std::byte{0x20};  // highest_sequence_id
        b = put_varint(b, highest_sequence_id);
        const auto body_size = static_cast<std::uint32_t>(b - body);  // < 128
        // BaseCommand: type = SEND_RECEIPT (field 1), send_receipt (field 7).
        const std::uint32_t command_size = 4 + body_size;
        const auto total = static_cast<std::uint32_t>(size_field_bytes + command_size);
        if (std::uint64_t{total} + size_field_bytes <= options_.max_frame_size) {
            const std::size_t old = out.size();
            out.resize(old + size_field_bytes + total);
            std::byte* p = out.data() + old;
            detail::store_be32(p, total);
            detail::store_be32(p + size_field_bytes, command_size);
            p += simple_frame_overhead;
            *p++ = std::byte{0x08};
            *p++ = static_cast<std::byte>(command_type::send_receipt);
            *p++ = std::byte{0x3a};
            *p++ = static_cast<std::byte>(body_size);
            std::copy(body, b, p);
            return size_field_bytes + total;
        }
    }
    return send_receipt_generic(out, producer_id, sequence_id, highest_sequence_id, id);
}

command_writer::written command_writer::send_receipt_generic(frame_buffer& out,
                                                             std::uint64_t producer_id,
                                                             std::uint64_t sequence_id,
                                                             std::uint64_t highest_sequence_id,
                                                             const message_id& id) {
    auto* c = scratch(command_type::send_receipt).mutable_send_receipt();
    c->set_producer_id(producer_id);
    c->set_sequence_id(sequence_id);
    fill_id(*c->mutable_message_id(), id);
    c->set_highest_sequence_id(highest_sequence_id);
    return write_scratch(out);
}

command_writer::written command_writer::send_error(frame_buffer& out,
                                                   std::uint64_t producer_id,
                                                   std::uint64_t sequence_id,
                                                   server_error error,
                                                   std::string_view message) {
    auto* c = scratch(command_type::send_error).mutable_send_error();
    c->set_producer_id(producer_id);
    c->set_sequence_id(sequence_id);
    c->set_error(wire(error));
    c->set_message(message.data(), message.size());
    return write_scratch(out);
}

command_writer::written command_writer::success(frame_buffer& out, std::uint64_t request_id) {
    scratch(command_type::success).mutable_success()->set_request_id(request_id);
    return write_scratch(out);
}

command_writer::written command_writer::error_response(frame_buffer& out,
                                                       std::uint64_t request_id,
                                                       server_error error,
                                                       std::string_view message) {
    auto* c = scratch(command_type::error).mutable_error();
    c->set_request_id(request_id);
    c->set_error(wire(error));
    c->set_message(message.data(), message.size());
    return write_scratch(out);
}

command_writer::written command_writer::close_producer(frame_buffer& out,
                                                       std::uint64_t producer_id,
                                                       std::uint64_t request_id) {
    if (request_id == broker_initiated_request_id &&
        !peer_accepts_broker_close(options_.peer_protocol_version)) {
        return ::nereus::error(errc::unsupported_by_peer);
    }
    auto* c = scratch(command_type::close_producer).mutable_close_producer();
    c->set_producer_id(producer_id);
    c->set_request_id(request_id);
    return write_scratch(out);
}

command_writer::written command_writer::close_consumer(frame_buffer& out,
                                                       std::uint64_t consumer_id,
                                                       std::uint64_t request_id) {
    if (request_id == broker_initiated_request_id &&
        !peer_accepts_broker_close(options_.peer_protocol_version)) {
        return ::nereus::error(errc::unsupported_by_peer);
    }
    auto* c = scratch(command_type::close_consumer).mutable_close_consumer();
    c->set_consumer_id(consumer_id);
    c->set_request_id(request_id);
    return write_scratch(out);
}

command_writer::written command_writer::message(frame_buffer& out,
                                                std::uint64_t consumer_id,
                                                const message_id& id,
                                                std::uint32_t redelivery_count,
                                                std::span<const std::int64_t> ack_set,
                                                std::span<const std::byte> stored) {
    // One per delivered message: the broker's MESSAGE (ledger, entry, partition, redelivery
    // count; no ack_set, no broker-entry metadata) is encoded directly, byte for byte what the
    // generic path below writes (proto tests compare them), without clearing, checking, sizing
    // and serialising the scratch BaseCommand.
    if (ack_set.empty() && id.batch_index == -1 && id.ack_set.empty() && id.batch_size <= 0 &&
        options_.broker_entry_metadata == nullptr &&
        !(stored.size() >= magic_bytes &&
          detail::load_be16(stored.data()) == magic_broker_entry_metadata)) {
        const bool stored_has_checksum = stored.size() >= checksum_section_bytes &&
                                         detail::load_be16(stored.data()) == magic_crc32c;
        if (stored.size() >=
            (stored_has_checksum ? checksum_section_bytes : 0) + size_field_bytes) {
            const bool keep_checksum = send_checksum_to_consumer(options_.peer_protocol_version);
            std::span<const std::byte> payload = stored;
            bool add_checksum = false;
            if (!keep_checksum && stored_has_checksum) {
                payload = stored.subspan(checksum_section_bytes);
            } else if (keep_checksum && !stored_has_checksum) {
                add_checksum = true;
            }
            std::byte mid[max_plain_id_bytes];
            std::byte* m = put_plain_id(mid, id);
            std::byte body[2 * (1 + max_varint_bytes) + 2 + sizeof mid];
            std::byte* b = body;
            *b++ = std::byte{0x08};  // CommandMessage.consumer_id
            b = put_varint(b, consumer_id);
            *b++ = std::byte{0x12};  // message_id (length-delimited, < 128 bytes)
            *b++ = static_cast<std::byte>(m - mid);
            b = std::copy(mid, m, b);
            if (redelivery_count > 0) {
                *b++ = std::byte{0x18};  // redelivery_count
                b = put_varint(b, redelivery_count);
            }
            const auto body_size = static_cast<std::uint32_t>(b - body);  // < 128
            // BaseCommand: type = MESSAGE (field 1), message (field 9).
            const std::uint32_t command_size = 4 + body_size;
            const std::uint64_t total = size_field_bytes + std::uint64_t{command_size} +
                                        (add_checksum ? checksum_section_bytes : 0) +
                                        payload.size();
            if (total + size_field_bytes <= options_.max_frame_size) {
                const std::size_t old = out.size();
                out.resize(old + size_field_bytes + total);
                std::byte* p = out.data() + old;
                detail::store_be32(p, static_cast<std::uint32_t>(total));
                detail::store_be32(p + size_field_bytes, command_size);
                p += simple_frame_overhead;
                *p++ = std::byte{0x08};
                *p++ = static_cast<std::byte>(command_type::message);
                *p++ = std::byte{0x4a};
                *p++ = static_cast<std::byte>(body_size);
                p = std::copy(body, b, p);
                if (add_checksum) {
                    detail::store_be16(p, magic_crc32c);
                    detail::store_be32(p + magic_bytes, crc32c::value(payload));
                    p += checksum_section_bytes;
                }
                std::memcpy(p, payload.data(), payload.size());
                return size_field_bytes + total;
            }
        }
    }
    return message_generic(out, consumer_id, id, redelivery_count, ack_set, stored);
}

command_writer::written command_writer::message_generic(frame_buffer& out,
                                                        std::uint64_t consumer_id,
                                                        const message_id& id,
                                                        std::uint32_t redelivery_count,
                                                        std::span<const std::int64_t> ack_set,
                                                        std::span<const std::byte> stored) {
    auto* c = scratch(command_type::message).mutable_message();
    c->set_consumer_id(consumer_id);
    fill_id(*c->mutable_message_id(), id);
    if (redelivery_count > 0) {
        c->set_redelivery_count(redelivery_count);
    }
    for (const std::int64_t word : ack_set) {
        c->add_ack_set(word);
    }
    encode_options o = options_;
    o.checksum = send_checksum_to_consumer(options_.peer_protocol_version) ? checksum_policy::ensure
                                                                           : checksum_policy::strip;
    return append_stored_payload_frame(out, *cmd_, stored, o);
}

command_writer::written command_writer::ack_response(frame_buffer& out,
                                                     std::uint64_t consumer_id,
                                                     std::uint64_t request_id,
                                                     std::optional<server_error> error,
                                                     std::string_view message) {
    auto* c = scratch(command_type::ack_response).mutable_ackresponse();
    c->set_consumer_id(consumer_id);
    c->set_request_id(request_id);
    if (error) {
        c->set_error(wire(*error));
        c->set_message(message.data(), message.size());
    }
    return write_scratch(out);
}

command_writer::written command_writer::get_last_message_id_response(
    frame_buffer& out,
    std::uint64_t request_id,
    const message_id& last,
    const std::optional<message_id>& mark_delete_position) {
    auto* c =
        scratch(command_type::get_last_message_id_response).mutable_getlastmessageidresponse();
    c->set_request_id(request_id);
    fill_id(*c->mutable_last_message_id(), last);
    if (mark_delete_position) {
        fill_id(*c->mutable_consumer_mark_delete_position(), *mark_delete_position);
    }
    return write_scratch(out);
}

command_writer::written command_writer::get_topics_of_namespace_response(
    frame_buffer& out, std::uint64_t request_id, std::span<const std::string> topics) {
    auto* c = scratch(command_type::get_topics_of_namespace_response)
                  .mutable_gettopicsofnamespaceresponse();
    c->set_request_id(request_id);
    for (const auto& t : topics) {
        c->add_topics(t);
    }
    c->set_filtered(false);
    return write_scratch(out);
}

command_writer::written command_writer::get_schema_response_error(frame_buffer& out,
                                                                  std::uint64_t request_id,
                                                                  server_error error,
                                                                  std::string_view message) {
    auto* c = scratch(command_type::get_schema_response).mutable_getschemaresponse();
    c->set_request_id(request_id);
    c->set_error_code(wire(error));
    c->set_error_message(message.data(), message.size());
    return write_scratch(out);
}

command_writer::written command_writer::get_or_create_schema_response(
    frame_buffer& out,
    std::uint64_t request_id,
    std::span<const std::byte> schema_version,
    std::optional<server_error> error,
    std::string_view message) {
    auto* c =
        scratch(command_type::get_or_create_schema_response).mutable_getorcreateschemaresponse();
    c->set_request_id(request_id);
    if (error) {
        c->set_error_code(wire(*error));
        c->set_error_message(message.data(), message.size());
    } else {
        c->set_schema_version(schema_version.data(), schema_version.size());
    }
    return write_scratch(out);
}

command_writer::written command_writer::consumer_stats_response(frame_buffer& out,
                                                                const consumer_stats_args& a) {
    auto* c = scratch(command_type::consumer_stats_response).mutable_consumerstatsresponse();
    c->set_request_id(a.request_id);
    c->set_msgrateout(a.msg_rate_out);
    c->set_msgthroughputout(a.msg_throughput_out);
    c->set_msgrateredeliver(a.msg_rate_redeliver);
    c->set_consumername(a.consumer_name.data(), a.consumer_name.size());
    c->set_availablepermits(a.available_permits);
    c->set_unackedmessages(a.unacked_messages);
    c->set_blockedconsumeronunackedmsgs(a.blocked_consumer_on_unacked_msgs);
    c->set_address(a.address.data(), a.address.size());
    c->set_connectedsince(a.connected_since.data(), a.connected_since.size());
    c->set_type(a.type.data(), a.type.size());
    c->set_msgrateexpired(a.msg_rate_expired);
    c->set_msgbacklog(a.msg_backlog);
    return write_scratch(out);
}

command_writer::written command_writer::consumer_stats_error(frame_buffer& out,
                                                             std::uint64_t request_id,
                                                             server_error error,
                                                             std::string_view message) {
    auto* c = scratch(command_type::consumer_stats_response).mutable_consumerstatsresponse();
    c->set_request_id(request_id);
    c->set_error_code(wire(error));
    c->set_error_message(message.data(), message.size());
    return write_scratch(out);
}

command_writer::written command_writer::active_consumer_change(frame_buffer& out,
                                                               std::uint64_t consumer_id,
                                                               bool is_active) {
    auto* c = scratch(command_type::active_consumer_change).mutable_active_consumer_change();
    c->set_consumer_id(consumer_id);
    c->set_is_active(is_active);
    return write_scratch(out);
}

command_writer::written command_writer::reached_end_of_topic(frame_buffer& out,
                                                             std::uint64_t consumer_id) {
    scratch(command_type::reached_end_of_topic)
        .mutable_reachedendoftopic()
        ->set_consumer_id(consumer_id);
    return write_scratch(out);
}

command_writer::written command_writer::tc_client_connect_response(frame_buffer& out,
                                                                   std::uint64_t request_id,
                                                                   server_error error,
                                                                   std::string_view message) {
    auto* c = scratch(command_type::tc_client_connect_response).mutable_tcclientconnectresponse();
    c->set_request_id(request_id);
    c->set_error(wire(error));
    c->set_message(message.data(), message.size());
    return write_scratch(out);
}

// ---- client → broker ----

command_writer::written command_writer::connect(frame_buffer& out, const connect_args& a) {
    auto* c = scratch(command_type::connect).mutable_connect();
    c->set_client_version(a.client_version.data(), a.client_version.size());
    c->set_protocol_version(a.protocol_version);
    if (!a.auth_method_name.empty()) {
        c->set_auth_method_name(a.auth_method_name.data(), a.auth_method_name.size());
    }
    if (!a.auth_data.empty()) {
        c->set_auth_data(a.auth_data.data(), a.auth_data.size());
    }
    if (a.supports_auth_refresh || a.supports_broker_entry_metadata ||
        a.supports_partial_producer) {
        auto* f = c->mutable_feature_flags();
        f->set_supports_auth_refresh(a.supports_auth_refresh);
        f->set_supports_broker_entry_metadata(a.supports_broker_entry_metadata);
        f->set_supports_partial_producer(a.supports_partial_producer);
    }
    return write_scratch(out);
}

command_writer::written command_writer::partitioned_metadata(frame_buffer& out,
                                                             std::string_view topic,
                                                             std::uint64_t request_id) {
    auto* c = scratch(command_type::partitioned_metadata).mutable_partitionmetadata();
    c->set_topic(topic.data(), topic.size());
    c->set_request_id(request_id);
    return write_scratch(out);
}

command_writer::written command_writer::lookup(frame_buffer& out,
                                               std::string_view topic,
                                               std::uint64_t request_id,
                                               bool authoritative,
                                               std::string_view advertised_listener_name) {
    auto* c = scratch(command_type::lookup).mutable_lookuptopic();
    c->set_topic(topic.data(), topic.size());
    c->set_request_id(request_id);
    c->set_authoritative(authoritative);
    if (!advertised_listener_name.empty()) {
        c->set_advertised_listener_name(advertised_listener_name.data(),
                                        advertised_listener_name.size());
    }
    return write_scratch(out);
}

command_writer::written command_writer::producer(frame_buffer& out, const producer_args& a) {
    auto* c = scratch(command_type::producer).mutable_producer();
    c->set_topic(a.topic.data(), a.topic.size());
    c->set_producer_id(a.producer_id);
    c->set_request_id(a.request_id);
    if (a.producer_name) {
        c->set_producer_name(a.producer_name->data(), a.producer_name->size());
        c->set_user_provided_producer_name(true);
    } else {
        c->set_user_provided_producer_name(false);
    }
    c->set_epoch(a.epoch);
    if (!pb::ProducerAccessMode_IsValid(a.access_mode)) {
        return ::nereus::error(errc::invalid_argument);
    }
    c->set_producer_access_mode(static_cast<pb::ProducerAccessMode>(a.access_mode));
    fill_key_values(*c->mutable_metadata(), a.metadata);
    if (a.schema != nullptr) {
        fill_schema(*c->mutable_schema(), *a.schema);
    }
    return write_scratch(out);
}

command_writer::written command_writer::send(frame_buffer& out,
                                             const send_args& a,
                                             const pb::MessageMetadata& metadata,
                                             std::span<const std::byte> payload) {
    auto* c = scratch(command_type::send).mutable_send();
    c->set_producer_id(a.producer_id);
    c->set_sequence_id(a.sequence_id);
    c->set_num_messages(a.num_messages);
    if (a.highest_sequence_id) {
        c->set_highest_sequence_id(*a.highest_sequence_id);
    }
    encode_options o = options_;
    o.checksum = peer_supports_checksum(options_.peer_protocol_version) ? checksum_policy::ensure
                                                                        : checksum_policy::strip;
    return append_payload_frame(out, *cmd_, metadata, payload, o);
}

command_writer::written command_writer::subscribe(frame_buffer& out, const subscribe_args& a) {
    auto* c = scratch(command_type::subscribe).mutable_subscribe();
    c->set_topic(a.topic.data(), a.topic.size());
    c->set_subscription(a.subscription.data(), a.subscription.size());
    if (!pb::CommandSubscribe::SubType_IsValid(a.sub_type) ||
        !pb::CommandSubscribe::InitialPosition_IsValid(a.initial_position)) {
        return ::nereus::error(errc::invalid_argument);
    }
    c->set_subtype(static_cast<pb::CommandSubscribe::SubType>(a.sub_type));
    c->set_consumer_id(a.consumer_id);
    c->set_request_id(a.request_id);
    if (!a.consumer_name.empty()) {
        c->set_consumer_name(a.consumer_name.data(), a.consumer_name.size());
    }
    c->set_priority_level(a.priority_level);
    c->set_durable(a.durable);
    if (a.start_message_id) {
        fill_id(*c->mutable_start_message_id(), *a.start_message_id);
    }
    c->set_read_compacted(a.read_compacted);
    c->set_initialposition(static_cast<pb::CommandSubscribe::InitialPosition>(a.initial_position));
    fill_key_values(*c->mutable_metadata(), a.metadata);
    fill_key_values(*c->mutable_subscription_properties(), a.subscription_properties);
    if (a.schema != nullptr &&
        (a.schema->type != pb::Schema::AutoConsume ||
         peer_supports_auto_consume_schema(options_.peer_protocol_version))) {
        fill_schema(*c->mutable_schema(), *a.schema);
    }
    return write_scratch(out);
}

command_writer::written command_writer::flow(frame_buffer& out,
                                             std::uint64_t consumer_id,
                                             std::uint32_t permits) {
    auto* c = scratch(command_type::flow).mutable_flow();
    c->set_consumer_id(consumer_id);
    c->set_messagepermits(permits);
    return write_scratch(out);
}

namespace {

// Bytes put_plain_id writes for `id` (< 128).
std::size_t plain_id_size(const message_id& id) {
    return 2 + varint_size(id.ledger_id) + varint_size(id.entry_id) +
           (id.partition != -1 ? 1 + varint_size(static_cast<std::uint64_t>(
                                         static_cast<std::int64_t>(id.partition)))
                               : 0);
}

}  // namespace

command_writer::written command_writer::ack(frame_buffer& out, const ack_args& a) {
    // One per group of acked messages (a consumer's hot path): ids of ledger, entry and
    // partition only, without a validation error, are encoded directly, byte for byte what the
    // generic path below writes (proto tests compare them).
    const bool plain_ids = std::all_of(a.ids.begin(), a.ids.end(), [](const message_id& id) {
        return id.batch_index == -1 && id.ack_set.empty() && id.batch_size <= 0;
    });
    if (plain_ids && !a.ids.empty() && !(a.ids.size() > 1 && a.cumulative) && !a.validation_error &&
        (a.ids.size() == 1 || peer_supports_multi_message_ack(options_.peer_protocol_version)) &&
        peer_knows(command_type::ack, options_.peer_protocol_version)) {
        // CommandAck: consumer_id (1), ack_type (2), message_id (3, repeated), request_id (8).
        std::uint64_t body = 1 + varint_size(a.consumer_id) + 2;
        for (const auto& id : a.ids) {
            body += 2 + plain_id_size(id);
        }
        if (a.request_id) {
            body += 1 + varint_size(*a.request_id);
        }
        // BaseCommand: type = ACK (field 1), ack (field 10).
        const std::uint64_t command_size = 3 + varint_size(body) + body;
        const std::uint64_t total = size_field_bytes + command_size;
        if (total + size_field_bytes <= options_.max_frame_size) {
            const std::size_t old = out.size();
            out.resize(old + size_field_bytes + static_cast<std::size_t>(total));
            std::byte* p = out.data() + old;
            detail::store_be32(p, static_cast<std::uint32_t>(total));
            detail::store_be32(p + size_field_bytes, static_cast<std::uint32_t>(command_size));
            p += simple_frame_overhead;
            *p++ = std::byte{0x08};
            *p++ = static_cast<std::byte>(command_type::ack);
            *p++ = std::byte{0x52};
            p = put_varint(p, body);
            *p++ = std::byte{0x08};
            p = put_varint(p, a.consumer_id);
            *p++ = std::byte{0x10};
            *p++ = a.cumulative ? std::byte{1} : std::byte{0};
            for (const auto& id : a.ids) {
                *p++ = std::byte{0x1a};
                *p++ = static_cast<std::byte>(plain_id_size(id));
                p = put_plain_id(p, id);
            }
            if (a.request_id) {
                *p++ = std::byte{0x40};
                p = put_varint(p, *a.request_id);
            }
            return size_field_bytes + static_cast<std::size_t>(total);
        }
    }
    return ack_generic(out, a);
}

command_writer::written command_writer::ack_generic(frame_buffer& out, const ack_args& a) {
    if (a.ids.empty() || (a.ids.size() > 1 && a.cumulative)) {
        return ::nereus::error(errc::invalid_argument);
    }
    if (a.ids.size() > 1 && !peer_supports_multi_message_ack(options_.peer_protocol_version)) {
        return ::nereus::error(errc::unsupported_by_peer);
    }
    auto* c = scratch(command_type::ack).mutable_ack();
    c->set_consumer_id(a.consumer_id);
    c->set_ack_type(a.cumulative ? pb::CommandAck::Cumulative : pb::CommandAck::Individual);
    for (const auto& id : a.ids) {
        fill_id(*c->add_message_id(), id);
    }
    if (a.validation_error) {
        if (!pb::CommandAck::ValidationError_IsValid(*a.validation_error)) {
            return ::nereus::error(errc::invalid_argument);
        }
        c->set_validation_error(static_cast<pb::CommandAck::ValidationError>(*a.validation_error));
    }
    if (a.request_id) {
        c->set_request_id(*a.request_id);
    }
    return write_scratch(out);
}

command_writer::written command_writer::unsubscribe(frame_buffer& out,
                                                    std::uint64_t consumer_id,
                                                    std::uint64_t request_id) {
    auto* c = scratch(command_type::unsubscribe).mutable_unsubscribe();
    c->set_consumer_id(consumer_id);
    c->set_request_id(request_id);
    return write_scratch(out);
}

command_writer::written command_writer::seek(frame_buffer& out,
                                             std::uint64_t consumer_id,
                                             std::uint64_t request_id,
                                             const message_id& id) {
    auto* c = scratch(command_type::seek).mutable_seek();
    c->set_consumer_id(consumer_id);
    c->set_request_id(request_id);
    fill_id(*c->mutable_message_id(), id);
    return write_scratch(out);
}

command_writer::written command_writer::seek_by_time(frame_buffer& out,
                                                     std::uint64_t consumer_id,
                                                     std::uint64_t request_id,
                                                     std::uint64_t publish_time_ms) {
    auto* c = scratch(command_type::seek).mutable_seek();
    c->set_consumer_id(consumer_id);
    c->set_request_id(request_id);
    c->set_message_publish_time(publish_time_ms);
    return write_scratch(out);
}

command_writer::written command_writer::redeliver_unacknowledged(frame_buffer& out,
                                                                 std::uint64_t consumer_id,
                                                                 std::span<const message_id> ids) {
    auto* c = scratch(command_type::redeliver_unacknowledged_messages)
                  .mutable_redeliverunacknowledgedmessages();
    c->set_consumer_id(consumer_id);
    for (const auto& id : ids) {
        fill_id(*c->add_message_ids(), id);
    }
    return write_scratch(out);
}

command_writer::written command_writer::get_last_message_id(frame_buffer& out,
                                                            std::uint64_t consumer_id,
                                                            std::uint64_t request_id) {
    auto* c = scratch(command_type::get_last_message_id).mutable_getlastmessageid();
    c->set_consumer_id(consumer_id);
    c->set_request_id(request_id);
    return write_scratch(out);
}

command_writer::written command_writer::get_topics_of_namespace(frame_buffer& out,
                                                                std::uint64_t request_id,
                                                                std::string_view ns,
                                                                std::int32_t mode) {
    if (!pb::CommandGetTopicsOfNamespace::Mode_IsValid(mode)) {
        return ::nereus::error(errc::invalid_argument);
    }
    auto* c = scratch(command_type::get_topics_of_namespace).mutable_gettopicsofnamespace();
    c->set_request_id(request_id);
    c->set_namespace_(ns.data(), ns.size());
    c->set_mode(static_cast<pb::CommandGetTopicsOfNamespace::Mode>(mode));
    return write_scratch(out);
}

command_writer::written command_writer::get_schema(frame_buffer& out,
                                                   std::uint64_t request_id,
                                                   std::string_view topic) {
    auto* c = scratch(command_type::get_schema).mutable_getschema();
    c->set_request_id(request_id);
    c->set_topic(topic.data(), topic.size());
    return write_scratch(out);
}

command_writer::written command_writer::consumer_stats(frame_buffer& out,
                                                       std::uint64_t request_id,
                                                       std::uint64_t consumer_id) {
    auto* c = scratch(command_type::consumer_stats).mutable_consumerstats();
    c->set_request_id(request_id);
    c->set_consumer_id(consumer_id);
    return write_scratch(out);
}

}  // namespace nereus::proto
