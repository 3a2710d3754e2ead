// Pattern subscriptions (consumer_options::topics_pattern): the namespace listed at subscribe
// and again every pattern_auto_discovery_period — topics created later are joined, topics that
// are gone are closed, the other topics are not disturbed. And the broker's max_message_size
// as the client learns it from CONNECTED. Against the in-process broker (client_fixture.h);
// tests/unit/runtime/pulsar_standalone_test.cc does the same against `nereus standalone`.

#include "nereus/client/pattern.h"

#include "nereus/broker/partitioned_topics.h"
#include "nereus/broker/topic.h"
#include "nereus/broker/topic_name.h"

#include "client_fixture.h"
#include <algorithm>
#include <set>

namespace nereus::client::test {
namespace {

constexpr auto ns_prefix = "persistent://public/default/";

consumer_options by_pattern(const std::string& regex,
                            const std::string& name,
                            subscription_type t = subscription_type::shared) {
    consumer_options o;
    o.topics_pattern = std::string(ns_prefix) + regex;
    o.subscription = name;
    o.type = t;
    o.start = initial_position::earliest;
    o.pattern_auto_discovery_period = 200ms;
    return o;
}

// Receives until `n` messages came (bounded); their payloads.
std::vector<std::string> receive_n(consumer& c, std::size_t n) {
    std::vector<std::string> got;
    while (got.size() < n) {
        auto m = wait(c.receive(asio::use_future), 20s);
        if (!m) {
            break;
        }
        got.emplace_back(m->payload_text());
        EXPECT_TRUE(wait(c.acknowledge(m->id(), asio::use_future)));
    }
    return got;
}

// Polls (bounded, 20 s) until `pred` holds.
template <class Pred>
bool eventually(Pred pred) {
    const auto until = std::chrono::steady_clock::now() + 20s;
    while (!pred()) {
        if (std::chrono::steady_clock::now() >= until) {
            return false;
        }
        std::this_thread::sleep_for(20ms);
    }
    return true;
}

bool has_topic(const consumer& c, const std::string& t) {
    const auto ts = c.topics();
    return std::find(ts.begin(), ts.end(), t) != ts.end();
}

TEST(TopicPattern, MatchesWholeNamesPartitionsAndRefusesBadPatterns) {
    auto p = topic_pattern::compile("persistent://public/default/orders-.*");
    ASSERT_TRUE(p);
    EXPECT_EQ(p->namespace_name(), "public/default");
    EXPECT_TRUE(p->matches("persistent://public/default/orders-a"));
    EXPECT_TRUE(p->matches("persistent://public/default/orders-b-partition-3"));
    EXPECT_FALSE(p->matches("persistent://public/default/xorders-a"));
    EXPECT_FALSE(p->matches("persistent://public/other/orders-a"));
    for (const char* bad : {"persistent://public/default/(", "persistent://pub.*/default/x",
                            "orders-.*", "non-persistent://public/default/x"}) {
        auto r = topic_pattern::compile(bad);
        ASSERT_FALSE(r) << bad;
        EXPECT_EQ(r.error(), make_error_code(errc::invalid_argument)) << bad;
    }
    EXPECT_EQ(partitioned_topic_of("persistent://a/b/t-partition-12"), "persistent://a/b/t");
    EXPECT_EQ(partitioned_topic_of("persistent://a/b/t-partition-x"),
              "persistent://a/b/t-partition-x");
}

TEST_F(ClientTest, PatternWithTopicsOrWithoutNamedRetryTopicIsRefused) {
    auto o = by_pattern("p-.*", "s");
    o.topics = {"p-a"};
    auto r = wait(cli().subscribe(o, asio::use_future));
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error(), make_error_code(errc::invalid_argument));
    auto retry = by_pattern("p-.*", "s");
    retry.retry_enable = true;
    r = wait(cli().subscribe(retry, asio::use_future));
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error(), make_error_code(errc::invalid_argument));
    auto bad = by_pattern("(", "s");
    r = wait(cli().subscribe(bad, asio::use_future));
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error(), make_error_code(errc::invalid_argument));
}

TEST_F(ClientTest, PatternConsumerJoinsTopicsCreatedAfterItSubscribed) {
    const std::string a = std::string(ns_prefix) + "grow-a";
    const std::string b = std::string(ns_prefix) + "grow-b";
    auto pa = make_producer(prod(a));
    ASSERT_TRUE(send(pa, "a1"));
    auto c = make_consumer(by_pattern("grow-.*", "s"));
    EXPECT_EQ(c.topics(), std::vector<std::string>{a});
    EXPECT_EQ(receive_n(c, 1), std::vector<std::string>{"a1"});

    // b is created after the subscription: the next listing joins it.
    auto pb = make_producer(prod(b));
    ASSERT_TRUE(send(pb, "b1"));
    auto other = make_producer(prod("nogrow-c"));
    ASSERT_TRUE(send(other, "c1"));
    EXPECT_EQ(receive_n(c, 1), std::vector<std::string>{"b1"});
    EXPECT_TRUE(has_topic(c, b));
    EXPECT_EQ(c.topics().size(), 2u);

    // a was not disturbed: its consumer kept its place (nothing again, nothing lost).
    ASSERT_TRUE(send(pa, "a2"));
    ASSERT_TRUE(send(pb, "b2"));
    auto got = receive_n(c, 2);
    std::sort(got.begin(), got.end());
    EXPECT_EQ(got, (std::vector<std::string>{"a2", "b2"}));
    EXPECT_TRUE(nothing_within(c, 500ms));
}

