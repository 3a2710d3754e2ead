// SUBSCRIBE, FLOW, MESSAGE dispatch, ACK/ACK_RESPONSE, redelivery, sub types, seek, unsubscribe.

#include "support/broker_fixture.h"
#include <algorithm>
#include <map>
#include <set>

namespace nereus::broker::test {
namespace {

using proto::command_type;

constexpr std::string_view topic = "persistent://public/default/consume";
constexpr std::int32_t exclusive = 0;
constexpr std::int32_t shared = 1;
constexpr std::int32_t failover = 2;

bool flow(wire_client& c, std::uint64_t consumer_id, std::uint32_t n) {
    return c.send(
        [&](proto::frame_buffer& b) { return c.writer().flow(b, consumer_id, n).has_value(); });
}

bool ack(wire_client& c,
         std::uint64_t consumer_id,
         std::uint64_t entry,
         std::optional<std::uint64_t> request_id,
         bool cumulative = false,
         std::span<const std::int64_t> ack_set = {}) {
    proto::message_id id;
    id.ledger_id = 1;
    id.entry_id = entry;
    id.ack_set = ack_set;
    proto::ack_args a;
    a.consumer_id = consumer_id;
    a.cumulative = cumulative;
    a.ids = std::span(&id, 1);
    a.request_id = request_id;
    return c.send([&](proto::frame_buffer& b) { return c.writer().ack(b, a).has_value(); });
}

// Receives exactly n MESSAGEs (bounded wait); returns their entry ids.
std::vector<std::uint64_t> receive(wire_client& c, int n, std::chrono::milliseconds t = 3s) {
    std::vector<std::uint64_t> out;
    for (int i = 0; i < n; ++i) {
        auto m = c.expect(command_type::message, t);
        if (!m) {
            break;
        }
        out.push_back(m->cmd.message().message_id().entryid());
    }
    return out;
}

class ConsumeTest : public BrokerTest {
protected:
    void SetUp() override {
        start();
        producer_ = connected_client();
        ASSERT_FALSE(create_producer(*producer_, topic, 0, 1).empty());
    }
    std::unique_ptr<wire_client> producer_;
};

TEST_F(ConsumeTest, NoMessageBeforeFlowThenPermitsBoundDelivery) {
    ASSERT_EQ(produce(*producer_, 0, 10), 10);
    auto c = connected_client();
    ASSERT_TRUE(subscribe(*c, topic, "s", exclusive, 0, 1));
    EXPECT_FALSE(c->expect(command_type::message, 100ms));
    ASSERT_TRUE(flow(*c, 0, 4));
    auto got = receive(*c, 4);
    EXPECT_EQ(got, (std::vector<std::uint64_t>{0, 1, 2, 3}));
    EXPECT_FALSE(c->expect(command_type::message, 100ms));  // permits exhausted
    ASSERT_TRUE(flow(*c, 0, 100));
    got = receive(*c, 6);
    EXPECT_EQ(got, (std::vector<std::uint64_t>{4, 5, 6, 7, 8, 9}));
}

TEST_F(ConsumeTest, MessageCarriesPayloadAndChecksum) {
    auto c = connected_client();
    ASSERT_TRUE(subscribe(*c, topic, "s", exclusive, 0, 1));
    ASSERT_TRUE(flow(*c, 0, 10));
    ASSERT_EQ(produce(*producer_, 0, 1), 1);
    auto m = c->expect(command_type::message);
    ASSERT_TRUE(m);
    EXPECT_EQ(m->payload, "m0");
    ASSERT_GE(m->stored.size(), 2U);
    EXPECT_EQ(m->stored[0], std::byte{0x0e});
    EXPECT_EQ(m->stored[1], std::byte{0x01});
    EXPECT_EQ(m->cmd.message().consumer_id(), 0U);
}

TEST_F(ConsumeTest, LatestSubscriptionSeesOnlyNewMessages) {
    ASSERT_EQ(produce(*producer_, 0, 3), 3);
    auto c = connected_client();
    ASSERT_TRUE(subscribe(*c, topic, "late", exclusive, 0, 1, /*earliest=*/false));
    ASSERT_TRUE(flow(*c, 0, 10));
    ASSERT_EQ(produce(*producer_, 0, 2, 3), 2);
    EXPECT_EQ(receive(*c, 2), (std::vector<std::uint64_t>{3, 4}));
}

TEST_F(ConsumeTest, AckGetsAckResponseAndAckedMessagesAreNotRedelivered) {
    ASSERT_EQ(produce(*producer_, 0, 6), 6);
    {
        auto c = connected_client();
        ASSERT_TRUE(subscribe(*c, topic, "s", exclusive, 0, 1));
        ASSERT_TRUE(flow(*c, 0, 6));
        ASSERT_EQ(receive(*c, 6).size(), 6U);
        for (std::uint64_t e : {0, 1, 3}) {
            ASSERT_TRUE(ack(*c, 0, e, 100 + e));
            auto r = c->expect(command_type::ack_response);
            ASSERT_TRUE(r);
            EXPECT_EQ(r->cmd.ackresponse().request_id(), 100 + e);
            EXPECT_FALSE(r->cmd.ackresponse().has_error());
        }
        // A duplicate ack still gets a success response.
        ASSERT_TRUE(ack(*c, 0, 0, 200));
        auto d = c->expect(command_type::ack_response);
        ASSERT_TRUE(d);
        EXPECT_FALSE(d->cmd.ackresponse().has_error());
        c->send([&](proto::frame_buffer& b) {
            return c->writer().close_consumer(b, 0, 2).has_value();
        });
        ASSERT_TRUE(c->expect(command_type::success));
    }
    auto c = connected_client();
    ASSERT_TRUE(subscribe(*c, topic, "s", exclusive, 0, 1));
    ASSERT_TRUE(flow(*c, 0, 10));
    EXPECT_EQ(receive(*c, 3), (std::vector<std::uint64_t>{2, 4, 5}));
    EXPECT_FALSE(c->expect(command_type::message, 100ms));
}

// One ACK listing ids out of delivery order, twice, and beyond the end (the dispatcher looks the
// next id up after the last one it erased first: every listed pending entry must go, and only
// those). Exclusive and Shared (where pending entries of one command may be of two consumers).
TEST_F(ConsumeTest, MultiIdAckInAnyOrderAcksExactlyTheListedEntries) {
    ASSERT_EQ(produce(*producer_, 0, 12), 12);
    for (const std::int32_t type : {exclusive, shared}) {
        const std::string sub = type == exclusive ? "multi-ex" : "multi-sh";
        auto c = connected_client();
        ASSERT_TRUE(subscribe(*c, topic, sub, type, 0, 1));
        ASSERT_TRUE(flow(*c, 0, 12));
        ASSERT_EQ(receive(*c, 12).size(), 12U);
        std::vector<proto::message_id> ids;
        for (std::uint64_t e : {3, 4, 5, 5, 9, 1, 2, 11, 40, 10, 4}) {
            proto::message_id id;
            id.ledger_id = 1;
            id.entry_id = e;
            ids.push_back(id);
        }
        proto::ack_args a;
        a.consumer_id = 0;
        a.ids = ids;
        a.request_id = 77;
        ASSERT_TRUE(
            c->send([&](proto::frame_buffer& b) { return c->writer().ack(b, a).has_value(); }));
        auto r = c->expect(command_type::ack_response);
        ASSERT_TRUE(r);
        EXPECT_FALSE(r->cmd.ackresponse().has_error());
        // Everything not acked comes again, in order, and nothing else.
        c->send([&](proto::frame_buffer& b) {
            return c->writer().redeliver_unacknowledged(b, 0, {}).has_value();
        });
        ASSERT_TRUE(flow(*c, 0, 100));
        EXPECT_EQ(receive(*c, 4), (std::vector<std::uint64_t>{0, 6, 7, 8})) << sub;
        EXPECT_FALSE(c->expect(command_type::message, 100ms)) << sub;
    }
}

TEST_F(ConsumeTest, CumulativeAckOnExclusive) {
    ASSERT_EQ(produce(*producer_, 0, 5), 5);
    auto c = connected_client();
    ASSERT_TRUE(subscribe(*c, topic, "s", exclusive, 0, 1));
    ASSERT_TRUE(flow(*c, 0, 5));
    ASSERT_EQ(receive(*c, 5).size(), 5U);
    ASSERT_TRUE(ack(*c, 0, 2, 9, /*cumulative=*/true));
    ASSERT_TRUE(c->expect(command_type::ack_response));
    c->send(
        [&](proto::frame_buffer& b) { return c->writer().close_consumer(b, 0, 2).has_value(); });
    ASSERT_TRUE(c->expect(command_type::success));
    ASSERT_TRUE(subscribe(*c, topic, "s", exclusive, 1, 3));
    ASSERT_TRUE(flow(*c, 1, 10));
    EXPECT_EQ(receive(*c, 2), (std::vector<std::uint64_t>{3, 4}));
}

TEST_F(ConsumeTest, BatchIndexAckKeepsTheRestOfTheBatch) {
    auto c = connected_client();
    ASSERT_TRUE(subscribe(*c, topic, "s", exclusive, 0, 1));
    ASSERT_TRUE(flow(*c, 0, 10));
    producer_->send_message(0, 0, "batch-bytes", /*batch=*/3);
    ASSERT_TRUE(producer_->expect(command_type::send_receipt));
    auto m = c->expect(command_type::message);
    ASSERT_TRUE(m);
    const std::int64_t remaining[] = {0b101};  // message 1 acked, 0 and 2 still open
    ASSERT_TRUE(ack(*c, 0, 0, 5, false, remaining));
    ASSERT_TRUE(c->expect(command_type::ack_response));
    c->send(
        [&](proto::frame_buffer& b) { return c->writer().close_consumer(b, 0, 2).has_value(); });
    ASSERT_TRUE(c->expect(command_type::success));
    ASSERT_TRUE(subscribe(*c, topic, "s", exclusive, 1, 3));
    ASSERT_TRUE(flow(*c, 1, 10));
    auto again = c->expect(command_type::message);
    ASSERT_TRUE(again);
    ASSERT_EQ(again->cmd.message().ack_set_size(), 1);
    EXPECT_EQ(again->cmd.message().ack_set(0), 0b101);
}

TEST_F(ConsumeTest, SecondExclusiveConsumerIsBusy) {
    auto a = connected_client();
    ASSERT_TRUE(subscribe(*a, topic, "s", exclusive, 0, 1));
    auto b = connected_client();
    proto::subscribe_args s;
    s.topic = topic;
    s.subscription = "s";
    s.sub_type = exclusive;
    s.consumer_id = 0;
    s.request_id = 5;
    b->send([&](proto::frame_buffer& f) { return b->writer().subscribe(f, s).has_value(); });
    auto e = b->expect(command_type::error);
    ASSERT_TRUE(e);
    EXPECT_EQ(e->cmd.error().request_id(), 5U);
    EXPECT_EQ(e->cmd.error().error(), proto::pb::ConsumerBusy);
}

TEST_F(ConsumeTest, SharedSplitsAndGivesAClosedConsumersMessagesToTheOther) {
    auto a = connected_client();
    auto b = connected_client();
    ASSERT_TRUE(subscribe(*a, topic, "sh", shared, 0, 1, true, "a"));
    ASSERT_TRUE(subscribe(*b, topic, "sh", shared, 0, 1, true, "b"));
    ASSERT_TRUE(flow(*a, 0, 100));
    ASSERT_TRUE(flow(*b, 0, 100));
    // FLOWs are handled in order with the PINGs that follow them: both have permits after this.
    for (auto* c : {a.get(), b.get()}) {
        c->send([&](proto::frame_buffer& f) { return c->writer().ping(f).has_value(); });
        ASSERT_TRUE(c->expect(command_type::pong));
    }
    ASSERT_EQ(produce(*producer_, 0, 10), 10);
    std::set<std::uint64_t> got_a;
    std::set<std::uint64_t> got_b;
    // Round-robin: each gets 5.
    for (auto e : receive(*a, 5)) {
        got_a.insert(e);
    }
    for (auto e : receive(*b, 5)) {
        got_b.insert(e);
    }
    EXPECT_EQ(got_a.size(), 5U);
    EXPECT_EQ(got_b.size(), 5U);
    // a closes without acking: b gets a's five, with redelivery_count 1.
    a->send(
        [&](proto::frame_buffer& f) { return a->writer().close_consumer(f, 0, 2).has_value(); });
    ASSERT_TRUE(a->expect(command_type::success));
    std::set<std::uint64_t> redelivered;
    for (int i = 0; i < 5; ++i) {
        auto m = b->expect(command_type::message);
        ASSERT_TRUE(m);
        EXPECT_EQ(m->cmd.message().redelivery_count(), 1U);
        redelivered.insert(m->cmd.message().message_id().entryid());
    }
    EXPECT_EQ(redelivered, got_a);
    EXPECT_FALSE(b->expect(command_type::message, 100ms));
}

TEST_F(ConsumeTest, RedeliverUnacknowledgedSendsTheMessageAgain) {
    auto c = connected_client();
    ASSERT_TRUE(subscribe(*c, topic, "sh", shared, 0, 1));
    ASSERT_TRUE(flow(*c, 0, 10));
    ASSERT_EQ(produce(*producer_, 0, 3), 3);
    ASSERT_EQ(receive(*c, 3).size(), 3U);
    proto::message_id id;
    id.ledger_id = 1;
    id.entry_id = 1;
    c->send([&](proto::frame_buffer& b) {
        return c->writer().redeliver_unacknowledged(b, 0, std::span(&id, 1)).has_value();
    });
    auto m = c->expect(command_type::message);
    ASSERT_TRUE(m);
    EXPECT_EQ(m->cmd.message().message_id().entryid(), 1U);
    EXPECT_EQ(m->cmd.message().redelivery_count(), 1U);
    EXPECT_FALSE(c->expect(command_type::message, 100ms));
}

TEST_F(ConsumeTest, FailoverDeliversToTheActiveConsumerAndSwitchesOnClose) {
    auto a = connected_client();
    auto b = connected_client();
    ASSERT_TRUE(subscribe(*a, topic, "fo", failover, 0, 1, true, "a"));
    ASSERT_TRUE(subscribe(*b, topic, "fo", failover, 0, 1, true, "b"));
    auto change_b = b->expect(command_type::active_consumer_change);
    ASSERT_TRUE(change_b);
    EXPECT_FALSE(change_b->cmd.active_consumer_change().is_active());
    ASSERT_TRUE(flow(*a, 0, 100));
    ASSERT_TRUE(flow(*b, 0, 100));
    ASSERT_EQ(produce(*producer_, 0, 4), 4);
    EXPECT_EQ(receive(*a, 4).size(), 4U);
    EXPECT_FALSE(b->expect(command_type::message, 100ms));
    a->send(
        [&](proto::frame_buffer& f) { return a->writer().close_consumer(f, 0, 2).has_value(); });
    ASSERT_TRUE(a->expect(command_type::success));
    auto now_active = b->expect(command_type::active_consumer_change);
    ASSERT_TRUE(now_active);
    EXPECT_TRUE(now_active->cmd.active_consumer_change().is_active());
    EXPECT_EQ(receive(*b, 4), (std::vector<std::uint64_t>{0, 1, 2, 3}));
}

TEST_F(ConsumeTest, SeekClosesConsumersFirstThenAnswersSuccess) {
    ASSERT_EQ(produce(*producer_, 0, 5), 5);
    auto c = connected_client();
    ASSERT_TRUE(subscribe(*c, topic, "s", exclusive, 0, 1));
    ASSERT_TRUE(flow(*c, 0, 10));
    ASSERT_EQ(receive(*c, 5).size(), 5U);
    for (std::uint64_t e = 0; e < 5; ++e) {
        ASSERT_TRUE(ack(*c, 0, e, e));
        ASSERT_TRUE(c->expect(command_type::ack_response));
    }
    proto::message_id to;
    to.ledger_id = 1;
    to.entry_id = 2;
    c->send([&](proto::frame_buffer& b) { return c->writer().seek(b, 0, 50, to).has_value(); });
    auto next_not_active_change = [&] {
        auto f = c->next();
        while (f && f->type == command_type::active_consumer_change) {
            f = c->next();
        }
        return f;
    };
    auto first = next_not_active_change();
    ASSERT_TRUE(first);
    EXPECT_EQ(first->type, command_type::close_consumer);
    auto second = next_not_active_change();
    ASSERT_TRUE(second);
    EXPECT_EQ(second->type, command_type::success);
    EXPECT_EQ(second->cmd.success().request_id(), 50U);
    ASSERT_TRUE(subscribe(*c, topic, "s", exclusive, 0, 2));
    ASSERT_TRUE(flow(*c, 0, 10));
    EXPECT_EQ(receive(*c, 3), (std::vector<std::uint64_t>{2, 3, 4}));
    // An ack stamped before the seek is harmless: entry 2 is still delivered after a re-subscribe.
}

TEST_F(ConsumeTest, UnsubscribeDeletesTheSubscription) {
    ASSERT_EQ(produce(*producer_, 0, 2), 2);
    auto c = connected_client();
    ASSERT_TRUE(subscribe(*c, topic, "gone", exclusive, 0, 1));
    c->send([&](proto::frame_buffer& b) { return c->writer().unsubscribe(b, 0, 2).has_value(); });
    auto s = c->expect(command_type::success);
    ASSERT_TRUE(s);
    EXPECT_EQ(s->cmd.success().request_id(), 2U);
    // Re-created at Latest: the two old messages are not delivered.
    ASSERT_TRUE(subscribe(*c, topic, "gone", exclusive, 0, 3, /*earliest=*/false));
    ASSERT_TRUE(flow(*c, 0, 10));
    EXPECT_FALSE(c->expect(command_type::message, 100ms));
}

TEST_F(ConsumeTest, GetLastMessageIdReportsLastEntryAndMarkDelete) {
    auto c = connected_client();
    ASSERT_TRUE(subscribe(*c, topic, "s", exclusive, 0, 1));
    c->send([&](proto::frame_buffer& b) {
        return c->writer().get_last_message_id(b, 0, 2).has_value();
    });
    auto empty = c->expect(command_type::get_last_message_id_response);
    ASSERT_TRUE(empty);
    EXPECT_EQ(empty->cmd.getlastmessageidresponse().last_message_id().entryid(),
              proto::no_position);
    ASSERT_EQ(produce(*producer_, 0, 3), 3);
    c->send([&](proto::frame_buffer& b) {
        return c->writer().get_last_message_id(b, 0, 3).has_value();
    });
    auto r = c->expect(command_type::get_last_message_id_response);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->cmd.getlastmessageidresponse().last_message_id().entryid(), 2U);
}

TEST_F(ConsumeTest, AckOfAnotherLedgerIdIsAnsweredButHasNoEffect) {
    ASSERT_EQ(produce(*producer_, 0, 1), 1);
    auto c = connected_client();
    ASSERT_TRUE(subscribe(*c, topic, "s", exclusive, 0, 1));
    ASSERT_TRUE(flow(*c, 0, 10));
    ASSERT_EQ(receive(*c, 1).size(), 1U);
    proto::message_id id;
    id.ledger_id = 999;  // not this topic's incarnation
    id.entry_id = 0;
    proto::ack_args a;
    a.consumer_id = 0;
    a.ids = std::span(&id, 1);
    a.request_id = 3;
    c->send([&](proto::frame_buffer& b) { return c->writer().ack(b, a).has_value(); });
    auto r = c->expect(command_type::ack_response);
    ASSERT_TRUE(r);
    EXPECT_FALSE(r->cmd.ackresponse().has_error());
    c->send(
        [&](proto::frame_buffer& b) { return c->writer().close_consumer(b, 0, 4).has_value(); });
    ASSERT_TRUE(c->expect(command_type::success));
    ASSERT_TRUE(subscribe(*c, topic, "s", exclusive, 1, 5));
    ASSERT_TRUE(flow(*c, 1, 10));
    EXPECT_EQ(receive(*c, 1), (std::vector<std::uint64_t>{0}));
}

TEST_F(ConsumeTest, TopicsOfNamespaceAndConsumerStats) {
    auto c = connected_client();
    c->send([&](proto::frame_buffer& b) {
        return c->writer().get_topics_of_namespace(b, 4, "public/default").has_value();
    });
    auto t = c->expect(command_type::get_topics_of_namespace_response);
    ASSERT_TRUE(t);
    ASSERT_EQ(t->cmd.gettopicsofnamespaceresponse().topics_size(), 1);
    EXPECT_EQ(t->cmd.gettopicsofnamespaceresponse().topics(0), topic);
    ASSERT_TRUE(subscribe(*c, topic, "s", shared, 0, 1, true, "stats-consumer"));
    ASSERT_TRUE(flow(*c, 0, 7));
    c->send(
        [&](proto::frame_buffer& b) { return c->writer().consumer_stats(b, 5, 0).has_value(); });
    auto s = c->expect(command_type::consumer_stats_response);
    ASSERT_TRUE(s);
    EXPECT_EQ(s->cmd.consumerstatsresponse().consumername(), "stats-consumer");
    EXPECT_EQ(s->cmd.consumerstatsresponse().availablepermits(), 7U);
    EXPECT_EQ(s->cmd.consumerstatsresponse().type(), "Shared");
}

TEST_F(ConsumeTest, KeySharedKeepsEachKeyWithOneConsumerAndInOrder) {
    constexpr std::int32_t key_shared = 3;
    auto a = connected_client();
    auto b = connected_client();
    ASSERT_TRUE(subscribe(*a, topic, "ks", key_shared, 0, 1, true, "a"));
    ASSERT_TRUE(subscribe(*b, topic, "ks", key_shared, 0, 1, true, "b"));
    for (auto* c : {a.get(), b.get()}) {
        ASSERT_TRUE(flow(*c, 0, 1000));
        c->send([&](proto::frame_buffer& f) { return c->writer().ping(f).has_value(); });
        ASSERT_TRUE(c->expect(command_type::pong));
    }
    constexpr int n = 60;
    for (int i = 0; i < n; ++i) {
        producer_->send_message(0, static_cast<std::uint64_t>(i), "v", 0,
                                std::string("key-").append(std::to_string(i % 10)));
    }
    for (int i = 0; i < n; ++i) {
        ASSERT_TRUE(producer_->expect(command_type::send_receipt));
    }
    // key of entry e = e % 10. Collect who got what.
    std::map<int, std::vector<std::uint64_t>> by_key_a;
    std::map<int, std::vector<std::uint64_t>> by_key_b;
    int total = 0;
    for (auto [c, into] : {std::pair{a.get(), &by_key_a}, std::pair{b.get(), &by_key_b}}) {
        while (auto m = c->expect(command_type::message, 300ms)) {
            const auto e = m->cmd.message().message_id().entryid();
            (*into)[static_cast<int>(e % 10)].push_back(e);
            ++total;
        }
    }
    EXPECT_EQ(total, n);
    EXPECT_FALSE(by_key_a.empty());
    EXPECT_FALSE(by_key_b.empty());
    for (const auto& [k, entries] : by_key_a) {
        EXPECT_FALSE(by_key_b.contains(k)) << "key " << k << " went to both consumers";
        EXPECT_TRUE(std::is_sorted(entries.begin(), entries.end()));
        EXPECT_EQ(entries.size(), 6U);
    }
    for (const auto& [k, entries] : by_key_b) {
        EXPECT_TRUE(std::is_sorted(entries.begin(), entries.end()));
        EXPECT_EQ(entries.size(), 6U);
    }
    // a leaves without acking: its keys move to b, in order, as redeliveries.
    a->send(
        [&](proto::frame_buffer& f) { return a->writer().close_consumer(f, 0, 2).has_value(); });
    ASSERT_TRUE(a->expect(command_type::success));
    std::map<int, std::vector<std::uint64_t>> moved;
    while (auto m = b->expect(command_type::message, 300ms)) {
        const auto e = m->cmd.message().message_id().entryid();
        moved[static_cast<int>(e % 10)].push_back(e);
        EXPECT_EQ(m->cmd.message().redelivery_count(), 1U);
    }
    EXPECT_EQ(moved, by_key_a);
}

TEST_F(ConsumeTest, KeySharedNewOwnerWaitsUntilTheOldOneAcked) {
    constexpr std::int32_t key_shared = 3;
    auto a = connected_client();
    ASSERT_TRUE(subscribe(*a, topic, "ks2", key_shared, 0, 1, true, "a"));
    ASSERT_TRUE(flow(*a, 0, 100));
    for (int i = 0; i < 20; ++i) {
        producer_->send_message(0, static_cast<std::uint64_t>(i), "v", 0,
                                std::string("key-").append(std::to_string(i % 4)));
        ASSERT_TRUE(producer_->expect(command_type::send_receipt));
    }
    std::vector<std::uint64_t> got_a;
    while (auto m = a->expect(command_type::message, 300ms)) {
        got_a.push_back(m->cmd.message().message_id().entryid());
    }
    ASSERT_EQ(got_a.size(), 20U);
    // b joins and takes over part of the key space; new messages of keys a still holds
    // (unacked) must wait.
    auto b = connected_client();
    ASSERT_TRUE(subscribe(*b, topic, "ks2", key_shared, 0, 1, true, "b"));
    ASSERT_TRUE(flow(*b, 0, 100));
    for (int i = 20; i < 40; ++i) {
        producer_->send_message(0, static_cast<std::uint64_t>(i), "v", 0,
                                std::string("key-").append(std::to_string(i % 4)));
        ASSERT_TRUE(producer_->expect(command_type::send_receipt));
    }
    std::vector<std::uint64_t> more_a;
    while (auto m = a->expect(command_type::message, 300ms)) {
        more_a.push_back(m->cmd.message().message_id().entryid());
    }
    EXPECT_FALSE(b->expect(command_type::message, 100ms));  // every key is still held by a
    // a acks everything: the keys b now owns flow to b.
    for (auto e : got_a) {
        ASSERT_TRUE(ack(*a, 0, e, e));
        ASSERT_TRUE(a->expect(command_type::ack_response));
    }
    for (auto e : more_a) {
        ASSERT_TRUE(ack(*a, 0, e, 1000 + e));
        ASSERT_TRUE(a->expect(command_type::ack_response));
    }
    std::vector<std::uint64_t> got_b;
    while (auto m = b->expect(command_type::message, 300ms)) {
        got_b.push_back(m->cmd.message().message_id().entryid());
    }
    EXPECT_EQ(more_a.size() + got_b.size(), 20U);
    EXPECT_FALSE(got_b.empty());  // with these keys, b owns some of them
    // Per-key order (key of entry e = e % 4); keys are freed one by one as a acks, so b's
    // stream interleaves keys.
    std::map<int, std::vector<std::uint64_t>> by_key;
    for (auto e : got_b) {
        by_key[static_cast<int>(e % 4)].push_back(e);
    }
    for (const auto& [k, entries] : by_key) {
        EXPECT_TRUE(std::is_sorted(entries.begin(), entries.end())) << "key " << k;
    }
}

TEST_F(ConsumeTest, AckForUnknownConsumerGetsAnErrorResponse) {
    auto c = connected_client();
    ASSERT_TRUE(ack(*c, 99, 0, 7));
    auto r = c->expect(command_type::ack_response);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->cmd.ackresponse().request_id(), 7U);
    EXPECT_TRUE(r->cmd.ackresponse().has_error());
}

TEST_F(ConsumeTest, DisconnectReleasesConsumersAndProducers) {
    {
        auto c = connected_client();
        ASSERT_TRUE(subscribe(*c, topic, "s", exclusive, 0, 1));
    }  // dropped without CLOSE_CONSUMER
    auto c = connected_client();
    // Bounded retry: the broker notices the disconnect asynchronously.
    bool ok = false;
    for (int i = 0; i < 50 && !ok; ++i) {
        ok = subscribe(*c, topic, "s", exclusive, static_cast<std::uint64_t>(i), 10 + i);
        if (!ok) {
            std::this_thread::sleep_for(20ms);
        }
    }
    EXPECT_TRUE(ok);
}

}  // namespace
}  // namespace nereus::broker::test
