// Handshake, keep-alive, timeouts, discovery commands, malformed input and graceful stop.

#include "nereus/proto/frame_format.h"

#include "support/broker_fixture.h"
#include <thread>

namespace nereus::broker::test {
namespace {

using proto::command_type;

std::vector<std::byte> be32(std::uint32_t v) {
    std::vector<std::byte> b(4);
    proto::detail::store_be32(b.data(), v);
    return b;
}

TEST_F(BrokerTest, HandshakeNegotiatesVersionAndAdvertisesLimits) {
    start();
    auto c = wire_client::open(server_->port());
    ASSERT_TRUE(c);
    auto r = c->handshake(17);
    ASSERT_TRUE(r);
    EXPECT_FALSE(r->cmd.connected().server_version().empty());
    EXPECT_EQ(r->cmd.connected().protocol_version(), 17);
    EXPECT_EQ(r->cmd.connected().max_message_size(), 5 * 1024 * 1024);

    auto c2 = wire_client::open(server_->port());
    ASSERT_TRUE(c2);
    auto r2 = c2->handshake(25);  // newer than we know: we answer with ours
    ASSERT_TRUE(r2);
    EXPECT_EQ(r2->cmd.connected().protocol_version(), 20);
}

TEST_F(BrokerTest, PingIsAnsweredWithPong) {
    start();
    auto c = connected_client();
    ASSERT_TRUE(c->send([&](proto::frame_buffer& b) { return c->writer().ping(b).has_value(); }));
    EXPECT_TRUE(c->expect(command_type::pong));
}

TEST_F(BrokerTest, BrokerPingsAndClosesSilentConnection) {
    broker_options o;
    o.keepalive_interval = std::chrono::milliseconds(100);
    start(o);
    auto c = connected_client();
    auto ping = c->next(2s);
    ASSERT_TRUE(ping);
    EXPECT_EQ(ping->type, command_type::ping);
    // We never answer: two silent intervals later the broker closes.
    EXPECT_TRUE(c->wait_closed(2s));
}

TEST_F(BrokerTest, AnsweringPingsKeepsConnectionOpen) {
    // 250 ms, not 100: the broker closes after two silent intervals, so a test thread
    // descheduled for 200 ms on a loaded 2-core machine used to miss the window (seen once).
    broker_options o;
    o.keepalive_interval = std::chrono::milliseconds(250);
    start(o);
    auto c = connected_client();
    int pings = 0;
    const auto until = std::chrono::steady_clock::now() + 1500ms;  // spans >= 4 intervals
    while (std::chrono::steady_clock::now() < until) {
        auto f = c->next(200ms);
        if (f && f->type == command_type::ping) {
            ++pings;
            c->send([&](proto::frame_buffer& b) { return c->writer().pong(b).has_value(); });
        }
    }
    EXPECT_GE(pings, 2);
    EXPECT_FALSE(c->closed());
    EXPECT_TRUE(c->send([&](proto::frame_buffer& b) { return c->writer().ping(b).has_value(); }));
    EXPECT_TRUE(c->expect(command_type::pong, 2s));
}

TEST_F(BrokerTest, HandshakeTimeoutClosesConnection) {
    broker_options o;
    o.handshake_timeout = std::chrono::milliseconds(200);
    start(o);
    auto c = wire_client::open(server_->port());
    ASSERT_TRUE(c);
    EXPECT_TRUE(c->wait_closed(3s));
}

TEST_F(BrokerTest, CommandBeforeConnectGetsErrorAndClose) {
    start();
    auto c = wire_client::open(server_->port());
    ASSERT_TRUE(c);
    c->send([&](proto::frame_buffer& b) { return c->writer().lookup(b, "t", 1).has_value(); });
    auto e = c->next(1s);
    ASSERT_TRUE(e);
    EXPECT_EQ(e->type, command_type::error);
    EXPECT_TRUE(c->wait_closed(1s));
}

TEST_F(BrokerTest, HttpRequestOnBinaryPortIsClosedOthersCarryOn) {
    start();
    auto good = connected_client();
    auto c = wire_client::open(server_->port());
    ASSERT_TRUE(c);
    c->send_text("GET /admin/v2/clusters HTTP/1.1\r\nHost: x\r\n\r\n");
    EXPECT_TRUE(c->wait_closed(1s));
    EXPECT_TRUE(
        good->send([&](proto::frame_buffer& b) { return good->writer().ping(b).has_value(); }));
    EXPECT_TRUE(good->expect(command_type::pong));
}

TEST_F(BrokerTest, OversizedFrameClosesConnection) {
    start();
    auto c = connected_client();
    c->send_raw(be32(100U << 20));
    EXPECT_TRUE(c->wait_closed(1s));
}

TEST_F(BrokerTest, GarbageCommandClosesConnection) {
    start();
    auto c = connected_client();
    std::vector<std::byte> f = be32(4 + 5);
    auto cs = be32(5);
    f.insert(f.end(), cs.begin(), cs.end());
    for (int i = 0; i < 5; ++i) {
        f.push_back(std::byte{0xff});
    }
    c->send_raw(f);
    EXPECT_TRUE(c->wait_closed(1s));
}

TEST_F(BrokerTest, TruncatedFrameThenSilenceIsClosedQuickly) {
    broker_options o;
    o.frame_stall_timeout = std::chrono::milliseconds(100);  // keep-alive stays at 30 s
    start(o);
    auto c = connected_client();
    auto f = be32(100);  // announces 100 bytes, sends 4
    auto more = be32(7);
    f.insert(f.end(), more.begin(), more.end());
    const auto t0 = std::chrono::steady_clock::now();
    c->send_raw(f);
    EXPECT_TRUE(c->wait_closed(2s));
    EXPECT_LT(std::chrono::steady_clock::now() - t0, 1s);
}

TEST_F(BrokerTest, TruncatedFrameBeforeConnectIsClosedQuickly) {
    start();  // default stall timeout (2 s) is below the handshake timeout (10 s)
    auto c = wire_client::open(server_->port());
    ASSERT_TRUE(c);
    c->send_raw(be32(50));
    EXPECT_TRUE(c->wait_closed(4s));
}

TEST_F(BrokerTest, UnknownCommandTypeGetsTypedErrorAndConnectionStays) {
    start();
    auto c = connected_client();
    // BaseCommand{type = 64 (WATCH_TOPIC_LIST)}: a type our proto does not describe.
    std::vector<std::byte> f = be32(4 + 2);
    auto cs = be32(2);
    f.insert(f.end(), cs.begin(), cs.end());
    f.push_back(std::byte{0x08});
    f.push_back(std::byte{0x40});
    c->send_raw(f);
    auto e = c->expect(command_type::error, 1s);
    ASSERT_TRUE(e);
    EXPECT_EQ(e->cmd.error().error(), proto::pb::NotAllowedError);
    EXPECT_TRUE(c->send([&](proto::frame_buffer& b) { return c->writer().ping(b).has_value(); }));
    EXPECT_TRUE(c->expect(command_type::pong));
}

TEST_F(BrokerTest, LookupAnswersConnectWithOwnAddress) {
    start();
    auto c = connected_client();
    c->send(
        [&](proto::frame_buffer& b) { return c->writer().lookup(b, "my-topic", 7).has_value(); });
    auto r = c->expect(command_type::lookup_response);
    ASSERT_TRUE(r);
    const auto& l = r->cmd.lookuptopicresponse();
    EXPECT_EQ(l.request_id(), 7U);
    EXPECT_TRUE(l.has_response());
    EXPECT_EQ(l.response(), proto::pb::CommandLookupTopicResponse::Connect);
    EXPECT_TRUE(l.authoritative());
    EXPECT_EQ(l.brokerserviceurl(), "pulsar://127.0.0.1:" + std::to_string(server_->port()));
}

TEST_F(BrokerTest, PartitionedMetadataIsZeroForNonPartitionedTopics) {
    start();
    auto c = connected_client();
    c->send([&](proto::frame_buffer& b) {
        return c->writer().partitioned_metadata(b, "persistent://public/default/t", 3).has_value();
    });
    auto r = c->expect(command_type::partitioned_metadata_response);
    ASSERT_TRUE(r);
    const auto& m = r->cmd.partitionmetadataresponse();
    EXPECT_EQ(m.request_id(), 3U);
    EXPECT_TRUE(m.has_response());
    EXPECT_EQ(m.response(), proto::pb::CommandPartitionedTopicMetadataResponse::Success);
    EXPECT_EQ(m.partitions(), 0U);
}

TEST_F(BrokerTest, InvalidTopicNameInLookupFails) {
    start();
    auto c = connected_client();
    c->send([&](proto::frame_buffer& b) { return c->writer().lookup(b, "a/b", 1).has_value(); });
    auto r = c->expect(command_type::lookup_response);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->cmd.lookuptopicresponse().response(),
              proto::pb::CommandLookupTopicResponse::Failed);
}

TEST_F(BrokerTest, GetSchemaAnswersNoSchema) {
    start();
    auto c = connected_client();
    c->send([&](proto::frame_buffer& b) { return c->writer().get_schema(b, 9, "t").has_value(); });
    auto r = c->expect(command_type::get_schema_response);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->cmd.getschemaresponse().request_id(), 9U);
    EXPECT_EQ(r->cmd.getschemaresponse().error_code(), proto::pb::TopicNotFound);
}

TEST_F(BrokerTest, TransactionsAreRefusedWithTheirOwnResponse) {
    start();
    auto c = connected_client();
    ASSERT_TRUE(c->send([&](proto::frame_buffer& b) {
        auto& cmd = c->writer().scratch(command_type::tc_client_connect_request);
        cmd.mutable_tcclientconnectrequest()->set_request_id(12);
        cmd.mutable_tcclientconnectrequest()->set_tc_id(0);
        return c->writer().write_scratch(b).has_value();
    }));
    auto r = c->expect(command_type::tc_client_connect_response);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->cmd.tcclientconnectresponse().request_id(), 12U);
    EXPECT_EQ(r->cmd.tcclientconnectresponse().error(), proto::pb::NotAllowedError);
}

TEST_F(BrokerTest, StopClosesClientsAndJoins) {
    start();
    auto a = connected_client();
    auto b = connected_client();
    server_->stop();
    EXPECT_TRUE(a->wait_closed(2s));
    EXPECT_TRUE(b->wait_closed(2s));
    server_.reset();
}

}  // namespace
}  // namespace nereus::broker::test