TEST_F(ClientTest, PatternConsumerWithNothingMatchingYetWaitsForATopic) {
    auto c = make_consumer(by_pattern("later-.*", "s"));
    EXPECT_TRUE(c.topics().empty());
    auto f = c.receive(asio::use_future);  // outstanding while there is no topic at all
    auto p = make_producer(prod("later-x"));
    ASSERT_TRUE(send(p, "x1"));
    auto m = wait(std::move(f), 20s);
    ASSERT_TRUE(m);
    EXPECT_EQ(m->payload_text(), "x1");
    EXPECT_EQ(m->topic(), std::string(ns_prefix) + "later-x");
}

TEST_F(ClientTest, PatternConsumerJoinsEveryPartitionOfANewPartitionedTopic) {
    auto c = make_consumer(by_pattern("pp-.*", "s"));
    auto t = broker::parse_topic_name("pp-orders");
    ASSERT_TRUE(t);
    auto made = broker::create_partitioned_metadata(*backend_, *t, 3);
    ASSERT_TRUE(made && *made);
    auto p = make_producer(prod("pp-orders"));  // opens (creates) every partition
    std::set<std::string> sent;
    for (int i = 0; i < 9; ++i) {
        ASSERT_TRUE(send(p, "m" + std::to_string(i)));
        sent.insert("m" + std::to_string(i));
    }
    auto got = receive_n(c, 9);
    EXPECT_EQ(std::set<std::string>(got.begin(), got.end()), sent);
    EXPECT_EQ(c.topics().size(), 3u);
    EXPECT_TRUE(has_topic(c, std::string(ns_prefix) + "pp-orders-partition-2"));
}

TEST_F(ClientTest, PatternConsumerClosesTopicsNoLongerListed) {
    const std::string a = std::string(ns_prefix) + "gone-a";
    const std::string b = std::string(ns_prefix) + "gone-b";
    {
        auto pa = make_producer(prod(a));
        auto pb = make_producer(prod(b));
        ASSERT_TRUE(send(pa, "a1"));
        ASSERT_TRUE(send(pb, "b1"));
        ASSERT_TRUE(wait(pa.close(asio::use_future)));
        ASSERT_TRUE(wait(pb.close(asio::use_future)));
    }
    // Without auto-creation the consumer cannot bring a deleted topic back by re-subscribing.
    auto_create_topics_ = false;
    restart_broker();
    auto c = make_consumer(by_pattern("gone-.*", "s"));
    EXPECT_EQ(c.topics().size(), 2u);
    auto first = receive_n(c, 2);
    std::sort(first.begin(), first.end());
    EXPECT_EQ(first, (std::vector<std::string>{"a1", "b1"}));

    // A forced delete of b (as the admin API's DELETE ?force=true): the broker closes b's
    // consumer; b is no longer listed, so the consumer closes it for good.
    auto gone = broker::parse_topic_name(b);
    ASSERT_TRUE(gone);
    auto removed =
        server_->topics().remove(b, [](const std::shared_ptr<broker::topic>& t) -> result<void> {
            if (t) {
                t->mark_lost();
                t->close_clients();
            }
            return {};
        });
    ASSERT_TRUE(removed) << removed.error().message();
    EXPECT_TRUE(eventually([&] { return !has_topic(c, b); })) << "b was never dropped";
    EXPECT_EQ(c.topics(), std::vector<std::string>{a});

    // a goes on as before.
    auto pa = make_producer(prod(a));
    ASSERT_TRUE(send(pa, "a2"));
    EXPECT_EQ(receive_n(c, 1), std::vector<std::string>{"a2"});
}

// --- the broker's max_message_size, learnt from CONNECTED ---

class SmallMessagesTest : public ClientTest {
protected:
    void SetUp() override {
        max_message_size_ = 64 * 1024;
        ClientTest::SetUp();
    }
};

TEST_F(SmallMessagesTest, TheClientReportsTheBrokersLimitAndRefusesBiggerPayloads) {
    EXPECT_FALSE(cli().max_message_size().has_value()) << "known before any connection";
    auto p = make_producer(prod("small"));
    ASSERT_EQ(cli().max_message_size(), std::optional<std::uint32_t>(64 * 1024));
    auto exact =
        wait(p.send(outgoing_message::text(std::string(64 * 1024, 'x')), asio::use_future));
    EXPECT_TRUE(exact) << "exactly max_message_size is accepted";
    // One byte over: refused by the client (errc::message_too_big) before it is sent; the
    // broker's own refusal would be a SEND_ERROR NotAllowed.
    auto over =
        wait(p.send(outgoing_message::text(std::string(64 * 1024 + 1, 'x')), asio::use_future));
    ASSERT_FALSE(over);
    EXPECT_EQ(over.error(), make_error_code(errc::message_too_big)) << over.error().message();
    // The producer is unharmed.
    EXPECT_TRUE(send(p, "small"));
}

}  // namespace
}  // namespace nereus::client::test
