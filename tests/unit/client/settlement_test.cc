// Settlement: acks confirmed by ACK_RESPONSE (individual, cumulative, batch index), nack with
// delay, ack timeout, redelivery count, dead-letter and retry-letter topics.

#include "client_fixture.h"
#include <set>

namespace nereus::client::test {
namespace {

TEST_F(ClientTest, AckedMessagesAreNotRedeliveredAfterResubscribe) {
    auto o = sub("ack", "s");
    auto c = make_consumer(o);
    auto p = make_producer(prod("ack"));
    for (int i = 0; i < 6; ++i) {
        ASSERT_TRUE(send(p, std::to_string(i)));
    }
    for (int i = 0; i < 6; ++i) {
        auto m = receive(c);
        ASSERT_TRUE(m);
        if (i % 2 == 0) {
            auto a = wait(c.acknowledge(m->id(), asio::use_future));
            ASSERT_TRUE(a) << a.error().message();
        }
    }
    ASSERT_TRUE(wait(c.close(asio::use_future)));
    auto c2 = make_consumer(o);
    for (int i : {1, 3, 5}) {
        auto m = receive(c2);
        ASSERT_TRUE(m);
        EXPECT_EQ(m->payload_text(), std::to_string(i));
    }
    EXPECT_TRUE(nothing_within(c2, 300ms));
}

// Batch-index acks survive a resubscribe: the broker redelivers the partly acked entry with
// its ack_set and the consumer skips the acked indexes (Pulsar: only the other 8 come back).
TEST_F(ClientTest, BatchIndexAcksSurviveAResubscribe) {
    for (auto type : {subscription_type::exclusive, subscription_type::shared}) {
        const std::string topic =
            type == subscription_type::exclusive ? "batchack-x" : "batchack-s";
        auto o = sub(topic, "s", type);
        auto c = make_consumer(o);
        auto po = prod(topic, true);
        po.batch_max_messages = 10;
        po.batch_max_delay = std::chrono::milliseconds(1000);
        auto p = make_producer(po);
        std::vector<std::future<result<message_id>>> fs;
        for (int i = 0; i < 10; ++i) {
            fs.push_back(p.send(outgoing_message::text(std::to_string(i)), asio::use_future));
        }
        for (auto& f : fs) {
            auto id = wait(std::move(f));
            ASSERT_TRUE(id) << id.error().message();
            ASSERT_EQ(id->batch_size, 10);  // one entry holds the whole batch
        }
        for (int i = 0; i < 10; ++i) {
            auto m = receive(c);
            ASSERT_TRUE(m);
            ASSERT_EQ(m->payload_text(), std::to_string(i));
            if (i == 2 || i == 7) {
                auto a = wait(c.acknowledge(m->id(), asio::use_future));
                ASSERT_TRUE(a) << a.error().message();
            }
        }
        ASSERT_TRUE(wait(c.close(asio::use_future)));
        auto c2 = make_consumer(o);
        for (int i : {0, 1, 3, 4, 5, 6, 8, 9}) {
            auto m = receive(c2);
            ASSERT_TRUE(m);
            EXPECT_EQ(m->payload_text(), std::to_string(i)) << topic;
            EXPECT_EQ(m->id().batch_index, i);
            ASSERT_TRUE(wait(c2.acknowledge(m->id(), asio::use_future)));
        }
        EXPECT_TRUE(nothing_within(c2, 300ms)) << topic;
        ASSERT_TRUE(wait(c2.close(asio::use_future)));
        // Every index acked: the entry is settled, a third subscriber gets nothing.
        auto c3 = make_consumer(o);
        EXPECT_TRUE(nothing_within(c3, 300ms)) << topic;
    }
}

TEST_F(ClientTest, CumulativeAckSettlesEverythingUpToTheId) {
    auto o = sub("cumulative", "s");
    auto c = make_consumer(o);
    auto p = make_producer(prod("cumulative"));
    for (int i = 0; i < 5; ++i) {
        ASSERT_TRUE(send(p, std::to_string(i)));
    }
    message third;
    for (int i = 0; i < 5; ++i) {
        auto m = receive(c);
        ASSERT_TRUE(m);
        if (i == 2) {
            third = *m;
        }
    }
    ASSERT_TRUE(wait(c.acknowledge_cumulative(third.id(), asio::use_future)));
    ASSERT_TRUE(wait(c.close(asio::use_future)));
    auto c2 = make_consumer(o);
    for (int i : {3, 4}) {
        auto m = receive(c2);
        ASSERT_TRUE(m);
        EXPECT_EQ(m->payload_text(), std::to_string(i));
    }
}

TEST_F(ClientTest, CumulativeAckIsRefusedOnShared) {
    auto c = make_consumer(sub("cumshared", "s", subscription_type::shared));
    auto p = make_producer(prod("cumshared"));
    ASSERT_TRUE(send(p, "x"));
    auto m = receive(c);
    ASSERT_TRUE(m);
    auto r = wait(c.acknowledge_cumulative(m->id(), asio::use_future));
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error(), make_error_code(errc::invalid_argument));
}

TEST_F(ClientTest, NackRedeliversAfterTheDelayWithARedeliveryCount) {
    auto o = sub("nack", "s", subscription_type::shared);
    o.nack_redelivery_delay = std::chrono::milliseconds(300);
    auto c = make_consumer(o);
    auto p = make_producer(prod("nack"));
    ASSERT_TRUE(send(p, "again"));
    auto m = receive(c);
    ASSERT_TRUE(m);
    EXPECT_EQ(m->redelivery_count(), 0u);
    const auto t0 = std::chrono::steady_clock::now();
    c.negative_acknowledge(m->id());
    auto m2 = receive(c);
    ASSERT_TRUE(m2);
    EXPECT_GE(std::chrono::steady_clock::now() - t0, 250ms);  // not before the delay
    EXPECT_EQ(m2->payload_text(), "again");
    EXPECT_EQ(m2->id(), m->id());
    EXPECT_EQ(m2->redelivery_count(), 1u);
    ASSERT_TRUE(wait(c.acknowledge(m2->id(), asio::use_future)));
}

TEST_F(ClientTest, AckTimeoutRedeliversWhatWasNotAcked) {
    auto o = sub("acktimeout", "s", subscription_type::shared);
    o.ack_timeout = std::chrono::milliseconds(300);
    auto c = make_consumer(o);
    auto p = make_producer(prod("acktimeout"));
    ASSERT_TRUE(send(p, "a"));
    ASSERT_TRUE(send(p, "b"));
    auto a = receive(c);
    auto b = receive(c);
    ASSERT_TRUE(a && b);
    ASSERT_TRUE(wait(c.acknowledge(a->id(), asio::use_future)));
    auto again = receive(c);  // b, after the ack timeout
    ASSERT_TRUE(again);
    EXPECT_EQ(again->payload_text(), "b");
    EXPECT_GE(again->redelivery_count(), 1u);
    ASSERT_TRUE(wait(c.acknowledge(again->id(), asio::use_future)));
    EXPECT_TRUE(nothing_within(c, 600ms));
}

TEST_F(ClientTest, DeadLetterPolicyMovesAMessageAfterMaxRedeliveries) {
    auto dlq = make_consumer(sub("orders-s-DLQ", "dlq-reader"));
    auto o = sub("orders", "s", subscription_type::shared);
    o.nack_redelivery_delay = std::chrono::milliseconds(50);
    o.dead_letter = dead_letter_policy{2, "", ""};
    auto c = make_consumer(o);
    auto p = make_producer(prod("orders"));
    ASSERT_TRUE(wait(p.send(outgoing_message::text("poison").with_key("k"), asio::use_future)));
    ASSERT_TRUE(send(p, "fine"));
    int poison_deliveries = 0;
    bool fine_acked = false;
    for (int i = 0; i < 10 && (poison_deliveries < 2 || !fine_acked); ++i) {
        auto m = receive(c);
        ASSERT_TRUE(m);
        if (m->payload_text() == "poison") {
            EXPECT_EQ(m->redelivery_count(), static_cast<std::uint32_t>(poison_deliveries));
            ++poison_deliveries;
            c.negative_acknowledge(m->id());
        } else {
            ASSERT_TRUE(wait(c.acknowledge(m->id(), asio::use_future)));
            fine_acked = true;
        }
    }
    EXPECT_EQ(poison_deliveries, 2);  // delivered with counts 0 and 1, then dead-lettered
    auto d = receive(dlq);
    ASSERT_TRUE(d);
    EXPECT_EQ(d->payload_text(), "poison");
    EXPECT_EQ(d->key(), "k");
    EXPECT_EQ(d->property_value("REAL_TOPIC"), "persistent://public/default/orders");
    EXPECT_TRUE(d->property_value("ORIGIN_MESSAGE_ID").has_value());
    // ... and it was acknowledged on the original subscription: nothing comes back.
    EXPECT_TRUE(nothing_within(c, 400ms));
}

TEST_F(ClientTest, ReconsumeLaterGoesThroughTheRetryTopicThenTheDeadLetterTopic) {
    auto dlq = make_consumer(sub("jobs-s-DLQ", "dlq-reader"));
    auto o = sub("jobs", "s", subscription_type::shared);
    o.retry_enable = true;
    o.dead_letter = dead_letter_policy{2, "", ""};
    auto c = make_consumer(o);
    EXPECT_EQ(c.topics().size(), 2u);  // jobs and jobs-s-RETRY
    auto p = make_producer(prod("jobs"));
    ASSERT_TRUE(send(p, "work"));
    for (std::uint32_t times = 0; times <= 2; ++times) {
        auto m = receive(c);
        ASSERT_TRUE(m);
        EXPECT_EQ(m->payload_text(), "work");
        if (times == 0) {
            EXPECT_FALSE(m->property_value("RECONSUMETIMES").has_value());
        } else {
            EXPECT_EQ(m->property_value("RECONSUMETIMES"), std::to_string(times));
            EXPECT_EQ(m->topic(), "persistent://public/default/jobs-s-RETRY");
            EXPECT_EQ(m->property_value("REAL_TOPIC"), "persistent://public/default/jobs");
        }
        auto r = wait(c.reconsume_later(*m, std::chrono::milliseconds(10), asio::use_future));
        ASSERT_TRUE(r) << r.error().message();
    }
    auto d = receive(dlq);
    ASSERT_TRUE(d);
    EXPECT_EQ(d->payload_text(), "work");
    EXPECT_EQ(d->property_value("RECONSUMETIMES"), "3");
    EXPECT_TRUE(nothing_within(c, 300ms));
}

TEST_F(ClientTest, ReconsumeLaterNeedsRetryEnabled) {
    auto c = make_consumer(sub("noretry", "s"));
    auto p = make_producer(prod("noretry"));
    ASSERT_TRUE(send(p, "x"));
    auto m = receive(c);
    ASSERT_TRUE(m);
    auto r = wait(c.reconsume_later(*m, std::chrono::milliseconds(10), asio::use_future));
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error(), make_error_code(errc::invalid_argument));
}

TEST_F(ClientTest, ReceiverQueueBoundsWhatTheBrokerPushes) {
    // With a queue of 4, the consumer holds at most 4 unreceived messages; receiving them
    // grants more permits and the rest follow.
    auto o = sub("permits", "s");
    o.receiver_queue_size = 4;
    auto c = make_consumer(o);
    auto p = make_producer(prod("permits"));
    for (int i = 0; i < 30; ++i) {
        ASSERT_TRUE(send(p, std::to_string(i)));
    }
    for (int i = 0; i < 30; ++i) {
        auto m = receive(c);
        ASSERT_TRUE(m) << i;
        EXPECT_EQ(m->payload_text(), std::to_string(i));
        ASSERT_TRUE(wait(c.acknowledge(m->id(), asio::use_future)));
    }
}

}  // namespace
}  // namespace nereus::client::test
