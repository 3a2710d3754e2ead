// The test transport's broker model on its own (the runtime on top of it is covered by the
// conformance suite).

#include "nereus/runtime/errc.h"
#include "nereus/runtime/testing/test_env.h"

#include <gtest/gtest.h>

namespace nereus::runtime::testing {
namespace {

subscriber_spec spec(const std::string& t, const std::string& sub, subscription_type type) {
    subscriber_spec s;
    s.topics = topic_selector::one(t);
    s.subscription = sub;
    s.type = type;
    s.initial = initial_position::earliest;
    return s;
}

struct fixture {
    test_env env;
    std::shared_ptr<bool> open = std::make_shared<bool>(false);
    std::unique_ptr<consumer_port> consume(const subscriber_spec& s, const std::string& name) {
        auto c = env.broker()->subscribe(env.executor(), s, name, open);
        return c ? std::move(*c) : nullptr;
    }
    message next(consumer_port& c) {
        auto r = env.run(c.receive());
        return r && *r ? **r : nullptr;
    }
};

TEST(TestBroker, RefusesWhatAServerRefuses) {
    fixture f;
    auto a = f.consume(spec("t", "s", subscription_type::exclusive), "a");
    ASSERT_NE(a, nullptr);
    auto b = f.env.broker()->subscribe(f.env.executor(),
                                       spec("t", "s", subscription_type::exclusive), "b", f.open);
    ASSERT_FALSE(b);
    EXPECT_EQ(b.error(), make_error_code(errc::consumer_busy));
    auto c = f.env.broker()->subscribe(f.env.executor(), spec("t", "s", subscription_type::shared),
                                       "c", f.open);
    ASSERT_FALSE(c) << "a consumer of another type on a busy subscription";
    outgoing big{std::string(f.env.broker()->settings().max_message_size + 1, 'x'), {}, {}};
    auto p = f.env.broker()->publish("t", big);
    ASSERT_FALSE(p);
    EXPECT_EQ(p.error(), make_error_code(errc::message_too_large));
    big.payload.pop_back();
    EXPECT_TRUE(f.env.broker()->publish("t", big)) << "exactly max_message_size is accepted";
}

TEST(TestBroker, NackRedeliversWithTheCountAndSeekForgetsLaterAcks) {
    fixture f;
    auto c = f.consume(spec("t", "s", subscription_type::exclusive), "a");
    for (int i = 0; i < 3; ++i) {
        ASSERT_TRUE(f.env.broker()->publish("t", outgoing{"m" + std::to_string(i), {}, {}}));
    }
    auto m0 = f.next(*c);
    ASSERT_EQ(m0->payload, "m0");
    ASSERT_TRUE(*f.env.run(c->nack(m0)));
    auto m1 = f.next(*c);
    auto m2 = f.next(*c);
    auto again = f.next(*c);
    EXPECT_EQ(m1->payload, "m1");
    EXPECT_EQ(m2->payload, "m2");
    ASSERT_EQ(again->payload, "m0");
    EXPECT_EQ(again->redelivery_count, 1U);
    for (const auto& m : {again, m1, m2})
        ASSERT_TRUE(*f.env.run(c->ack(m)));
    EXPECT_EQ(f.env.broker()->backlog("t", "s"), 0U);
    ASSERT_TRUE(*f.env.run(c->seek(position::message(m1->id))));
    EXPECT_EQ(f.env.broker()->backlog("t", "s"), 2U) << "acks at and after m1 are forgotten";
    EXPECT_EQ(f.next(*c)->payload, "m1");
    EXPECT_EQ(f.next(*c)->payload, "m2");
}

TEST(TestBroker, FailoverGivesEverythingToTheFirstByNameThenToTheNext) {
    fixture f;
    auto b = f.consume(spec("t", "s", subscription_type::failover), "b");
    auto a = f.consume(spec("t", "s", subscription_type::failover), "a");
    ASSERT_TRUE(f.env.broker()->publish("t", outgoing{"x", {}, {}}));
    EXPECT_EQ(f.next(*a)->payload, "x");
    f.env.run([](consumer_port& c) -> boost::asio::awaitable<bool> {
        co_await c.close();
        co_return true;
    }(*a));
    EXPECT_EQ(f.next(*b)->payload, "x") << "the unacked message goes to the standby";
}

TEST(TestBroker, AHandleOfAClosedConnectionIsRefused) {
    fixture f;
    auto c = f.consume(spec("t", "s", subscription_type::shared), "a");
    ASSERT_TRUE(f.env.broker()->publish("t", outgoing{"x", {}, {}}));
    auto m = f.next(*c);
    *f.open = true;  // the connection shut down
    auto r = f.env.run(c->ack(m));
    ASSERT_TRUE(r);
    EXPECT_EQ(r->error(), make_error_code(errc::shut_down));
    auto again = f.env.broker()->subscribe(f.env.executor(),
                                           spec("t", "s2", subscription_type::shared), "b", f.open);
    EXPECT_FALSE(again);
}

}  // namespace
}  // namespace nereus::runtime::testing
