// Every builder round-trips through the decoder with the fields stock clients rely on; strict
// sending and protocol-version gates refuse what a peer must not see.

#include "nereus/proto/commands.h"

#include "nereus/proto/errc.h"
#include "nereus/proto/frame_decoder.h"
#include "nereus/proto/pulsar_api.h"

#include <gtest/gtest.h>

#include "support/bytes.h"

namespace nereus::proto {
namespace {

class Commands : public ::testing::Test {
protected:
    // Decodes the single frame in out_ (moved to kept_, so views stay valid) and clears out_.
    const pb::BaseCommand& decoded(command_type expected) {
        kept_ = out_;
        out_.clear();
        auto r = decoder_.decode(kept_);
        EXPECT_TRUE(r.has_value()) << (r ? "" : r.error().message());
        if (!r || !r->complete) {
            ADD_FAILURE() << "no complete frame";
            static const pb::BaseCommand empty;
            return empty;
        }
        EXPECT_EQ(r->frame.size, kept_.size());
        EXPECT_EQ(r->frame.type(), expected);
        EXPECT_FALSE(r->frame.message_error);
        last_ = r->frame;
        return last_.command();
    }

    command_writer w_;
    frame_decoder decoder_;
    frame_buffer out_;
    frame_buffer kept_;
    frame_view last_;
};

TEST_F(Commands, Connected) {
    ASSERT_TRUE(w_.connected(out_, {.server_version = "Nereus 0.1",
                                    .protocol_version = negotiate_protocol_version(21)}));
    const auto& c = decoded(command_type::connected).connected();
    EXPECT_EQ(c.server_version(), "Nereus 0.1");
    EXPECT_EQ(c.protocol_version(), 20);
    EXPECT_EQ(c.max_message_size(), 5 * 1024 * 1024);
    EXPECT_EQ(negotiate_protocol_version(17), 17);
}

TEST_F(Commands, LookupResponsesAlwaysCarryResponse) {
    ASSERT_TRUE(w_.lookup_connect(out_, 2, "pulsar://127.0.0.1:6650"));
    const auto& a = decoded(command_type::lookup_response).lookuptopicresponse();
    EXPECT_TRUE(a.has_response());
    EXPECT_EQ(a.response(), pb::CommandLookupTopicResponse::Connect);
    EXPECT_EQ(a.brokerserviceurl(), "pulsar://127.0.0.1:6650");
    EXPECT_FALSE(a.has_brokerserviceurltls());
    EXPECT_TRUE(a.authoritative());
    EXPECT_EQ(a.request_id(), 2u);

    ASSERT_TRUE(w_.lookup_redirect(out_, 3, "pulsar://b:6650", "pulsar+ssl://b:6651"));
    const auto& r = decoded(command_type::lookup_response).lookuptopicresponse();
    EXPECT_EQ(r.response(), pb::CommandLookupTopicResponse::Redirect);
    EXPECT_EQ(r.brokerserviceurltls(), "pulsar+ssl://b:6651");

    ASSERT_TRUE(w_.lookup_failed(out_, 4, server_error::topic_not_found, "no"));
    const auto& f = decoded(command_type::lookup_response).lookuptopicresponse();
    EXPECT_EQ(f.response(), pb::CommandLookupTopicResponse::Failed);
    EXPECT_EQ(f.error(), pb::TopicNotFound);
    EXPECT_EQ(f.message(), "no");
}

TEST_F(Commands, PartitionedMetadata) {
    ASSERT_TRUE(w_.partitioned_metadata_ok(out_, 1, 0));
    const auto& a =
        decoded(command_type::partitioned_metadata_response).partitionmetadataresponse();
    EXPECT_TRUE(a.has_response());
    EXPECT_EQ(a.response(), pb::CommandPartitionedTopicMetadataResponse::Success);
    EXPECT_TRUE(a.has_partitions());
    EXPECT_EQ(a.partitions(), 0u);
    ASSERT_TRUE(w_.partitioned_metadata_failed(out_, 1, server_error::metadata_error, "bad"));
    const auto& b =
        decoded(command_type::partitioned_metadata_response).partitionmetadataresponse();
    EXPECT_EQ(b.response(), pb::CommandPartitionedTopicMetadataResponse::Failed);
    EXPECT_EQ(b.error(), pb::MetadataError);
}

TEST_F(Commands, ProducerSuccessSendReceiptSendError) {
    ASSERT_TRUE(w_.producer_success(out_, {.request_id = 0, .producer_name = "standalone-0-1"}));
    const auto& p = decoded(command_type::producer_success).producer_success();
    EXPECT_EQ(p.producer_name(), "standalone-0-1");
    EXPECT_TRUE(p.has_last_sequence_id());
    EXPECT_EQ(p.last_sequence_id(), -1);
    EXPECT_TRUE(p.producer_ready());

    ASSERT_TRUE(w_.send_receipt(out_, 1, 10, 12, {.ledger_id = 5, .entry_id = 6}));
    const auto& r = decoded(command_type::send_receipt).send_receipt();
    EXPECT_EQ(r.producer_id(), 1u);
    EXPECT_EQ(r.sequence_id(), 10u);
    EXPECT_EQ(r.highest_sequence_id(), 12u);
    EXPECT_EQ(r.message_id().ledgerid(), 5u);
    EXPECT_EQ(r.message_id().entryid(), 6u);
    EXPECT_FALSE(r.message_id().has_partition());

    ASSERT_TRUE(w_.send_error(out_, 1, 10, server_error::checksum_error, ""));
    const auto& e = decoded(command_type::send_error).send_error();
    EXPECT_EQ(e.error(), pb::ChecksumError);
    EXPECT_TRUE(e.has_message());  // required, even when empty
}

TEST_F(Commands, SuccessErrorCloses) {
    ASSERT_TRUE(w_.success(out_, 9));
    EXPECT_EQ(decoded(command_type::success).success().request_id(), 9u);
    ASSERT_TRUE(w_.error_response(out_, broker_initiated_request_id,
                                  server_error::authentication_error, "bad token"));
    const auto& e = decoded(command_type::error).error();
    EXPECT_EQ(e.request_id(), ~0ull);
    EXPECT_EQ(e.error(), pb::AuthenticationError);
    ASSERT_TRUE(w_.close_producer(out_, 3, 4));
    EXPECT_EQ(decoded(command_type::close_producer).close_producer().request_id(), 4u);
    ASSERT_TRUE(w_.close_consumer(out_, 3));
    EXPECT_EQ(decoded(command_type::close_consumer).close_consumer().request_id(), ~0ull);
}

TEST_F(Commands, MessageAlwaysCarriesChecksumForModernPeers) {
    pb::MessageMetadata md;
    md.set_producer_name("p");
    md.set_sequence_id(1);
    md.set_publish_time(2);
    md.set_num_messages_in_batch(3);
    frame_buffer stored;  // as stored from a SEND without checksum
    ASSERT_TRUE(append_headers_and_payload(stored, md, test::bytes_of("abc"), false));
    const std::int64_t ack_set[] = {5};
    ASSERT_TRUE(w_.message(out_, 7, {.ledger_id = 1, .entry_id = 2}, 3, ack_set, stored));
    const auto& m = decoded(command_type::message).message();
    EXPECT_EQ(m.consumer_id(), 7u);
    EXPECT_EQ(m.redelivery_count(), 3u);
    ASSERT_EQ(m.ack_set_size(), 1);
    EXPECT_EQ(m.ack_set(0), 5);
    EXPECT_EQ(last_.checksum, checksum_state::valid);
    ASSERT_NE(last_.metadata(), nullptr);
    EXPECT_EQ(last_.metadata()->num_messages_in_batch(), 3);
    EXPECT_EQ(test::string_of(last_.payload), "abc");

    // Stored WITH a checksum: sent verbatim.
    frame_buffer stored_crc;
    ASSERT_TRUE(append_headers_and_payload(stored_crc, md, test::bytes_of("abc")));
    ASSERT_TRUE(w_.message(out_, 7, {.ledger_id = 1, .entry_id = 2}, 0, {}, stored_crc));
    decoded(command_type::message);
    EXPECT_EQ(test::to_hex(last_.headers_and_payload), test::to_hex(stored_crc));
    EXPECT_FALSE(last_.command().message().has_redelivery_count());

    // Consumers below v11 get no checksum.
    w_.set_peer_protocol_version(10);
    ASSERT_TRUE(w_.message(out_, 7, {.ledger_id = 1, .entry_id = 2}, 0, {}, stored_crc));
    decoded(command_type::message);
    EXPECT_EQ(last_.checksum, checksum_state::absent);
    EXPECT_EQ(test::string_of(last_.payload), "abc");
}

TEST_F(Commands, AckResponseLastMessageIdTopicsSchemaStats) {
    ASSERT_TRUE(w_.ack_response(out_, 1, 2));
    const auto& a = decoded(command_type::ack_response).ackresponse();
    EXPECT_EQ(a.request_id(), 2u);
    EXPECT_FALSE(a.has_error());
    ASSERT_TRUE(w_.ack_response(out_, 1, 3, server_error::persistence_error, "io"));
    EXPECT_EQ(decoded(command_type::ack_response).ackresponse().error(), pb::PersistenceError);

    ASSERT_TRUE(w_.get_last_message_id_response(out_, 4,
                                                {.ledger_id = no_position, .entry_id = no_position},
                                                message_id{.ledger_id = 1, .entry_id = 0}));
    const auto& l = decoded(command_type::get_last_message_id_response).getlastmessageidresponse();
    EXPECT_EQ(l.last_message_id().entryid(), ~0ull);
    EXPECT_EQ(l.consumer_mark_delete_position().ledgerid(), 1u);

    const std::string topics[] = {"persistent://public/default/a",
                                  "persistent://public/default/b-partition-0"};
    ASSERT_TRUE(w_.get_topics_of_namespace_response(out_, 5, topics));
    const auto& t =
        decoded(command_type::get_topics_of_namespace_response).gettopicsofnamespaceresponse();
    ASSERT_EQ(t.topics_size(), 2);
    EXPECT_EQ(t.topics(1), topics[1]);
    EXPECT_FALSE(t.filtered());

    ASSERT_TRUE(w_.get_schema_response_error(out_, 6));
    const auto& s = decoded(command_type::get_schema_response).getschemaresponse();
    EXPECT_EQ(s.error_code(), pb::TopicNotFound);
    EXPECT_FALSE(s.has_schema());

    ASSERT_TRUE(w_.consumer_stats_response(
        out_, {.request_id = 7, .consumer_name = "c", .available_permits = 10, .type = "Shared"}));
    const auto& st = decoded(command_type::consumer_stats_response).consumerstatsresponse();
    EXPECT_EQ(st.consumername(), "c");
    EXPECT_EQ(st.availablepermits(), 10u);
    EXPECT_FALSE(st.has_error_code());
    ASSERT_TRUE(w_.consumer_stats_error(out_, 8, server_error::consumer_not_found, "?"));
    EXPECT_EQ(decoded(command_type::consumer_stats_response).consumerstatsresponse().error_code(),
              pb::ConsumerNotFound);

    ASSERT_TRUE(w_.active_consumer_change(out_, 9, true));
    EXPECT_TRUE(decoded(command_type::active_consumer_change).active_consumer_change().is_active());

    ASSERT_TRUE(w_.get_or_create_schema_response(out_, 10, test::bytes_of("v1")));
    EXPECT_EQ(decoded(command_type::get_or_create_schema_response)
                  .getorcreateschemaresponse()
                  .schema_version(),
              "v1");
    ASSERT_TRUE(w_.tc_client_connect_response(out_, 11, server_error::not_allowed_error, "no"));
    EXPECT_EQ(decoded(command_type::tc_client_connect_response).tcclientconnectresponse().error(),
              pb::NotAllowedError);
}

TEST_F(Commands, ClientCommandsRoundTrip) {
    ASSERT_TRUE(w_.connect(
        out_, {.client_version = "Nereus-Client-0.1", .supports_broker_entry_metadata = true}));
    const auto& c = decoded(command_type::connect).connect();
    EXPECT_EQ(c.client_version(), "Nereus-Client-0.1");
    EXPECT_EQ(c.protocol_version(), nereus_protocol_version);
    EXPECT_EQ(c.auth_method_name(), "none");
    EXPECT_TRUE(c.feature_flags().supports_broker_entry_metadata());

    ASSERT_TRUE(w_.partitioned_metadata(out_, "persistent://public/default/t", 1));
    EXPECT_EQ(decoded(command_type::partitioned_metadata).partitionmetadata().request_id(), 1u);
    ASSERT_TRUE(w_.lookup(out_, "persistent://public/default/t", 2));
    EXPECT_EQ(decoded(command_type::lookup).lookuptopic().topic(), "persistent://public/default/t");

    const key_value props[] = {{"a", "b"}};
    ASSERT_TRUE(w_.producer(
        out_,
        {.topic = "t", .producer_id = 3, .request_id = 4, .access_mode = 1, .metadata = props}));
    const auto& p = decoded(command_type::producer).producer();
    EXPECT_FALSE(p.has_producer_name());
    EXPECT_FALSE(p.user_provided_producer_name());
    EXPECT_EQ(p.producer_access_mode(), pb::Exclusive);
    EXPECT_EQ(p.metadata(0).value(), "b");

    const std::string schema_json = "{}";
    const schema_info auto_consume{.name = "s",
                                   .data = std::as_bytes(std::span(schema_json)),
                                   .type = pb::Schema::AutoConsume};
    subscribe_args sa{
        .topic = "t",
        .subscription = "s",
        .sub_type = 3,
        .consumer_id = 5,
        .request_id = 6,
        .consumer_name = "c",
        .durable = false,
        .start_message_id = message_id{.ledger_id = 1, .entry_id = 2, .batch_index = 0},
        .initial_position = 1,
        .subscription_properties = props,
        .schema = &auto_consume};
    ASSERT_TRUE(w_.subscribe(out_, sa));
    const auto& s = decoded(command_type::subscribe).subscribe();
    EXPECT_EQ(s.subtype(), pb::CommandSubscribe::Key_Shared);
    EXPECT_FALSE(s.durable());
    EXPECT_EQ(s.start_message_id().batch_index(), 0);
    EXPECT_EQ(s.initialposition(), pb::CommandSubscribe::Earliest);
    EXPECT_EQ(s.subscription_properties(0).key(), "a");
    EXPECT_TRUE(s.has_schema());  // peer at latest version
    w_.set_peer_protocol_version(20);
    ASSERT_TRUE(w_.subscribe(out_, sa));
    EXPECT_FALSE(decoded(command_type::subscribe).subscribe().has_schema());  // gated: < v21

    const message_id ids[] = {{.ledger_id = 1, .entry_id = 2},
                              {.ledger_id = 1, .entry_id = 3, .batch_index = 1, .batch_size = 3}};
    ASSERT_TRUE(w_.ack(out_, {.consumer_id = 5, .ids = ids, .request_id = 77}));
    const auto& a = decoded(command_type::ack).ack();
    EXPECT_EQ(a.ack_type(), pb::CommandAck::Individual);
    ASSERT_EQ(a.message_id_size(), 2);
    EXPECT_EQ(a.message_id(1).batch_size(), 3);
    EXPECT_EQ(a.request_id(), 77u);
    EXPECT_EQ(w_.ack(out_, {.consumer_id = 5, .cumulative = true, .ids = ids}).error(),
              errc::invalid_argument);

    ASSERT_TRUE(w_.unsubscribe(out_, 5, 8));
    decoded(command_type::unsubscribe);
    ASSERT_TRUE(w_.seek(out_, 5, 9, {.ledger_id = 1, .entry_id = 0}));
    EXPECT_TRUE(decoded(command_type::seek).seek().has_message_id());
    ASSERT_TRUE(w_.seek_by_time(out_, 5, 10, 1234));
    EXPECT_EQ(decoded(command_type::seek).seek().message_publish_time(), 1234u);
    ASSERT_TRUE(w_.redeliver_unacknowledged(out_, 5, ids));
    EXPECT_EQ(decoded(command_type::redeliver_unacknowledged_messages)
                  .redeliverunacknowledgedmessages()
                  .message_ids_size(),
              2);
    ASSERT_TRUE(w_.get_last_message_id(out_, 5, 11));
    decoded(command_type::get_last_message_id);
    ASSERT_TRUE(w_.get_topics_of_namespace(out_, 12, "public/default", 2));
    EXPECT_EQ(decoded(command_type::get_topics_of_namespace).gettopicsofnamespace().namespace_(),
              "public/default");
    ASSERT_TRUE(w_.get_schema(out_, 13, "t"));
    decoded(command_type::get_schema);
    ASSERT_TRUE(w_.consumer_stats(out_, 14, 5));
    EXPECT_EQ(decoded(command_type::consumer_stats).consumerstats().consumer_id(), 5u);
}

TEST_F(Commands, ProtocolVersionGates) {
    w_.set_peer_protocol_version(11);
    // Commands a v11 client does not know.
    EXPECT_EQ(w_.active_consumer_change(out_, 1, true).error(), errc::unsupported_by_peer);
    EXPECT_EQ(w_.get_last_message_id_response(out_, 1, {}, std::nullopt).error(),
              errc::unsupported_by_peer);
    EXPECT_EQ(w_.ack_response(out_, 1, 1).error(), errc::unsupported_by_peer);
    EXPECT_TRUE(out_.empty());
    w_.set_peer_protocol_version(4);
    EXPECT_EQ(w_.close_consumer(out_, 1).error(), errc::unsupported_by_peer);
    EXPECT_TRUE(w_.close_consumer(out_, 1, 5));  // a reply to the client's own close is fine
    out_.clear();
    w_.set_peer_protocol_version(0);
    EXPECT_EQ(w_.ping(out_).error(), errc::unsupported_by_peer);
    EXPECT_EQ(w_.reached_end_of_topic(out_, 1).error(), errc::unsupported_by_peer);
    w_.set_peer_protocol_version(20);
    EXPECT_TRUE(w_.reached_end_of_topic(out_, 1));

    EXPECT_FALSE(peer_knows(command_type::topic_migrated, 19));
    EXPECT_TRUE(peer_knows(command_type::topic_migrated, 20));
    EXPECT_TRUE(send_broker_entry_metadata(18, true));
    EXPECT_FALSE(send_broker_entry_metadata(17, true));
    EXPECT_FALSE(send_broker_entry_metadata(21, false));
    EXPECT_FALSE(peer_supports_checksum(5));
    EXPECT_TRUE(peer_supports_ack_receipt(17));
}

TEST_F(Commands, SendChecksumGatedOnBrokerVersion) {
    pb::MessageMetadata md;
    md.set_producer_name("p");
    md.set_sequence_id(0);
    md.set_publish_time(0);
    ASSERT_TRUE(w_.send(out_, {.producer_id = 1, .sequence_id = 0}, md, test::bytes_of("x")));
    decoded(command_type::send);
    EXPECT_EQ(last_.checksum, checksum_state::valid);
    w_.set_peer_protocol_version(5);
    ASSERT_TRUE(w_.send(out_, {.producer_id = 1, .sequence_id = 0}, md, test::bytes_of("x")));
    decoded(command_type::send);
    EXPECT_EQ(last_.checksum, checksum_state::absent);
    // Metadata missing required fields is refused.
    pb::MessageMetadata incomplete;
    EXPECT_EQ(w_.send(out_, {}, incomplete, {}).error(), errc::missing_required_field);
    EXPECT_TRUE(out_.empty());
}

TEST_F(Commands, EncoderRefusesOversizedFrames) {
    w_.options().max_frame_size = 64;
    const std::string topic(100, 't');
    EXPECT_EQ(w_.lookup(out_, topic, 1).error(), errc::frame_too_large);
    EXPECT_TRUE(out_.empty());
}

TEST_F(Commands, StoredPayloadMustNotStartWithBrokerEntryMetadata) {
    auto& cmd = w_.scratch(command_type::message);
    cmd.mutable_message()->set_consumer_id(1);
    cmd.mutable_message()->mutable_message_id()->set_ledgerid(1);
    cmd.mutable_message()->mutable_message_id()->set_entryid(1);
    const auto bad = test::hex("0e 02 00 00 00 00 00 00 00 00");
    EXPECT_EQ(append_stored_payload_frame(out_, cmd, bad).error(), errc::invalid_argument);
    EXPECT_EQ(append_stored_payload_frame(out_, cmd, test::hex("00 00")).error(),
              errc::invalid_argument);
}

TEST_F(Commands, BufferIsReusedWithoutGrowing) {
    out_.reserve(4096);
    const auto* data = out_.data();
    for (int i = 0; i < 1000; ++i) {
        out_.clear();
        ASSERT_TRUE(w_.send_receipt(out_, 1, static_cast<std::uint64_t>(i), 0,
                                    {.ledger_id = 1, .entry_id = static_cast<std::uint64_t>(i)}));
    }
    EXPECT_EQ(out_.data(), data);
}

TEST(CommandType, Names) {
    EXPECT_EQ(to_string(command_type::lookup_response), "LOOKUP_RESPONSE");
    EXPECT_EQ(to_string(command_type::topic_migrated), "TOPIC_MIGRATED");
    EXPECT_EQ(to_string(static_cast<command_type>(99)), "UNKNOWN");
    EXPECT_TRUE(is_known_command_type(38));
    EXPECT_FALSE(is_known_command_type(68));
}

}  // namespace
}  // namespace nereus::proto
