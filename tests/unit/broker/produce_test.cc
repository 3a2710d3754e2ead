// PRODUCER (names, access modes) and SEND → SEND_RECEIPT / SEND_ERROR.

#include "nereus/broker/topic.h"

#include "support/broker_fixture.h"
#include <array>
#include <chrono>
#include <thread>

namespace nereus::broker::test {
namespace {

using proto::command_type;

constexpr std::string_view topic = "persistent://public/default/produce";

TEST_F(BrokerTest, ProducerGetsGeneratedNameAndNoLastSequence) {
    start();
    auto c = connected_client();
    proto::producer_args a;
    a.topic = topic;
    a.producer_id = 0;
    a.request_id = 1;
    c->send([&](proto::frame_buffer& b) { return c->writer().producer(b, a).has_value(); });
    auto r = c->expect(command_type::producer_success);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->cmd.producer_success().request_id(), 1U);
    EXPECT_FALSE(r->cmd.producer_success().producer_name().empty());
    EXPECT_EQ(r->cmd.producer_success().last_sequence_id(), -1);
}

TEST_F(BrokerTest, SendsGetReceiptsInOrderWithEntryIds) {
    start();
    auto c = connected_client();
    ASSERT_FALSE(create_producer(*c, topic, 0, 1).empty());
    for (int i = 0; i < 100; ++i) {
        ASSERT_TRUE(c->send_message(0, static_cast<std::uint64_t>(i),
                                    std::string("m").append(std::to_string(i))));
    }
    std::uint64_t ledger = 0;
    for (int i = 0; i < 100; ++i) {
        auto r = c->expect(command_type::send_receipt);
        ASSERT_TRUE(r) << i;
        const auto& s = r->cmd.send_receipt();
        EXPECT_EQ(s.producer_id(), 0U);
        EXPECT_EQ(s.sequence_id(), static_cast<std::uint64_t>(i));
        EXPECT_EQ(s.highest_sequence_id(), static_cast<std::uint64_t>(i));
        EXPECT_EQ(s.message_id().entryid(), static_cast<std::uint64_t>(i));
        if (i == 0) {
            ledger = s.message_id().ledgerid();
        }
        EXPECT_EQ(s.message_id().ledgerid(), ledger);
    }
}

// Finished appends are handed back per producer (connection.h): two producers of one
// connection, on two topics, with interleaved SENDs each get every receipt, in their own SEND
// order, with their own entry ids.
TEST_F(BrokerTest, TwoProducersOfOneConnectionGetTheirOwnReceiptsInOrder) {
    start();
    auto c = connected_client();
    ASSERT_FALSE(create_producer(*c, topic, 0, 1).empty());
    ASSERT_FALSE(create_producer(*c, "persistent://public/default/produce-2", 1, 2).empty());
    constexpr int n = 300;
    for (int i = 0; i < n; ++i) {
        for (std::uint64_t p = 0; p < 2; ++p) {
            ASSERT_TRUE(c->send_message(p, static_cast<std::uint64_t>(1000 * p + i),
                                        std::string("m").append(std::to_string(i))));
        }
    }
    std::array<std::uint64_t, 2> next{0, 0};
    for (int i = 0; i < 2 * n; ++i) {
        auto r = c->expect(command_type::send_receipt);
        ASSERT_TRUE(r) << i;
        const auto& s = r->cmd.send_receipt();
        ASSERT_LT(s.producer_id(), 2U);
        auto& k = next[s.producer_id()];
        EXPECT_EQ(s.sequence_id(), 1000 * s.producer_id() + k);
        EXPECT_EQ(s.message_id().entryid(), k);
        ++k;
    }
    EXPECT_EQ(next[0], static_cast<std::uint64_t>(n));
    EXPECT_EQ(next[1], static_cast<std::uint64_t>(n));
}

TEST_F(BrokerTest, ChecksumMismatchGetsSendErrorAndConnectionStays) {
    start();
    auto c = connected_client();
    ASSERT_FALSE(create_producer(*c, topic, 0, 1).empty());
    proto::pb::MessageMetadata md;
    md.set_producer_name("p");
    md.set_sequence_id(5);
    md.set_publish_time(1);
    proto::frame_buffer f;
    proto::send_args s;
    s.producer_id = 0;
    s.sequence_id = 5;
    const std::string payload = "hello";
    ASSERT_TRUE(
        c->writer().send(f, s, md, std::as_bytes(std::span(payload.data(), payload.size()))));
    f.back() ^= std::byte{0x01};  // corrupt the last payload byte
    c->send_raw(f);
    auto e = c->expect(command_type::send_error);
    ASSERT_TRUE(e);
    EXPECT_EQ(e->cmd.send_error().sequence_id(), 5U);
    EXPECT_EQ(e->cmd.send_error().error(), proto::pb::ChecksumError);
    EXPECT_EQ(produce(*c, 0, 1, 6), 1);
}

TEST_F(BrokerTest, SendForUnknownProducerClosesConnection) {
    start();
    auto c = connected_client();
    c->send_message(42, 0, "x");
    EXPECT_TRUE(c->wait_closed(1s));
}

TEST_F(BrokerTest, ExclusiveProducerKeepsOthersOut) {
    start();
    auto a = connected_client();
    ASSERT_FALSE(create_producer(*a, topic, 0, 1, /*Exclusive*/ 1).empty());
    auto b = connected_client();
    for (std::int32_t mode : {0, 1}) {
        proto::producer_args p;
        p.topic = topic;
        p.producer_id = static_cast<std::uint64_t>(mode);
        p.request_id = 10 + static_cast<std::uint64_t>(mode);
        p.access_mode = mode;
        b->send([&](proto::frame_buffer& f) { return b->writer().producer(f, p).has_value(); });
        auto e = b->expect(command_type::error);
        ASSERT_TRUE(e) << mode;
        EXPECT_EQ(e->cmd.error().request_id(), p.request_id);
        EXPECT_EQ(e->cmd.error().error(), proto::pb::ProducerBusy);
    }
}

TEST_F(BrokerTest, ExclusiveRefusedWithProducerBusyError) {
    start();
    auto a = connected_client();
    ASSERT_FALSE(create_producer(*a, topic, 0, 1, 0).empty());
    auto b = connected_client();
    proto::producer_args p;
    p.topic = topic;
    p.producer_id = 0;
    p.request_id = 4;
    p.access_mode = 1;
    b->send([&](proto::frame_buffer& f) { return b->writer().producer(f, p).has_value(); });
    auto e = b->expect(command_type::error);
    ASSERT_TRUE(e);
    EXPECT_EQ(e->cmd.error().request_id(), 4U);
    EXPECT_EQ(e->cmd.error().error(), proto::pb::ProducerBusy);
}

TEST_F(BrokerTest, WaitForExclusiveIsGrantedWhenTheTopicFrees) {
    start();
    auto a = connected_client();
    ASSERT_FALSE(create_producer(*a, topic, 0, 1, 1).empty());
    auto b = connected_client();
    proto::producer_args p;
    p.topic = topic;
    p.producer_id = 0;
    p.request_id = 2;
    p.access_mode = 2;  // WaitForExclusive
    b->send([&](proto::frame_buffer& f) { return b->writer().producer(f, p).has_value(); });
    EXPECT_FALSE(b->expect(command_type::producer_success, 200ms));
    a->send(
        [&](proto::frame_buffer& f) { return a->writer().close_producer(f, 0, 9).has_value(); });
    ASSERT_TRUE(a->expect(command_type::success));
    auto g = b->expect(command_type::producer_success, 2s);
    ASSERT_TRUE(g);
    EXPECT_EQ(g->cmd.producer_success().request_id(), 2U);
    EXPECT_EQ(produce(*b, 0, 3), 3);
}

TEST_F(BrokerTest, DuplicateProducerNameIsRefused) {
    start();
    auto a = connected_client();
    proto::producer_args p;
    p.topic = topic;
    p.producer_id = 0;
    p.request_id = 1;
    p.producer_name = std::string_view("named");
    a->send([&](proto::frame_buffer& f) { return a->writer().producer(f, p).has_value(); });
    auto ok = a->expect(command_type::producer_success);
    ASSERT_TRUE(ok);
    EXPECT_EQ(ok->cmd.producer_success().producer_name(), "named");
    auto b = connected_client();
    b->send([&](proto::frame_buffer& f) { return b->writer().producer(f, p).has_value(); });
    auto e = b->expect(command_type::error);
    ASSERT_TRUE(e);
    EXPECT_EQ(e->cmd.error().error(), proto::pb::ProducerBusy);
}

TEST_F(BrokerTest, CloseProducerAnswersSuccessEvenWhenUnknown) {
    start();
    auto c = connected_client();
    ASSERT_FALSE(create_producer(*c, topic, 0, 1).empty());
    EXPECT_EQ(produce(*c, 0, 5), 5);
    c->send(
        [&](proto::frame_buffer& f) { return c->writer().close_producer(f, 0, 2).has_value(); });
    auto s = c->expect(command_type::success);
    ASSERT_TRUE(s);
    EXPECT_EQ(s->cmd.success().request_id(), 2U);
    c->send(
        [&](proto::frame_buffer& f) { return c->writer().close_producer(f, 77, 3).has_value(); });
    auto s2 = c->expect(command_type::success);
    ASSERT_TRUE(s2);
    EXPECT_EQ(s2->cmd.success().request_id(), 3U);
}

TEST_F(BrokerTest, MessageOverTheLimitGetsAClearSendError) {
    broker_options o;
    o.max_message_size = 1000;
    start(o);
    auto c = connected_client();
    ASSERT_FALSE(create_producer(*c, topic, 0, 1).empty());
    c->send_message(0, 0, std::string(2000, 'x'));  // over the limit, within the frame padding
    auto e = c->expect(command_type::send_error);
    ASSERT_TRUE(e);
    EXPECT_EQ(e->cmd.send_error().error(), proto::pb::NotAllowedError);
    EXPECT_NE(e->cmd.send_error().message().find("max_message_size"), std::string::npos);
    EXPECT_EQ(produce(*c, 0, 1, 1), 1);               // the connection carries on
    c->send_message(0, 2, std::string(20'000, 'x'));  // over limit + padding: closed
    EXPECT_TRUE(c->wait_closed(1s));
}

TEST_F(BrokerTest, FailedAppendIsAnsweredWithSendErrorNeverAReceipt) {
    memory_backend_options mo;
    mo.fail_appends = std::make_error_code(std::errc::io_error);
    start({}, mo);
    auto c = connected_client();
    ASSERT_FALSE(create_producer(*c, topic, 0, 1).empty());
    c->send_message(0, 0, "x");
    auto e = c->expect(command_type::send_error);
    ASSERT_TRUE(e);
    EXPECT_EQ(e->cmd.send_error().error(), proto::pb::PersistenceError);
    EXPECT_FALSE(c->expect(command_type::send_receipt, 100ms));
}

// Appends whose completions come after their producer left: the producer (which the completions
// reach by a plain pointer) lives until the last one was handed over, then goes. The topic's
// reference count shows it: the registry's, the test's, and the producer's while it lives.
// (ASan: a producer freed too early is a use after free in release() below.)
bool wait_use_count(const std::shared_ptr<broker::topic>& t, long want) {
    for (int i = 0; i < 500 && t.use_count() != want; ++i) {
        std::this_thread::sleep_for(10ms);
    }
    return t.use_count() == want;
}

// A broker whose appends wait in `hold`, one producer (id 0) with `n` SENDs in flight, and
// the one open topic.
class HeldAppendsTest : public BrokerTest {
protected:
    void start_with_sends_in_flight(std::uint64_t n) {
        memory_backend_options mo;
        mo.hold_appends = hold_;
        start({}, mo);
        c_ = connected_client();
        ASSERT_FALSE(create_producer(*c_, topic, 0, 1).empty());
        for (std::uint64_t i = 0; i < n; ++i) {
            ASSERT_TRUE(c_->send_message(0, i, "in flight"));
        }
        for (int i = 0; i < 500 && hold_->held() < n; ++i) {
            std::this_thread::sleep_for(10ms);
        }
        ASSERT_EQ(hold_->held(), n);
        auto open = server_->topics().open_topics();
        ASSERT_EQ(open.size(), 1U);
        t_ = open.front();
    }

    std::shared_ptr<append_hold> hold_ = std::make_shared<append_hold>();
    std::unique_ptr<wire_client> c_;
    std::shared_ptr<broker::topic> t_;
};

TEST_F(HeldAppendsTest, AppendsInFlightKeepTheirProducerAfterTheConnectionIsGone) {
    ASSERT_NO_FATAL_FAILURE(start_with_sends_in_flight(5));
    c_.reset();
    for (int i = 0; i < 500 && server_->connection_count() > 0; ++i) {
        std::this_thread::sleep_for(10ms);
    }
    ASSERT_EQ(server_->connection_count(), 0U);
    EXPECT_TRUE(wait_use_count(t_, 3)) << t_.use_count();  // the producer waits for its appends
    EXPECT_EQ(hold_->release(), 5U);
    EXPECT_TRUE(wait_use_count(t_, 2)) << "the producer was not freed: " << t_.use_count();
}

TEST_F(HeldAppendsTest, ProducerClosedWithAppendsInFlightAnswersThemThenSucceedsAndGoes) {
    ASSERT_NO_FATAL_FAILURE(start_with_sends_in_flight(3));
    ASSERT_TRUE(c_->send(
        [&](proto::frame_buffer& f) { return c_->writer().close_producer(f, 0, 2).has_value(); }));
    EXPECT_FALSE(c_->expect(command_type::success, 100ms));  // not before the receipts
    EXPECT_EQ(hold_->release(), 3U);
    for (std::uint64_t i = 0; i < 3; ++i) {
        auto r = c_->expect(command_type::send_receipt);
        ASSERT_TRUE(r);
        EXPECT_EQ(r->cmd.send_receipt().sequence_id(), i);
    }
    auto ok = c_->expect(command_type::success);
    ASSERT_TRUE(ok);
    EXPECT_EQ(ok->cmd.success().request_id(), 2U);
    EXPECT_TRUE(wait_use_count(t_, 2)) << "the closed producer was not freed: " << t_.use_count();
}

}  // namespace
}  // namespace nereus::broker::test
