// Reconnect with backoff: producers and consumers come back after the broker restarts; sends
// pending across the outage are re-sent in order with the same sequence ids.

#include "client_fixture.h"

namespace nereus::client::test {
namespace {

TEST_F(ClientTest, ProducerResendsPendingInOrderAfterTheBrokerRestarts) {
    auto o = sub("reconnect", "s");
    auto c = make_consumer(o);
    auto p = make_producer(prod("reconnect"));
    ASSERT_TRUE(send(p, "0"));
    stop_broker();
    // Sends during the outage stay pending (no receipt, so no success).
    std::vector<std::future<result<message_id>>> fs;
    for (int i = 1; i <= 5; ++i) {
        fs.push_back(p.send(outgoing_message::text(std::to_string(i)), asio::use_future));
    }
    std::this_thread::sleep_for(200ms);
    for (auto& f : fs) {
        EXPECT_NE(f.wait_for(0ms), std::future_status::ready);
    }
    restart_broker();
    for (auto& f : fs) {
        auto id = wait(std::move(f));
        ASSERT_TRUE(id) << id.error().message();
    }
    EXPECT_EQ(p.last_sequence_id(), 5);
    // The consumer re-subscribed by itself; every message arrives once, in order.
    for (int i = 0; i <= 5; ++i) {
        auto m = receive(c);
        ASSERT_TRUE(m) << i;
        EXPECT_EQ(m->payload_text(), std::to_string(i));
        EXPECT_EQ(m->sequence_id(), static_cast<std::uint64_t>(i));
        ASSERT_TRUE(wait(c.acknowledge(m->id(), asio::use_future)));
    }
}

TEST_F(ClientTest, AckInFlightWhenTheConnectionDropsFailsInsteadOfSucceeding) {
    auto o = sub("ackdrop", "s");
    auto c = make_consumer(o);
    auto p = make_producer(prod("ackdrop"));
    ASSERT_TRUE(send(p, "x"));
    auto m = receive(c);
    ASSERT_TRUE(m);
    stop_broker();
    auto a = wait(c.acknowledge(m->id(), asio::use_future));
    ASSERT_FALSE(a);  // never reported settled without the broker's confirmation
    restart_broker();
    // The unacknowledged message comes back after the consumer re-subscribes.
    auto again = receive(c);
    ASSERT_TRUE(again);
    EXPECT_EQ(again->payload_text(), "x");
    auto a2 = wait(c.acknowledge(again->id(), asio::use_future));
    EXPECT_TRUE(a2) << a2.error().message();
}

TEST_F(ClientTest, ConsumerBuffersAreDroppedOnReconnectAndRefilledByTheBroker) {
    auto o = sub("refill", "s");
    auto c = make_consumer(o);
    auto p = make_producer(prod("refill"));
    for (int i = 0; i < 10; ++i) {
        ASSERT_TRUE(send(p, std::to_string(i)));
    }
    auto first = receive(c);
    ASSERT_TRUE(first);
    ASSERT_TRUE(wait(c.acknowledge(first->id(), asio::use_future)));
    restart_broker(100ms);
    for (int i = 1; i < 10; ++i) {
        auto m = receive(c);
        ASSERT_TRUE(m) << i;
        EXPECT_EQ(m->payload_text(), std::to_string(i));
        ASSERT_TRUE(wait(c.acknowledge(m->id(), asio::use_future)));
    }
    EXPECT_TRUE(nothing_within(c, 300ms));
}

}  // namespace
}  // namespace nereus::client::test
