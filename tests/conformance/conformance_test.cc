// The runtime's conformance suite: one list of behaviours, the same assertions for every
// transport (see harness.h). Each TEST_P is one behaviour and one ctest test per transport
// (label `conformance`).

#include "nereus/runtime/errc.h"

#include <gtest/gtest.h>

#include "harness.h"
#include <algorithm>
#include <map>
#include <set>

namespace nereus::runtime::conformance {

std::unique_ptr<env> make_inproc_env();
#if NEREUS_CONFORMANCE_LIVE
std::unique_ptr<env> make_live_env();
#endif

std::unique_ptr<env> make_env(const std::string& name) {
    if (name == "inproc")
        return make_inproc_env();
#if NEREUS_CONFORMANCE_LIVE
    if (name == "live")
        return make_live_env();
#endif
    return nullptr;
}

namespace {

class Conformance : public ::testing::TestWithParam<std::string> {
protected:
    void SetUp() override {
        e_ = make_env(GetParam());
        ASSERT_NE(e_, nullptr);
        std::string p = ::testing::UnitTest::GetInstance()->current_test_info()->name();
        std::replace_if(
            p.begin(), p.end(), [](char c) { return !std::isalnum(c); }, '-');
        e_->set_prefix(p + "-" + std::to_string(::getpid()));
    }
    env& e() { return *e_; }
    std::unique_ptr<env> e_;
};

bool is(const std::error_code& ec, errc want) {
    return ec == make_error_code(want);
}

// --- settlement -------------------------------------------------------------------------

TEST_P(Conformance, AckIsConfirmedAndNeverRedelivered) {
    const auto t = e().topic("ack");
    recorder rec;
    {
        app a(e());
        ASSERT_TRUE(a.record(spec_for(t, "s"), rec));
        ASSERT_TRUE(a.start());
        for (const char* p : {"a", "b", "c"})
            ASSERT_TRUE(a.publish(t, p));
        ASSERT_TRUE(e().wait_for([&] { return a->stats("s")->acked == 3; }));
        const auto report = a.stop();
        EXPECT_TRUE(report.balanced());
        EXPECT_EQ(report.subscriptions.at(0).acked, 3U);
    }
    recorder again;
    app b(e());
    ASSERT_TRUE(b.record(spec_for(t, "s"), again));
    ASSERT_TRUE(b.start());
    ASSERT_TRUE(b.publish(t, "d"));
    ASSERT_TRUE(e().wait_for([&] { return again.got.size() >= 1; }));
    e().settle();
    EXPECT_EQ(again.payloads(), std::vector<std::string>{"d"});
}

TEST_P(Conformance, RetryIsRedeliveredByTheBrokerWithRedeliveryCount) {
    const auto t = e().topic("retry");
    recorder rec;
    app a(e());
    ASSERT_TRUE(a.record(spec_for(t, "s"), rec, [](const message_data& m) {
        return m.redelivery_count < 2 ? outcome::retry() : outcome::ack();
    }));
    ASSERT_TRUE(a.start());
    ASSERT_TRUE(a.publish(t, "m"));
    ASSERT_TRUE(e().wait_for([&] { return a->stats("s")->acked == 1; }));
    ASSERT_EQ(rec.got.size(), 3U);
    EXPECT_EQ(rec.got[0].redelivery, 0U);
    EXPECT_EQ(rec.got[1].redelivery, 1U);
    EXPECT_EQ(rec.got[2].redelivery, 2U);
    EXPECT_EQ(a->stats("s")->nacked, 2U);
}

TEST_P(Conformance, RetryAfterIsHeldOnTheRuntimeClockThenRedeliveredOnce) {
    const auto t = e().topic("retry-after");
    recorder rec;
    app a(e());
    ASSERT_TRUE(a.record(spec_for(t, "s"), rec, [](const message_data& m) {
        return m.redelivery_count == 0 ? outcome::retry_after(2000ms) : outcome::ack();
    }));
    ASSERT_TRUE(a.start());
    ASSERT_TRUE(a.publish(t, "m"));
    ASSERT_TRUE(e().wait_for([&] { return rec.got.size() == 1; }));
    e().advance(1500ms);
    EXPECT_EQ(rec.got.size(), 1U) << "redelivered before its delay";
    EXPECT_EQ(a->stats("s")->nacked, 0U) << "the hold is the process's: no nack yet";
    e().advance(600ms);
    ASSERT_TRUE(e().wait_for([&] { return a->stats("s")->acked == 1; }));
    e().settle();
    ASSERT_EQ(rec.got.size(), 2U);
    EXPECT_EQ(rec.got[1].redelivery, 1U);
    EXPECT_GE((rec.got[1].at - rec.got[0].at).count(), 2000);
}

TEST_P(Conformance, DeadLetterAfterMaxRedeliveriesAndNotBefore) {
    const auto t = e().topic("dlq-max");
    const auto dlq = e().topic("dlq-max-dead");
    recorder rec, dead;
    app a(e());
    auto s = spec_for(t, "s", subscription_type::exclusive);
    s.dead_letter = dead_letter_policy{2, dlq};
    ASSERT_TRUE(a.record(s, rec, [](const message_data&) { return outcome::retry_after(500ms); }));
    ASSERT_TRUE(a.record(spec_for(dlq, "dead"), dead));
    ASSERT_TRUE(a.start());
    ASSERT_TRUE(a.publish(t, "poison"));
    for (std::size_t attempt = 1; attempt <= 3; ++attempt) {
        ASSERT_TRUE(e().wait_for([&] { return rec.got.size() == attempt; })) << attempt;
        EXPECT_TRUE(dead.got.empty()) << "dead-lettered before attempt 3, at " << attempt;
        e().advance(600ms);
    }
    ASSERT_TRUE(e().wait_for([&] { return dead.got.size() == 1; }));
    e().settle();
    EXPECT_EQ(rec.got.size(), 3U);
    EXPECT_EQ(dead.got[0].payload, "poison");
    const auto st = *a->stats("s");
    EXPECT_EQ(st.nacked, 2U);
    EXPECT_EQ(st.dead_lettered, 1U);
    bool real_topic = false;
    for (const auto& [k, v] : dead.got[0].properties)
        real_topic |= k == "REAL_TOPIC" && v == t;
    EXPECT_TRUE(real_topic);
}

TEST_P(Conformance, DeadLetterOutcomePublishesThenAcknowledges) {
    const auto t = e().topic("dl");
    const auto dlq = e().topic("dl-dead");
    recorder rec, dead;
    app a(e());
    auto s = spec_for(t, "s");
    s.dead_letter = dead_letter_policy{5, dlq};
    ASSERT_TRUE(a.record(s, rec, [](const message_data&) { return outcome::dead_letter(); }));
    ASSERT_TRUE(a.record(spec_for(dlq, "dead"), dead));
    ASSERT_TRUE(a.start());
    ASSERT_TRUE(a.publish(t, "x", "k1"));
    ASSERT_TRUE(
        e().wait_for([&] { return dead.got.size() == 1 && a->stats("s")->dead_lettered == 1; }));
    e().settle();
    EXPECT_EQ(rec.got.size(), 1U);
    EXPECT_EQ(dead.got[0].key, std::optional<std::string>("k1"));
    bool origin = false;
    for (const auto& [k, v] : dead.got[0].properties)
        origin |= k == "ORIGIN_MESSAGE_ID";
    EXPECT_TRUE(origin);
}

TEST_P(Conformance, DeadLetterTopicDefaultsToPulsarsName) {
    const auto t = e().topic("dl-default");
    recorder rec, dead;
    app a(e());
    auto s = spec_for(t, "sub1");
    s.dead_letter = dead_letter_policy{1, ""};
    ASSERT_TRUE(a.record(s, rec, [](const message_data&) { return outcome::dead_letter(); }));
    ASSERT_TRUE(a.record(spec_for(t + "-sub1-DLQ", "dead"), dead));
    ASSERT_TRUE(a.start());
    ASSERT_TRUE(a.publish(t, "x"));
    ASSERT_TRUE(e().wait_for([&] { return dead.got.size() == 1; }));
    EXPECT_EQ(dead.got[0].topic, t + "-sub1-DLQ");
}

TEST_P(Conformance, DropAcknowledgesWithoutHandlingAgain) {
    const auto t = e().topic("drop");
    recorder rec;
    {
        app a(e());
        ASSERT_TRUE(
            a.record(spec_for(t, "s"), rec, [](const message_data&) { return outcome::drop(); }));
        ASSERT_TRUE(a.start());
        ASSERT_TRUE(a.publish(t, "x"));
        ASSERT_TRUE(e().wait_for([&] { return a->stats("s")->dropped == 1; }));
        e().settle();
        EXPECT_EQ(rec.got.size(), 1U);
        EXPECT_EQ(a->stats("s")->acked, 0U);
        EXPECT_TRUE(a.stop().balanced());
    }
    recorder again;
    app b(e());
    ASSERT_TRUE(b.record(spec_for(t, "s"), again));
    ASSERT_TRUE(b.start());
    e().advance(200ms);
    e().settle();
    EXPECT_TRUE(again.got.empty());
}

TEST_P(Conformance, HandlerExceptionSettlesByTheDeclaredDefault) {
    const auto t = e().topic("throw");
    int calls = 0;
    app a(e());
    ASSERT_TRUE(a->subscribe<raw_codec>(spec_for(t, "s"), [&calls](const std::string&, context&) {
        if (++calls == 1)
            throw std::runtime_error("boom");
        return outcome::ack();
    }));
    ASSERT_TRUE(a.start());
    ASSERT_TRUE(a.publish(t, "x"));
    ASSERT_TRUE(e().wait_for([&] { return a->stats("s")->acked == 1; }));
    EXPECT_EQ(calls, 2);  // default on_exception = retry: the broker redelivered it
    EXPECT_EQ(a->stats("s")->nacked, 1U);
}

TEST_P(Conformance, HandlerExceptionCanBeDeclaredDeadLetter) {
    const auto t = e().topic("throw-dl");
    recorder dead;
    app a(e());
    auto s = spec_for(t, "s");
    s.on_exception = outcome::dead_letter();
    ASSERT_TRUE(a->subscribe<raw_codec>(
        s, [](const std::string&, context&) -> outcome { throw std::runtime_error("boom"); }));
    ASSERT_TRUE(a.record(spec_for(t + "-s-DLQ", "dead"), dead));
    ASSERT_TRUE(a.start());
    ASSERT_TRUE(a.publish(t, "x"));
    // The dead-letter copy can arrive before the original's ack is confirmed: wait for both.
    ASSERT_TRUE(
        e().wait_for([&] { return dead.got.size() == 1 && a->stats("s")->dead_lettered == 1; }));
    EXPECT_EQ(a->stats("s")->dead_lettered, 1U);
}

TEST_P(Conformance, DecodeFailureSettlesByTheDeclaredDefault) {
    const auto t = e().topic("decode");
    std::vector<std::int64_t> got;
    app a(e());
    ASSERT_TRUE(
        a->subscribe<json_codec<>>(spec_for(t, "s"), [&got](const boost::json::value& v, context&) {
            got.push_back(v.at("n").as_int64());
            return outcome::ack();
        }));
    ASSERT_TRUE(a.start());
    ASSERT_TRUE(a.publish(t, "not json"));
    ASSERT_TRUE(a.publish(t, R"({"n": 7})"));
    ASSERT_TRUE(e().wait_for([&] { return a->stats("s")->accounted() == 2; }));
    EXPECT_EQ(got, std::vector<std::int64_t>{7});
    EXPECT_EQ(a->stats("s")->dropped, 1U);  // default on_decode_failure = drop
    EXPECT_EQ(a->stats("s")->acked, 1U);
}

struct order {
    std::string id;
    int qty = 0;
    friend void tag_invoke(boost::json::value_from_tag, boost::json::value& v, const order& o) {
        v = {{"id", o.id}, {"qty", o.qty}};
    }
    friend order tag_invoke(boost::json::value_to_tag<order>, const boost::json::value& v) {
        return order{std::string(v.at("id").as_string()), static_cast<int>(v.at("qty").as_int64())};
    }
};

TEST_P(Conformance, TypedPayloadsRoundTripThroughCodecs) {
    const auto t = e().topic("typed");
    std::vector<std::string> got;
    app a(e());
    ASSERT_TRUE(a->subscribe<json_codec<order>>(spec_for(t, "s"), [&got](const order& o, context&) {
        got.push_back(o.id + ":" + std::to_string(o.qty));
        return outcome::ack();
    }));
    ASSERT_TRUE(a.start());
    auto r = e().run(a->publisher_handle().publish<json_codec<order>>(t, order{"o-1", 3}));
    ASSERT_TRUE(r && *r);
    ASSERT_TRUE(e().wait_for([&] { return got.size() == 1; }));
    EXPECT_EQ(got[0], "o-1:3");
}

// --- lanes --------------------------------------------------------------------------------

TEST_P(Conformance, SequentialLaneRunsOneAtATimeInOrder) {
    const auto t = e().topic("seq");
    std::vector<std::string> got;
    app a(e());
    auto s = spec_for(t, "s", subscription_type::exclusive);
    ASSERT_TRUE(a->subscribe<raw_codec>(
        s, [&got](const std::string& p, context& ctx) -> asio::awaitable<outcome> {
            got.push_back(p);
            co_await ctx.runtime_clock().sleep(10ms);
            co_return outcome::ack();
        }));
    ASSERT_TRUE(a.start());
    std::vector<std::string> want;
    for (int i = 0; i < 6; ++i) {
        want.push_back("m" + std::to_string(i));
        ASSERT_TRUE(a.publish(t, want.back()));
    }
    for (int i = 0; i < 20 && a->stats("s")->acked < 6; ++i)
        e().advance(10ms);
    ASSERT_TRUE(e().wait_for([&] { return a->stats("s")->acked == 6; }));
    EXPECT_EQ(got, want);
    EXPECT_EQ(a->stats("s")->max_concurrent, 1U);
}

TEST_P(Conformance, WorkersRunUpToNHandlersAtOnce) {
    const auto t = e().topic("workers");
    int running = 0;
    app a(e());
    auto s = spec_for(t, "s");
    s.dispatch = lanes::workers(4);
    ASSERT_TRUE(a->subscribe<raw_codec>(
        s, [&running](const std::string&, context& ctx) -> asio::awaitable<outcome> {
            ++running;
            // Long against settle() (300 ms): on a live env the clock is real.
            co_await ctx.runtime_clock().sleep(2000ms);
            --running;
            co_return outcome::ack();
        }));
    ASSERT_TRUE(a.start());
    for (int i = 0; i < 8; ++i)
        ASSERT_TRUE(a.publish(t, "m" + std::to_string(i)));
    ASSERT_TRUE(e().wait_for([&] { return running == 4; }));
    e().settle();
    EXPECT_EQ(running, 4);
    for (int i = 0; i < 30 && a->stats("s")->acked < 8; ++i)
        e().advance(500ms);
    ASSERT_TRUE(e().wait_for([&] { return a->stats("s")->acked == 8; }));
    EXPECT_EQ(a->stats("s")->max_concurrent, 4U);
}

// Two keys that land in different lanes of by_key(n).
std::pair<std::string, std::string> keys_in_two_lanes(std::size_t n) {
    const std::string a = "A";
    for (int i = 0;; ++i) {
        std::string b = "B" + std::to_string(i);
        if (std::hash<std::string>{}(a) % n != std::hash<std::string>{}(b) % n)
            return {a, b};
    }
}

TEST_P(Conformance, LanesByKeyKeepEachKeysOrder) {
    const auto t = e().topic("bykey");
    std::map<std::string, std::vector<int>> got;
    app a(e());
    auto s = spec_for(t, "s", subscription_type::key_shared);
    s.dispatch = lanes::by_key(4);
    ASSERT_TRUE(a->subscribe<raw_codec>(
        s, [&got](const std::string& p, context& ctx) -> asio::awaitable<outcome> {
            co_await ctx.runtime_clock().sleep(std::chrono::milliseconds(10 * (p.back() - '0')));
            got[*ctx.msg().key].push_back(std::stoi(p.substr(0, p.find('-'))));
            co_return outcome::ack();
        }));
    ASSERT_TRUE(a.start());
    for (int i = 0; i < 5; ++i) {
        for (int k = 0; k < 4; ++k) {
            ASSERT_TRUE(
                a.publish(t, std::to_string(i) + "-" + std::to_string(k), "k" + std::to_string(k)));
        }
    }
    for (int i = 0; i < 100 && a->stats("s")->acked < 20; ++i)
        e().advance(10ms);
    ASSERT_TRUE(e().wait_for([&] { return a->stats("s")->acked == 20; }));
    for (const auto& [k, v] : got)
        EXPECT_EQ(v, (std::vector<int>{0, 1, 2, 3, 4})) << k;
    EXPECT_GT(a->stats("s")->max_concurrent, 1U);
}

TEST_P(Conformance, FailingKeyBlocksOnlyItsOwnLane) {
    const auto t = e().topic("block");
    const auto [ka, kb] = keys_in_two_lanes(8);
    std::vector<std::string> order_seen;
    app a(e());
    auto s = spec_for(t, "s", subscription_type::key_shared);
    s.dispatch = lanes::by_key(8);
    ASSERT_TRUE(a->subscribe<raw_codec>(s, [&order_seen](const std::string& p, context& ctx) {
        order_seen.push_back(p);
        return p == "A1" && ctx.msg().redelivery_count == 0 ? outcome::retry_after(2000ms)
                                                            : outcome::ack();
    }));
    ASSERT_TRUE(a.start());
    ASSERT_TRUE(a.publish(t, "A1", ka));
    ASSERT_TRUE(a.publish(t, "A2", ka));
    ASSERT_TRUE(a.publish(t, "B1", kb));
    ASSERT_TRUE(e().wait_for([&] { return order_seen.size() == 2; }));
    e().settle();
    EXPECT_EQ(order_seen, (std::vector<std::string>{"A1", "B1"})) << "A2 ran before A1 settled";
    e().advance(2100ms);
    ASSERT_TRUE(e().wait_for([&] { return a->stats("s")->acked == 3; }));
    EXPECT_EQ(order_seen, (std::vector<std::string>{"A1", "B1", "A1", "A2"}));
}

// --- batches --------------------------------------------------------------------------------

TEST_P(Conformance, BatchHandlerGetsBatchesTheRuntimeAssembles) {
    const auto t = e().topic("batch");
    std::vector<std::size_t> sizes;
    std::multiset<std::string> all;
    app consumer(e());
    auto s = spec_for(t, "s");
    s.batch_size = 5;
    s.batch_linger = 100ms;
    ASSERT_TRUE(
        consumer->subscribe_batch<raw_codec>(s, [&](std::vector<std::string>& batch, context&) {
            sizes.push_back(batch.size());
            all.insert(batch.begin(), batch.end());
            return outcome::ack();
        }));
    ASSERT_TRUE(consumer.start());
    app producer(e());
    ASSERT_TRUE(producer.start());
    auto sent = e().spawn([](publisher p, std::string topic) -> asio::awaitable<bool> {
        for (int i = 0; i < 12; ++i) {
            outgoing m{"m" + std::to_string(i), {}, {}};
            auto r = co_await p.publish(topic, std::move(m));
            if (!r)
                co_return false;
        }
        co_return true;
    }(producer->publisher_handle(), t));
    for (int i = 0; i < 30 && consumer->stats("s")->acked < 12; ++i)
        e().advance(100ms);
    ASSERT_TRUE(e().wait_for([&] { return consumer->stats("s")->acked == 12; }));
    EXPECT_TRUE(sent->value_or(false));
    EXPECT_EQ(all.size(), 12U);
    EXPECT_EQ(std::set<std::string>(all.begin(), all.end()).size(), 12U) << "a message twice";
    for (auto n : sizes)
        EXPECT_LE(n, 5U);
    EXPECT_GE(sizes.size(), 3U);
}

TEST_P(Conformance, BatchOutcomeSettlesEveryMessageOfTheBatch) {
    const auto t = e().topic("batch-retry");
    int batches = 0;
    std::map<std::string, int> deliveries;
    app a(e());
    auto s = spec_for(t, "s", subscription_type::exclusive);
    s.batch_size = 4;
    ASSERT_TRUE(a->subscribe_batch<raw_codec>(s, [&](std::vector<std::string>& batch, context&) {
        ++batches;
        for (const auto& m : batch)
            ++deliveries[m];
        return deliveries["m0"] == 1 && std::find(batch.begin(), batch.end(), "m0") != batch.end()
                   ? outcome::retry()
                   : outcome::ack();
    }));
    ASSERT_TRUE(a.start());
    for (int i = 0; i < 4; ++i)
        ASSERT_TRUE(a.publish(t, "m" + std::to_string(i)));
    ASSERT_TRUE(e().wait_for([&] { return a->stats("s")->acked == 4; }));
    e().settle();
    const auto st = *a->stats("s");
    EXPECT_EQ(st.acked, 4U);
    EXPECT_EQ(st.nacked + st.acked, st.received);
    EXPECT_GE(st.nacked, 1U);
    EXPECT_EQ(deliveries["m0"], 2);
}

// --- publishing ---------------------------------------------------------------------------

TEST_P(Conformance, OneProducerPerTopicSharedByEveryPublisher) {
    const auto x = e().topic("px");
    const auto y = e().topic("py");
    app a(e());
    ASSERT_TRUE(a.start());
    auto p1 = a->publisher_handle();
    auto p2 = a->publisher_handle();
    auto r1 = e().spawn(p1.publish(x, outgoing{"1", {}, {}}));
    auto r2 = e().spawn(p2.publish(x, outgoing{"2", {}, {}}));  // while the first is opening
    ASSERT_TRUE(e().wait_for([&] { return r1->has_value() && r2->has_value(); }));
    ASSERT_TRUE(r1->value() && r2->value());
    EXPECT_EQ(a->producers(), 1U);
    ASSERT_TRUE(a.publish(y, "3"));
    ASSERT_TRUE(a.publish(x, "4"));
    EXPECT_EQ(a->producers(), 2U);
}

TEST_P(Conformance, PublishIsConfirmedAndCarriesKeyAndProperties) {
    const auto t = e().topic("props");
    recorder rec;
    app a(e());
    ASSERT_TRUE(a.record(spec_for(t, "s"), rec));
    ASSERT_TRUE(a.start());
    auto id = a.publish(t, "hello", "key-1", {{"trace", "42"}});
    ASSERT_TRUE(id);
    ASSERT_TRUE(e().wait_for([&] { return rec.got.size() == 1; }));
    EXPECT_EQ(rec.got[0].id, *id);
    EXPECT_EQ(rec.got[0].key, std::optional<std::string>("key-1"));
    EXPECT_EQ(rec.got[0].topic, t);
    bool trace = false;
    for (const auto& [k, v] : rec.got[0].properties)
        trace |= k == "trace" && v == "42";
    EXPECT_TRUE(trace);
}

TEST_P(Conformance, ShortTopicNamesAreCompletedAsTheServerDoes) {
    const std::string local = e().prefix() + "-short";
    recorder rec;
    app a(e());
    ASSERT_TRUE(a.record(spec_for(local, "s"), rec));
    ASSERT_TRUE(a.start());
    ASSERT_TRUE(a.publish("public/default/" + local, "x"));
    ASSERT_TRUE(e().wait_for([&] { return rec.got.size() == 1; }));
    EXPECT_EQ(rec.got[0].topic, "persistent://public/default/" + local);
}

// --- seek ---------------------------------------------------------------------------------

TEST_P(Conformance, SeekEarliestReplaysTheRetainedLog) {
    const auto t = e().topic("seek-earliest");
    recorder rec;
    app a(e());
    ASSERT_TRUE(a.record(spec_for(t, "s", subscription_type::exclusive), rec));
    ASSERT_TRUE(a.start());
    for (const char* p : {"a", "b", "c"})
        ASSERT_TRUE(a.publish(t, p));
    ASSERT_TRUE(e().wait_for([&] { return a->stats("s")->acked == 3; }));
    auto sk = a->seeker_for("s");
    ASSERT_TRUE(sk);
    auto r = e().run(sk->seek(position::earliest()));
    ASSERT_TRUE(r && *r);
    ASSERT_TRUE(e().wait_for([&] { return a->stats("s")->acked == 6; }));
    EXPECT_EQ(rec.payloads(), (std::vector<std::string>{"a", "b", "c", "a", "b", "c"}));
}

TEST_P(Conformance, SeekLatestFromAHandlerDiscardsBufferedDeliveries) {
    const auto t = e().topic("seek-latest");
    std::vector<std::string> got;
    bool sought = false;
    app a(e());
    auto s = spec_for(t, "s", subscription_type::exclusive);
    ASSERT_TRUE(a->subscribe<raw_codec>(
        s, [&](const std::string& p, context& ctx) -> asio::awaitable<outcome> {
            got.push_back(p);
            if (!sought) {
                sought = true;
                auto r = co_await ctx.seeker_handle().seek(position::latest());
                if (!r)
                    got.push_back("seek failed");
            }
            co_return outcome::ack();
        }));
    app producer(e());
    ASSERT_TRUE(producer.start());
    for (int i = 0; i < 6; ++i)
        ASSERT_TRUE(producer.publish(t, "old" + std::to_string(i)));
    ASSERT_TRUE(a.start());
    ASSERT_TRUE(e().wait_for([&] { return sought && a->stats("s")->accounted() >= 1; }));
    e().settle();
    ASSERT_TRUE(producer.publish(t, "new"));
    ASSERT_TRUE(e().wait_for([&] { return !got.empty() && got.back() == "new"; }));
    e().settle();
    EXPECT_EQ(got, (std::vector<std::string>{"old0", "new"}));
    const auto st = *a->stats("s");
    EXPECT_EQ(st.acked, 2U);
    EXPECT_EQ(st.received, st.acked + st.discarded);
}

TEST_P(Conformance, SeekToAMessageIdDeliversFromThatMessageOn) {
    const auto t = e().topic("seek-id");
    recorder rec;
    app a(e());
    ASSERT_TRUE(a.record(spec_for(t, "s", subscription_type::exclusive), rec));
    ASSERT_TRUE(a.start());
    std::vector<message_id> ids;
    for (int i = 0; i < 5; ++i) {
        auto id = a.publish(t, "m" + std::to_string(i));
        ASSERT_TRUE(id);
        ids.push_back(*id);
    }
    ASSERT_TRUE(e().wait_for([&] { return a->stats("s")->acked == 5; }));
    auto r = e().run(a->seeker_for("s")->seek(position::message(ids[2])));
    ASSERT_TRUE(r && *r);
    ASSERT_TRUE(e().wait_for([&] { return a->stats("s")->acked == 8; }));
    e().settle();
    EXPECT_EQ(rec.payloads(),
              (std::vector<std::string>{"m0", "m1", "m2", "m3", "m4", "m2", "m3", "m4"}));
}

TEST_P(Conformance, SeekToAPublishTimeDeliversFromTheFirstMessageAtOrAfterIt) {
    const auto t = e().topic("seek-time");
    recorder rec;
    app a(e());
    ASSERT_TRUE(a.record(spec_for(t, "s", subscription_type::exclusive), rec));
    ASSERT_TRUE(a.start());
    ASSERT_TRUE(a.publish(t, "before0"));
    ASSERT_TRUE(a.publish(t, "before1"));
    e().advance(1000ms);
    const auto at = e().clock().now();
    e().advance(1000ms);
    ASSERT_TRUE(a.publish(t, "after0"));
    ASSERT_TRUE(a.publish(t, "after1"));
    ASSERT_TRUE(e().wait_for([&] { return a->stats("s")->acked == 4; }));
    auto r = e().run(a->seeker_for("s")->seek(position::time_at(at)));
    ASSERT_TRUE(r && *r);
    ASSERT_TRUE(e().wait_for([&] { return a->stats("s")->acked == 6; }));
    e().settle();
    EXPECT_EQ(rec.payloads(), (std::vector<std::string>{"before0", "before1", "after0", "after1",
                                                        "after0", "after1"}));
}

// --- refusals -------------------------------------------------------------------------------

TEST_P(Conformance, PayloadOverMaxMessageSizeIsRefused) {
    const auto t = e().topic("big");
    app a(e());
    ASSERT_TRUE(a.start());
    auto r = a.publish(t, std::string(5 * 1024 * 1024 + 1, 'x'));
    ASSERT_FALSE(r);
    EXPECT_TRUE(is(r.error(), errc::message_too_large)) << r.error().message();
    EXPECT_TRUE(a.publish(t, "small")) << "the refusal must not break the producer";
}

TEST_P(Conformance, SecondConsumerOfAnExclusiveSubscriptionIsRefused) {
    const auto t = e().topic("excl");
    recorder r1, r2;
    app a(e());
    ASSERT_TRUE(a.record(spec_for(t, "s", subscription_type::exclusive), r1));
    ASSERT_TRUE(a.start());
    app b(e());
    ASSERT_TRUE(b.record(spec_for(t, "s", subscription_type::exclusive), r2));
    auto st = b.start();
    ASSERT_FALSE(st);
    EXPECT_TRUE(is(st.error(), errc::consumer_busy)) << st.error().message();
    EXPECT_EQ(b->current_state(), runtime::state::stopped);
    ASSERT_TRUE(a.publish(t, "x"));
    ASSERT_TRUE(e().wait_for([&] { return r1.got.size() == 1; }));
}

TEST_P(Conformance, HandlesAreRefusedAfterShutdown) {
    const auto t = e().topic("after");
    recorder rec;
    app a(e());
    ASSERT_TRUE(a.record(spec_for(t, "s"), rec));
    ASSERT_TRUE(a.start());
    auto pub = a->publisher_handle();
    auto sk = a->seeker_for("s");
    ASSERT_TRUE(sk);
    ASSERT_TRUE(a.stop().balanced());
    auto p = e().run(pub.publish(t, outgoing{"x", {}, {}}));
    ASSERT_TRUE(p);
    ASSERT_FALSE(*p);
    EXPECT_TRUE(is(p->error(), errc::shut_down));
    auto s = e().run(sk->seek(position::earliest()));
    ASSERT_TRUE(s);
    ASSERT_FALSE(*s);
    EXPECT_TRUE(is(s->error(), errc::shut_down));
    auto sub = a.record(spec_for(t, "s2"), rec);
    ASSERT_FALSE(sub);
    EXPECT_TRUE(is(sub.error(), errc::shut_down));
    auto again = a.start();
    ASSERT_FALSE(again);
    EXPECT_TRUE(is(again.error(), errc::shut_down));
}

TEST_P(Conformance, InconsistentSpecsAreRefusedAtRegistration) {
    app a(e());
    auto s = spec_for(e().topic("bad"), "s");
    s.dispatch = lanes::by_key(4);
    s.batch_size = 10;
    auto r = a->subscribe_batch<raw_codec>(
        s, [](std::vector<std::string>&, context&) { return outcome::ack(); });
    ASSERT_FALSE(r);
    EXPECT_TRUE(is(r.error(), errc::invalid_spec));
    auto no_name = spec_for(e().topic("bad"), "");
    recorder rec;
    EXPECT_FALSE(a.record(no_name, rec));
    auto bad_re = spec_for("", "s");
    bad_re.topics = topic_selector::matching("persistent://public/default/(");
    EXPECT_FALSE(a.record(bad_re, rec));
}

// --- subscriptions over topics, lists and patterns; subscription types ------------------------

TEST_P(Conformance, ListSubscriptionReceivesFromEveryTopic) {
    const auto x = e().topic("lx");
    const auto y = e().topic("ly");
    recorder rec;
    app a(e());
    auto s = spec_for(x, "s");
    s.topics = topic_selector::list({x, y});
    ASSERT_TRUE(a.record(s, rec));
    ASSERT_TRUE(a.start());
    ASSERT_TRUE(a.publish(x, "to-x"));
    ASSERT_TRUE(a.publish(y, "to-y"));
    ASSERT_TRUE(e().wait_for([&] { return rec.got.size() == 2; }));
    std::map<std::string, std::string> by_topic;
    for (const auto& g : rec.got)
        by_topic[g.payload] = g.topic;
    EXPECT_EQ(by_topic["to-x"], x);
    EXPECT_EQ(by_topic["to-y"], y);
}

TEST_P(Conformance, PatternSubscriptionReceivesFromMatchingTopicsOnly) {
    const auto a1 = e().topic("pat-a");
    const auto a2 = e().topic("pat-b");
    const auto other = e().topic("nopat-c");
    app producer(e());
    ASSERT_TRUE(producer.start());
    ASSERT_TRUE(producer.publish(a1, "1"));
    ASSERT_TRUE(producer.publish(a2, "2"));
    ASSERT_TRUE(producer.publish(other, "3"));
    recorder rec;
    app a(e());
    auto s = spec_for(a1, "s");
    s.topics = topic_selector::matching("persistent://public/default/" + e().prefix() + "-pat-.*");
    ASSERT_TRUE(a.record(s, rec));
    ASSERT_TRUE(a.start());
    ASSERT_TRUE(e().wait_for([&] { return rec.got.size() == 2; }));
    e().settle();
    auto p = rec.payloads();
    std::sort(p.begin(), p.end());
    EXPECT_EQ(p, (std::vector<std::string>{"1", "2"}));
}

TEST_P(Conformance, PatternSubscriptionReceivesMessagesOfATopicCreatedAfterItSubscribed) {
    // A pattern keeps matching while the subscription runs: a topic created after subscribe
    // joins it (live: the client lists the namespace again every pattern_auto_discovery_period,
    // short in the live env; the test transport attaches a new topic when it is created), and
    // the topics it already read are not disturbed (nothing lost, nothing twice).
    const auto first = e().topic("grow-a");
    const auto later = e().topic("grow-b");
    const auto other = e().topic("nogrow-c");
    app producer(e());
    ASSERT_TRUE(producer.start());
    ASSERT_TRUE(producer.publish(first, "old"));
    recorder rec;
    app a(e());
    auto s = spec_for(first, "s");
    s.topics = topic_selector::matching("persistent://public/default/" + e().prefix() + "-grow-.*");
    ASSERT_TRUE(a.record(s, rec));
    ASSERT_TRUE(a.start());
    ASSERT_TRUE(e().wait_for([&] { return rec.got.size() == 1; }));
    ASSERT_TRUE(producer.publish(later, "new"));  // creates the topic
    ASSERT_TRUE(producer.publish(other, "not-matching"));
    ASSERT_TRUE(e().wait_for([&] { return rec.count("new") == 1; }))
        << "a topic created after subscribe was never joined";
    ASSERT_TRUE(producer.publish(first, "old-2"));
    ASSERT_TRUE(producer.publish(later, "new-2"));
    ASSERT_TRUE(e().wait_for([&] { return rec.got.size() >= 4; }));
    ASSERT_TRUE(e().wait_for([&] { return a->stats("s")->acked == 4; }));
    e().settle();
    auto p = rec.payloads();
    std::sort(p.begin(), p.end());
    EXPECT_EQ(p, (std::vector<std::string>{"new", "new-2", "old", "old-2"}));
    std::map<std::string, std::string> by_payload;
    for (const auto& g : rec.got)
        by_payload[g.payload] = g.topic;
    EXPECT_EQ(by_payload["old"], first);
    EXPECT_EQ(by_payload["old-2"], first);
    EXPECT_EQ(by_payload["new"], later);
    EXPECT_EQ(by_payload["new-2"], later);
    const auto report = a.stop();
    EXPECT_TRUE(report.balanced());
    EXPECT_EQ(report.subscriptions.at(0).acked, 4U);
}

TEST_P(Conformance, FailoverStandbyTakesOverWhenTheActiveConsumerCloses) {
    const auto t = e().topic("failover");
    recorder ra, rb;
    auto first = std::make_unique<app>(e());
    auto sa = spec_for(t, "s", subscription_type::failover);
    sa.consumer_name = "a-consumer";
    ASSERT_TRUE(first->record(sa, ra));
    ASSERT_TRUE(first->start());
    app second(e());
    auto sb = sa;
    sb.consumer_name = "b-consumer";
    ASSERT_TRUE(second.record(sb, rb));
    ASSERT_TRUE(second.start());
    for (int i = 0; i < 3; ++i)
        ASSERT_TRUE(second.publish(t, "m" + std::to_string(i)));
    ASSERT_TRUE(e().wait_for([&] { return ra.got.size() == 3; }));
    e().settle();
    EXPECT_TRUE(rb.got.empty());
    EXPECT_TRUE(first->stop().balanced());
    first.reset();
    ASSERT_TRUE(second.publish(t, "after"));
    ASSERT_TRUE(e().wait_for([&] { return rb.got.size() == 1; }));
    EXPECT_EQ(rb.got[0].payload, "after");
}

TEST_P(Conformance, SharedConsumersTogetherGetEachMessageOnce) {
    const auto t = e().topic("shared");
    recorder ra, rb;
    app a(e()), b(e());
    ASSERT_TRUE(a.record(spec_for(t, "s"), ra));
    ASSERT_TRUE(b.record(spec_for(t, "s"), rb));
    ASSERT_TRUE(a.start());
    ASSERT_TRUE(b.start());
    for (int i = 0; i < 10; ++i)
        ASSERT_TRUE(a.publish(t, "m" + std::to_string(i)));
    ASSERT_TRUE(e().wait_for([&] { return ra.got.size() + rb.got.size() == 10; }));
    e().settle();
    std::set<std::string> all;
    for (const auto& p : ra.payloads())
        all.insert(p);
    for (const auto& p : rb.payloads())
        all.insert(p);
    EXPECT_EQ(all.size(), 10U);
    EXPECT_EQ(ra.got.size() + rb.got.size(), 10U);
}

TEST_P(Conformance, KeySharedKeepsEveryKeyOnOneConsumer) {
    const auto t = e().topic("keyshared");
    recorder ra, rb;
    app a(e()), b(e());
    ASSERT_TRUE(a.record(spec_for(t, "s", subscription_type::key_shared), ra));
    ASSERT_TRUE(b.record(spec_for(t, "s", subscription_type::key_shared), rb));
    ASSERT_TRUE(a.start());
    ASSERT_TRUE(b.start());
    for (int i = 0; i < 4; ++i) {
        for (int k = 0; k < 6; ++k)
            ASSERT_TRUE(a.publish(t, "m", "key" + std::to_string(k)));
    }
    ASSERT_TRUE(e().wait_for([&] { return ra.got.size() + rb.got.size() == 24; }));
    std::set<std::string> ka, kb;
    for (const auto& g : ra.got)
        ka.insert(*g.key);
    for (const auto& g : rb.got)
        kb.insert(*g.key);
    for (const auto& k : ka)
        EXPECT_EQ(kb.count(k), 0U) << k << " went to both consumers";
}

// --- lifecycle and drain --------------------------------------------------------------------

TEST_P(Conformance, LifecycleHooksRunInOrder) {
    std::vector<std::string> calls;
    app a(e());
    recorder rec;
    ASSERT_TRUE(a.record(spec_for(e().topic("hooks"), "s"), rec));
    ASSERT_TRUE(a->on_startup([&](runtime& r) {
        calls.push_back("on_startup");
        EXPECT_EQ(r.current_state(), runtime::state::starting);
    }));
    ASSERT_TRUE(a->after_startup([&](runtime& r) {
        calls.push_back("after_startup");
        EXPECT_EQ(r.current_state(), runtime::state::started);
    }));
    ASSERT_TRUE(a->on_shutdown([&](runtime& r) {
        calls.push_back("on_shutdown");
        EXPECT_EQ(r.current_state(), runtime::state::stopping);
    }));
    ASSERT_TRUE(a->after_shutdown([&](runtime& r) {
        calls.push_back("after_shutdown");
        EXPECT_EQ(r.current_state(), runtime::state::stopped);
    }));
    ASSERT_TRUE(a.start());
    EXPECT_FALSE(a->on_startup([](runtime&) {})) << "hooks are declared before start";
    a.stop();
    EXPECT_EQ(calls, (std::vector<std::string>{"on_startup", "after_startup", "on_shutdown",
                                               "after_shutdown"}));
}

TEST_P(Conformance, DrainFinishesInFlightHandlersAndTheirSettlements) {
    const auto t = e().topic("drain");
    int started = 0;
    app a(e());
    ASSERT_TRUE(a->subscribe<raw_codec>(
        spec_for(t, "s", subscription_type::exclusive),
        [&started](const std::string&, context& ctx) -> asio::awaitable<outcome> {
            ++started;
            co_await ctx.runtime_clock().sleep(300ms);
            co_return outcome::ack();
        }));
    ASSERT_TRUE(a.start());
    ASSERT_TRUE(a.publish(t, "x"));
    ASSERT_TRUE(e().wait_for([&] { return started == 1; }));
    auto report = e().spawn(a->shutdown(5000ms));
    e().advance(400ms);
    ASSERT_TRUE(e().wait_for([&] { return report->has_value(); }));
    const auto& r = **report;
    EXPECT_TRUE(r.drained);
    EXPECT_TRUE(r.balanced());
    EXPECT_EQ(r.subscriptions.at(0).acked, 1U);
    EXPECT_EQ(r.subscriptions.at(0).unsettled, 0U);
}

TEST_P(Conformance, DrainTimeoutLeavesTheRestToTheBrokerAndAccountsForEveryDelivery) {
    const auto t = e().topic("drain-timeout");
    int started = 0;
    {
        app a(e());
        auto s = spec_for(t, "s", subscription_type::exclusive);
        ASSERT_TRUE(a->subscribe<raw_codec>(
            s, [&started](const std::string&, context& ctx) -> asio::awaitable<outcome> {
                ++started;
                co_await ctx.runtime_clock().sleep(60'000ms);
                co_return outcome::ack();
            }));
        ASSERT_TRUE(a.start());
        for (int i = 0; i < 3; ++i)
            ASSERT_TRUE(a.publish(t, "m" + std::to_string(i)));
        ASSERT_TRUE(e().wait_for([&] { return started == 1 && a->stats("s")->received == 3; }));
        auto report = e().spawn(a->shutdown(500ms));
        e().settle();  // the drain begins (its timer starts now)
        e().advance(600ms);
        ASSERT_TRUE(e().wait_for([&] { return report->has_value(); }));
        const auto& r = **report;
        EXPECT_TRUE(r.balanced());
        const auto& st = r.subscriptions.at(0);
        EXPECT_EQ(st.received, 3U);
        EXPECT_EQ(st.acked, 0U);
        EXPECT_EQ(st.unsettled, 3U);
    }
    recorder rec;
    app b(e());
    ASSERT_TRUE(b.record(spec_for(t, "s", subscription_type::exclusive), rec));
    ASSERT_TRUE(b.start());
    ASSERT_TRUE(e().wait_for([&] { return rec.got.size() == 3; })) << "unsettled ones came back";
}

TEST_P(Conformance, ShutdownAccountsForEveryDeliveryExactlyOnce) {
    const auto t = e().topic("accounting");
    app a(e());
    auto s = spec_for(t, "s", subscription_type::exclusive);
    s.dispatch = lanes::workers(3);
    ASSERT_TRUE(a->subscribe<raw_codec>(
        s, [](const std::string& p, context& ctx) -> asio::awaitable<outcome> {
            const int n = std::stoi(p);
            if (ctx.msg().redelivery_count > 0)
                co_return outcome::ack();
            switch (n % 5) {
                case 0:
                    co_return outcome::ack();
                case 1:
                    co_return outcome::retry();
                case 2:
                    co_return outcome::drop();
                case 3:
                    co_return outcome::dead_letter();
                default:
                    co_await ctx.runtime_clock().sleep(100ms);
                    co_return outcome::retry_after(10'000ms);
            }
        }));
    ASSERT_TRUE(a.start());
    for (int i = 0; i < 20; ++i)
        ASSERT_TRUE(a.publish(t, std::to_string(i)));
    auto settled = [&] {
        const auto st = *a->stats("s");
        return st.acked == 8 && st.dropped == 4 && st.dead_lettered == 4;
    };
    for (int i = 0; i < 20 && !settled(); ++i)
        e().advance(50ms);
    ASSERT_TRUE(e().wait_for(settled))
        << "acked " << a->stats("s")->acked << " dropped " << a->stats("s")->dropped << " dl "
        << a->stats("s")->dead_lettered << " nacked " << a->stats("s")->nacked << " received "
        << a->stats("s")->received << " failed " << a->stats("s")->settle_failed;
    auto report = e().spawn(a->shutdown(1000ms));
    e().settle();
    e().advance(1100ms);
    ASSERT_TRUE(e().wait_for([&] { return report->has_value(); }));
    const auto& r = **report;
    EXPECT_TRUE(r.balanced());
    const auto& st = r.subscriptions.at(0);
    EXPECT_EQ(st.accounted(), st.received);
    EXPECT_EQ(st.dead_lettered, 4U);
    EXPECT_EQ(st.dropped, 4U);
    EXPECT_EQ(st.unsettled, 4U) << "retry_after holds end unsettled at shutdown";
}

// --- only where the transport can do it -------------------------------------------------------

TEST_P(Conformance, AnUnconfirmedAckIsReportedAndNeverCountedSettled) {
    if (!e().has(feature::fault_injection))
        GTEST_SKIP() << "needs fault injection";
    const auto t = e().topic("ackfail");
    recorder rec;
    app a(e());
    ASSERT_TRUE(a.record(spec_for(t, "s"), rec));
    ASSERT_TRUE(a.start());
    e().fail_next_acks(1);
    ASSERT_TRUE(a.publish(t, "x"));
    ASSERT_TRUE(e().wait_for([&] { return a->stats("s")->accounted() == 1; }));
    EXPECT_EQ(a->stats("s")->settle_failed, 1U);
    EXPECT_EQ(a->stats("s")->acked, 0U);
    EXPECT_EQ(e().backlog(t, "s"), 1U) << "the broker still holds it";
}

TEST_P(Conformance, NoSettlementReachesTheBrokerAfterTheConsumerClosed) {
    if (!e().has(feature::broker_inspection))
        GTEST_SKIP() << "needs broker inspection";
    const auto t = e().topic("late");
    app a(e());
    ASSERT_TRUE(
        a->subscribe<raw_codec>(spec_for(t, "s", subscription_type::exclusive),
                                [](const std::string&, context& ctx) -> asio::awaitable<outcome> {
                                    co_await ctx.runtime_clock().sleep(10'000ms);
                                    co_return outcome::ack();
                                }));
    ASSERT_TRUE(a.start());
    ASSERT_TRUE(a.publish(t, "x"));
    e().settle();
    auto report = e().spawn(a->shutdown(100ms));
    e().settle();
    e().advance(200ms);
    ASSERT_TRUE(e().wait_for([&] { return report->has_value(); }));
    EXPECT_EQ((*report)->subscriptions.at(0).unsettled, 1U);
    e().advance(20'000ms);  // the handler wakes and acks: refused, counted nowhere
    EXPECT_EQ(e().backlog(t, "s"), 1U);
    EXPECT_EQ(a->stats("s")->accounted(), 1U);
}

// --- what only a live server does (feature live_server) ---------------------------------------

TEST_P(Conformance, KeySharedHashRangesSplitKeysBetweenConsumers) {
    if (!e().has(feature::live_server))
        GTEST_SKIP() << "the server's hash ranges";
    const auto t = e().topic("ks-ranges");
    recorder ra, rb;
    app a(e()), b(e());
    ASSERT_TRUE(a.record(spec_for(t, "s", subscription_type::key_shared), ra));
    ASSERT_TRUE(b.record(spec_for(t, "s", subscription_type::key_shared), rb));
    ASSERT_TRUE(a.start());
    ASSERT_TRUE(b.start());
    constexpr int keys = 32;
    for (int round = 0; round < 2; ++round) {
        for (int k = 0; k < keys; ++k) {
            ASSERT_TRUE(a.publish(t, std::to_string(round), "key-" + std::to_string(k)));
        }
    }
    ASSERT_TRUE(e().wait_for([&] { return ra.got.size() + rb.got.size() == 2 * keys; }));
    e().settle();
    EXPECT_EQ(ra.got.size() + rb.got.size(), 2U * keys);
    std::map<std::string, std::vector<std::string>> on_a, on_b;
    for (const auto& g : ra.got)
        on_a[*g.key].push_back(g.payload);
    for (const auto& g : rb.got)
        on_b[*g.key].push_back(g.payload);
    for (const auto& [k, v] : on_a) {
        EXPECT_EQ(on_b.count(k), 0U) << k << " went to both consumers";
        EXPECT_EQ(v, (std::vector<std::string>{"0", "1"})) << k << " out of order";
    }
    for (const auto& [k, v] : on_b)
        EXPECT_EQ(v, (std::vector<std::string>{"0", "1"})) << k;
    EXPECT_FALSE(on_a.empty()) << "the server gave every hash range to one consumer";
    EXPECT_FALSE(on_b.empty()) << "the server gave every hash range to one consumer";
}

TEST_P(Conformance, SharedServerPicksTheConsumerAndRedeliversToTheOtherOnClose) {
    if (!e().has(feature::live_server))
        GTEST_SKIP() << "the server's pick of a Shared consumer";
    const auto t = e().topic("shared-pick");
    int held = 0;
    recorder rb;
    auto holder = std::make_unique<app>(e());
    auto hs = spec_for(t, "s");
    hs.dispatch = lanes::workers(16);  // every message it gets is in a handler at once
    ASSERT_TRUE((*holder)->subscribe<raw_codec>(
        hs, [&held](const std::string&, context& ctx) -> asio::awaitable<outcome> {
            ++held;
            co_await ctx.runtime_clock().sleep(600'000ms);  // never settles: ends unsettled
            co_return outcome::ack();
        }));
    app b(e());
    ASSERT_TRUE(b.record(spec_for(t, "s"), rb));
    ASSERT_TRUE(holder->start());
    ASSERT_TRUE(b.start());
    for (int i = 0; i < 10; ++i)
        ASSERT_TRUE(b.publish(t, "m" + std::to_string(i)));
    ASSERT_TRUE(e().wait_for([&] { return static_cast<std::size_t>(held) + rb.got.size() == 10; }))
        << "held " << held << " b " << rb.got.size();
    EXPECT_GT(held, 0) << "the server gave the holder nothing";
    EXPECT_GT(rb.got.size(), 0U) << "the server gave b nothing";
    const auto report = holder->stop(100ms);
    EXPECT_TRUE(report.balanced());
    EXPECT_EQ(report.subscriptions.at(0).unsettled, static_cast<std::uint64_t>(held));
    holder.reset();
    ASSERT_TRUE(e().wait_for([&] { return b->stats("s")->acked == 10; }))
        << "acked by b: " << b->stats("s")->acked;
    const auto payloads = rb.payloads();
    EXPECT_EQ(std::set<std::string>(payloads.begin(), payloads.end()).size(), 10U);
}

TEST_P(Conformance, AckTimeoutRedeliversAMessageLeftUnsettled) {
    if (!e().has(feature::live_server))
        GTEST_SKIP() << "the client's ack timeout";
    const auto t = e().topic("ack-timeout");
    recorder rec;
    app a(e());
    auto s = spec_for(t, "s", subscription_type::shared);
    s.dispatch = lanes::workers(2);
    s.ack_timeout = 1000ms;
    clock_type* clk = &e().clock();
    ASSERT_TRUE(a->subscribe<raw_codec>(
        s, [&rec, clk](const std::string&, context& ctx) -> asio::awaitable<outcome> {
            rec.add(ctx.msg(), clk->now());
            if (ctx.msg().redelivery_count == 0)
                co_await ctx.runtime_clock().sleep(4000ms);
            co_return outcome::ack();
        }));
    ASSERT_TRUE(a.start());
    ASSERT_TRUE(a.publish(t, "m"));
    ASSERT_TRUE(e().wait_for([&] { return rec.got.size() >= 2; }));
    EXPECT_EQ(rec.got[0].redelivery, 0U);
    EXPECT_GE(rec.got[1].redelivery, 1U);
    EXPECT_EQ(rec.got[1].payload, "m");
    EXPECT_GE((rec.got[1].at - rec.got[0].at).count(), 900) << "redelivered before the timeout";
    ASSERT_TRUE(e().wait_for([&] { return a->stats("s")->acked >= 1; }));
    EXPECT_EQ(a->stats("s")->nacked, 0U) << "nothing was nacked: the timeout redelivered it";
}

TEST_P(Conformance, PartitionedTopicDeliversEveryPartitionInKeyOrder) {
    if (!e().has(feature::live_server))
        GTEST_SKIP() << "partitioned topics";
    const auto t = e().topic("partitioned");
    ASSERT_TRUE(e().create_partitioned_topic(t, 3));
    std::map<std::string, std::vector<std::string>> by_key;
    std::map<std::string, std::set<std::string>> partitions_of_key;
    app a(e());
    auto s = spec_for(t, "s", subscription_type::failover);
    ASSERT_TRUE(a->subscribe<raw_codec>(s, [&](const std::string& p, context& ctx) {
        by_key[*ctx.msg().key].push_back(p);
        partitions_of_key[*ctx.msg().key].insert(ctx.msg().topic);
        return outcome::ack();
    }));
    ASSERT_TRUE(a.start());
    for (int i = 0; i < 4; ++i) {
        for (int k = 0; k < 8; ++k) {
            ASSERT_TRUE(a.publish(t, std::to_string(i), "k" + std::to_string(k)));
        }
    }
    ASSERT_TRUE(e().wait_for([&] { return a->stats("s")->acked == 32; }));
    std::set<std::string> used;
    for (const auto& [k, parts] : partitions_of_key) {
        EXPECT_EQ(parts.size(), 1U) << k << " on more than one partition";
        for (const auto& p : parts) {
            EXPECT_TRUE(p.starts_with(t + "-partition-")) << p;
            used.insert(p);
        }
        EXPECT_EQ(by_key[k], (std::vector<std::string>{"0", "1", "2", "3"})) << k;
    }
    EXPECT_EQ(by_key.size(), 8U);
    EXPECT_GE(used.size(), 2U) << "8 keys all hashed to one partition";
}

TEST_P(Conformance, MessagesPublishedWhileASubscriptionHasNoConsumerAreKept) {
    if (!e().has(feature::live_server))
        GTEST_SKIP() << "the server's durable subscription";
    const auto t = e().topic("no-consumer");
    auto s = spec_for(t, "s", subscription_type::exclusive);
    s.initial = initial_position::latest;
    recorder first;
    {
        app a(e());
        ASSERT_TRUE(a.record(s, first));
        ASSERT_TRUE(a.start());
        ASSERT_TRUE(a.publish(t, "seen"));
        ASSERT_TRUE(e().wait_for([&] { return a->stats("s")->acked == 1; }));
        EXPECT_TRUE(a.stop().balanced());
    }
    {
        app producer(e());
        ASSERT_TRUE(producer.start());
        for (int i = 0; i < 3; ++i)
            ASSERT_TRUE(producer.publish(t, "away" + std::to_string(i)));
    }
    recorder later;
    app b(e());
    ASSERT_TRUE(b.record(s, later));  // initial position latest: the subscription's own wins
    ASSERT_TRUE(b.start());
    ASSERT_TRUE(e().wait_for([&] { return later.got.size() == 3; }));
    e().settle();
    EXPECT_EQ(later.payloads(), (std::vector<std::string>{"away0", "away1", "away2"}));
}

std::string param_name(const ::testing::TestParamInfo<std::string>& i) {
    return i.param;
}

#if NEREUS_CONFORMANCE_LIVE
const std::vector<std::string> transports{"inproc", "live"};
#else
const std::vector<std::string> transports{"inproc"};
#endif
INSTANTIATE_TEST_SUITE_P(Transport, Conformance, ::testing::ValuesIn(transports), param_name);

}  // namespace
}  // namespace nereus::runtime::conformance
