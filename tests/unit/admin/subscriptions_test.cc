// Subscriptions: list/create/delete, reset cursor by time and by message id, skip, clear
// backlog (each changing what a consumer receives next), properties, internalStats.

#include "support/admin_fixture.h"
#include "support/wire_helpers.h"
#include <boost/json.hpp>

namespace nereus::admin::test {
namespace {

namespace json = boost::json;

constexpr std::string_view topic = "persistent://public/default/subs";
const std::string base = "/admin/v2/persistent/public/default/subs";

class SubscriptionTest : public AdminTest {
protected:
    void SetUp() override {
        AdminTest::SetUp();
        ASSERT_EQ(status("PUT", base), 204U);
        producer_ = wire();
        ASSERT_TRUE(create_producer(*producer_, topic, 0));
    }

    std::uint64_t ledger_id() {
        auto s = http_->get(base + "/internalStats");
        return static_cast<std::uint64_t>(s->json().at("ledgers").at(0).at("ledgerId").as_int64());
    }

    // A consumer of `sub` with `permits`, on a fresh connection.
    std::unique_ptr<wire_client> consumer(std::string_view sub, std::uint32_t permits = 100) {
        auto c = wire();
        EXPECT_TRUE(subscribe(*c, topic, sub, 0, permits));
        return c;
    }

    std::int64_t backlog(std::string_view sub) {
        auto s = http_->get(base + "/stats");
        return s->json().at("subscriptions").at(sub).at("msgBacklog").as_int64();
    }

    std::unique_ptr<wire_client> producer_;
};

TEST_F(SubscriptionTest, CreateListDelete) {
    EXPECT_EQ(http_->get(base + "/subscriptions")->json(), json::array());
    EXPECT_EQ(status("PUT", base + "/subscription/a"), 204U);
    EXPECT_EQ(status("PUT", base + "/subscription/a"), 409U);
    EXPECT_EQ(status("PUT", base + "/subscription/b", R"({"ledgerId":-1,"entryId":-1})"), 204U);
    EXPECT_EQ(http_->get(base + "/subscriptions")->json(), json::parse(R"(["a","b"])"));
    EXPECT_EQ(status("DELETE", base + "/subscription/a"), 204U);
    EXPECT_EQ(status("DELETE", base + "/subscription/a"), 404U);
    EXPECT_EQ(http_->get(base + "/subscriptions")->json(), json::parse(R"(["b"])"));
    // Bad input and unknown names: 4xx, nothing created.
    EXPECT_EQ(status("PUT", base + "/subscription/c", "{oops"), 400U);
    EXPECT_EQ(status("PUT", base + "/subscription/c", R"({"ledgerId":"x","entryId":1})"), 400U);
    EXPECT_EQ(status("PUT", base + "/subscription/c", R"({"ledgerId":999999,"entryId":0})"), 412U);
    EXPECT_EQ(status("PUT", "/admin/v2/persistent/public/default/nope/subscription/c"), 404U);
    EXPECT_EQ(status("POST", base + "/subscription/nope/skip_all"), 404U);
    EXPECT_EQ(status("POST", base + "/subscription/nope/resetcursor/0"), 404U);
    EXPECT_EQ(status("GET", base + "/subscription/nope/properties"), 404U);
    EXPECT_EQ(http_->get(base + "/subscriptions")->json(), json::parse(R"(["b"])"));
}

TEST_F(SubscriptionTest, CreatedAtDefaultLatestOrAtMessageId) {
    ASSERT_EQ(produce(*producer_, 0, 4), 4);
    const auto l = ledger_id();
    ASSERT_EQ(status("PUT", base + "/subscription/latest"), 204U);
    ASSERT_EQ(status("PUT", base + "/subscription/at2",
                     R"({"ledgerId":)" + std::to_string(l) + R"(,"entryId":2})"),
              204U);
    EXPECT_EQ(backlog("latest"), 0);
    EXPECT_EQ(backlog("at2"), 2);
    auto c = consumer("at2");
    EXPECT_EQ(payloads(receive(*c, 2)), (std::vector<std::string>{"m2", "m3"}));
}

TEST_F(SubscriptionTest, DeleteWithConsumerNeedsForce) {
    auto c = consumer("busy");
    auto r = http_->del(base + "/subscription/busy");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 412U);
    EXPECT_EQ(r->reason(), "Subscription has active connected consumers");
    EXPECT_EQ(status("DELETE", base + "/subscription/busy?force=true"), 204U);
    EXPECT_TRUE(c->expect(command_type::close_consumer));
    EXPECT_EQ(http_->get(base + "/subscriptions")->json(), json::array());
}

TEST_F(SubscriptionTest, ResetCursorByMessageIdRedeliversFromThere) {
    ASSERT_EQ(produce(*producer_, 0, 5), 5);
    auto c = consumer("s");
    auto got = receive(*c, 5);
    ASSERT_EQ(got.size(), 5U);
    ASSERT_TRUE(ack(*c, 0, got[4].ledger_id, 4, /*cumulative=*/true));
    EXPECT_EQ(backlog("s"), 0);
    const auto l = got[0].ledger_id;

    EXPECT_EQ(status("POST", base + "/subscription/s/resetcursor",
                     R"({"ledgerId":)" + std::to_string(l) + R"(,"entryId":2})"),
              204U);
    // The consumer is disconnected first, as a client SEEK does.
    EXPECT_TRUE(c->expect(command_type::close_consumer));
    EXPECT_EQ(backlog("s"), 3);
    auto c2 = consumer("s");
    EXPECT_EQ(payloads(receive(*c2, 3)), (std::vector<std::string>{"m2", "m3", "m4"}));

    // isExcluded: start after the named entry.
    EXPECT_EQ(status("POST", base + "/subscription/s/resetcursor",
                     R"({"ledgerId":)" + std::to_string(l) + R"(,"entryId":3,"isExcluded":true})"),
              204U);
    EXPECT_TRUE(c2->expect(command_type::close_consumer));
    auto c3 = consumer("s");
    EXPECT_EQ(payloads(receive(*c3, 1)), (std::vector<std::string>{"m4"}));

    // Bad bodies: 4xx and the cursor stays.
    EXPECT_EQ(status("POST", base + "/subscription/s/resetcursor", "nope"), 400U);
    EXPECT_EQ(status("POST", base + "/subscription/s/resetcursor", R"({"entryId":1})"), 400U);
    EXPECT_EQ(
        status("POST", base + "/subscription/s/resetcursor", R"({"ledgerId":123456,"entryId":1})"),
        412U);
    EXPECT_EQ(backlog("s"), 1);
}

TEST_F(SubscriptionTest, ResetCursorByTimeRedeliversEverythingPublishedSince) {
    ASSERT_EQ(produce(*producer_, 0, 3), 3);
    auto c = consumer("s");
    auto got = receive(*c, 3);
    ASSERT_EQ(got.size(), 3U);
    ASSERT_TRUE(ack(*c, 0, got[0].ledger_id, 2, true));
    EXPECT_EQ(backlog("s"), 0);
    EXPECT_EQ(status("POST", base + "/subscription/s/resetcursor/0"), 204U);
    EXPECT_TRUE(c->expect(command_type::close_consumer));
    auto c2 = consumer("s");
    EXPECT_EQ(payloads(receive(*c2, 3)), (std::vector<std::string>{"m0", "m1", "m2"}));
    // A time after every message: nothing to deliver.
    EXPECT_EQ(status("POST", base + "/subscription/s/resetcursor/99999999999999"), 204U);
    EXPECT_EQ(backlog("s"), 0);
    EXPECT_EQ(status("POST", base + "/subscription/s/resetcursor/yesterday"), 412U);
}

TEST_F(SubscriptionTest, SkipAndClearBacklog) {
    ASSERT_EQ(status("PUT", base + "/subscription/s", R"({"ledgerId":-1,"entryId":-1})"), 204U);
    ASSERT_EQ(produce(*producer_, 0, 6), 6);
    EXPECT_EQ(backlog("s"), 6);
    EXPECT_EQ(status("POST", base + "/subscription/s/skip/2"), 204U);
    EXPECT_EQ(backlog("s"), 4);
    EXPECT_EQ(status("POST", base + "/subscription/s/skip/x"), 412U);
    EXPECT_EQ(status("POST", base + "/subscription/s/skip/-1"), 412U);
    auto c = consumer("s");
    EXPECT_EQ(payloads(receive(*c, 4)), (std::vector<std::string>{"m2", "m3", "m4", "m5"}));

    EXPECT_EQ(status("POST", base + "/subscription/s/skip_all"), 204U);
    EXPECT_TRUE(c->expect(command_type::close_consumer));
    EXPECT_EQ(backlog("s"), 0);
    // After the clear only new messages arrive.
    auto c2 = consumer("s");
    ASSERT_EQ(produce(*producer_, 0, 1, 6), 1);
    EXPECT_EQ(payloads(receive(*c2, 1)), (std::vector<std::string>{"m6"}));
}

TEST_F(SubscriptionTest, Properties) {
    ASSERT_EQ(status("PUT", base + "/subscription/s"), 204U);
    EXPECT_EQ(http_->get(base + "/subscription/s/properties")->json(), json::object());
    EXPECT_EQ(status("PUT", base + "/subscription/s/properties", R"({"a":"1","b":"two"})"), 204U);
    EXPECT_EQ(http_->get(base + "/subscription/s/properties")->json(),
              json::parse(R"({"a":"1","b":"two"})"));
    // Bad input changes nothing.
    EXPECT_EQ(status("PUT", base + "/subscription/s/properties", "[1]"), 400U);
    EXPECT_EQ(status("PUT", base + "/subscription/s/properties", R"({"a":1})"), 400U);
    EXPECT_EQ(status("PUT", base + "/subscription/s/properties", R"({"#nereus.internal.x":"1"})"),
              412U);
    EXPECT_EQ(status("PUT", base + "/subscription/nope/properties", R"({"a":"1"})"), 404U);
    EXPECT_EQ(http_->get(base + "/subscription/s/properties")->json(),
              json::parse(R"({"a":"1","b":"two"})"));
    EXPECT_EQ(http_->get(base + "/internalStats")->json().at("cursors").at("s").at("properties"),
              json::parse(R"({"a":"1","b":"two"})"));
}

// Nereus extension used by events/: ?ifVersion=N makes the replace a compare-and-set on the
// property "version" (absent = "0"); a mismatch is 409 and changes nothing.
TEST_F(SubscriptionTest, PropertiesCompareAndSetOnVersion) {
    ASSERT_EQ(status("PUT", base + "/subscription/s"), 204U);
    const auto props = base + "/subscription/s/properties";
    EXPECT_EQ(status("PUT", props + "?ifVersion=1", R"({"version":"2"})"), 409U);
    EXPECT_EQ(status("PUT", props + "?ifVersion=0", R"({"version":"1","x":"a"})"), 204U);
    EXPECT_EQ(status("PUT", props + "?ifVersion=0", R"({"version":"1","x":"b"})"), 409U);
    EXPECT_EQ(http_->get(props)->json(), json::parse(R"({"version":"1","x":"a"})"));
    EXPECT_EQ(status("PUT", props + "?ifVersion=1", R"({"version":"2","x":"c"})"), 204U);
    EXPECT_EQ(http_->get(props)->json(), json::parse(R"({"version":"2","x":"c"})"));
}

TEST_F(SubscriptionTest, InternalStatsShowsCursorPositionsRangesAndFences) {
    ASSERT_EQ(produce(*producer_, 0, 6), 6);
    auto c = consumer("s");
    auto got = receive(*c, 6);
    ASSERT_EQ(got.size(), 6U);
    const auto l = got[0].ledger_id;
    const auto L = std::to_string(l);
    ASSERT_TRUE(ack(*c, 0, l, 0));
    ASSERT_TRUE(ack(*c, 0, l, 2));
    ASSERT_TRUE(ack(*c, 0, l, 3));
    ASSERT_TRUE(ack(*c, 0, l, 5));
    auto s = http_->get(base + "/internalStats");
    ASSERT_TRUE(s);
    ASSERT_EQ(s->status, 200U);
    const auto v = s->json();
    EXPECT_EQ(v.at("lastConfirmedEntry"), json::value(L + ":5"));
    EXPECT_EQ(v.at("numberOfEntries"), 6);
    const auto& cur = v.at("cursors").at("s");
    EXPECT_EQ(cur.at("markDeletePosition"), json::value(L + ":0"));
    EXPECT_EQ(cur.at("readPosition"), json::value(L + ":6"));
    EXPECT_EQ(cur.at("individuallyDeletedMessages"),
              json::value("[(" + L + ":1.." + L + ":3], (" + L + ":4.." + L + ":5]]"));
    EXPECT_EQ(cur.at("totalNonContiguousDeletedMessagesRange"), 2);
    EXPECT_EQ(cur.at("backlog"), 2);
    const auto gen = cur.at("cursorGeneration").as_int64();
    const auto epoch = cur.at("ackStateEpoch").as_int64();
    EXPECT_GE(gen, 1);
    EXPECT_TRUE(cur.at("snapshot").at("rootVersion").as_int64() > 0);
    // A reset publishes a new ackStateEpoch (same generation).
    ASSERT_EQ(status("POST", base + "/subscription/s/resetcursor/0"), 204U);
    const auto after = http_->get(base + "/internalStats")->json().at("cursors").at("s");
    EXPECT_EQ(after.at("cursorGeneration").as_int64(), gen);
    EXPECT_GT(after.at("ackStateEpoch").as_int64(), epoch);
    EXPECT_EQ(after.at("markDeletePosition"), json::value(L + ":-1"));
    EXPECT_EQ(after.at("individuallyDeletedMessages"), "[]");
}

TEST_F(SubscriptionTest, PartitionedTopicSubscriptionsApplyToEveryPartition) {
    const std::string pt = "/admin/v2/persistent/public/default/pt";
    ASSERT_EQ(status("PUT", pt + "/partitions", "2"), 204U);
    EXPECT_EQ(status("PUT", pt + "/subscription/s"), 204U);
    EXPECT_EQ(http_->get(pt + "/subscriptions")->json(), json::parse(R"(["s"])"));
    EXPECT_EQ(http_->get(pt + "-partition-1/subscriptions")->json(), json::parse(R"(["s"])"));
    EXPECT_EQ(status("POST", pt + "/subscription/s/skip_all"), 204U);
    EXPECT_EQ(status("POST", pt + "/subscription/s/resetcursor", R"({"ledgerId":1,"entryId":0})"),
              412U);
    EXPECT_EQ(status("DELETE", pt + "/subscription/s"), 204U);
    EXPECT_EQ(http_->get(pt + "/subscriptions")->json(), json::array());
}

}  // namespace
}  // namespace nereus::admin::test
