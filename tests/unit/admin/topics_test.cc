// Topics (list, create, delete), partitioned topics (create, metadata, list, delete; on the
// binary protocol too) and the HTTP lookup.

#include "support/admin_fixture.h"
#include "support/wire_helpers.h"
#include <algorithm>
#include <boost/json.hpp>
#include <thread>

namespace nereus::admin::test {
namespace {

namespace json = boost::json;

constexpr std::string_view ns_path = "/admin/v2/persistent/public/default";

std::string topic_path(std::string_view t) {
    return std::string(ns_path) + "/" + std::string(t);
}

TEST_F(AdminTest, TopicCreateListDelete) {
    EXPECT_EQ(http_->get(ns_path)->json(), json::array());
    EXPECT_EQ(status("PUT", topic_path("t1")), 204U);
    EXPECT_EQ(status("PUT", topic_path("t1")), 409U);
    EXPECT_EQ(status("PUT", topic_path("t2")), 204U);
    EXPECT_EQ(
        http_->get(ns_path)->json(),
        json::parse(R"(["persistent://public/default/t1","persistent://public/default/t2"])"));
    EXPECT_EQ(status("DELETE", topic_path("t1")), 204U);
    EXPECT_EQ(http_->get(ns_path)->json(), json::parse(R"(["persistent://public/default/t2"])"));
    EXPECT_EQ(status("DELETE", topic_path("t1")), 404U);
    // Recreated after a delete: a fresh, empty topic.
    EXPECT_EQ(status("PUT", topic_path("t1")), 204U);
    EXPECT_EQ(http_->get(topic_path("t1") + "/subscriptions")->json(), json::array());
}

TEST_F(AdminTest, RacingCreatorsGetOne204AndThe409s) {
    constexpr int n = 4;
    std::vector<unsigned> codes(n, 0);
    std::vector<std::thread> threads;
    for (int i = 0; i < n; ++i) {
        threads.emplace_back([this, i, &codes] {
            auto c = http_client::open(admin_->port());
            if (auto r = c ? c->put(topic_path("race") + "/partitions", "2") : std::nullopt) {
                codes[static_cast<std::size_t>(i)] = r->status;
            }
        });
    }
    for (auto& t : threads) {
        t.join();
    }
    EXPECT_EQ(std::count(codes.begin(), codes.end(), 204U), 1);
    EXPECT_EQ(std::count(codes.begin(), codes.end(), 409U), n - 1);
    EXPECT_EQ(http_->get(topic_path("race") + "/partitions")->json().at("partitions"), 2);
}

TEST_F(AdminTest, TopicUnknownNamesAre404AndBadNames412) {
    EXPECT_EQ(status("PUT", "/admin/v2/persistent/public/nope/t"), 404U);
    EXPECT_EQ(status("PUT", "/admin/v2/persistent/nope/default/t"), 404U);
    EXPECT_EQ(status("GET", "/admin/v2/persistent/nope/default"), 404U);
    EXPECT_EQ(status("DELETE", topic_path("missing")), 404U);
    EXPECT_EQ(status("GET", topic_path("missing") + "/stats"), 404U);
    EXPECT_EQ(status("GET", topic_path("missing") + "/subscriptions"), 404U);
    EXPECT_EQ(status("PUT", "/admin/v2/persistent/public/default/a%2Fb"), 412U);
    EXPECT_EQ(http_->get(ns_path)->json(), json::array());
}

TEST_F(AdminTest, DeleteWithActiveClientsNeedsForce) {
    ASSERT_EQ(status("PUT", topic_path("busy")), 204U);
    auto c = wire();
    ASSERT_TRUE(c);
    ASSERT_TRUE(subscribe(*c, "persistent://public/default/busy", "s", 0, 10));
    auto r = http_->del(topic_path("busy"));
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 412U);
    EXPECT_EQ(r->reason(), "Topic has active producers/subscriptions");
    EXPECT_EQ(http_->get(ns_path)->json().as_array().size(), 1U);
    EXPECT_EQ(status("DELETE", topic_path("busy") + "?force=true"), 204U);
    // The consumer was told to go.
    EXPECT_TRUE(c->expect(command_type::close_consumer));
    EXPECT_EQ(http_->get(ns_path)->json(), json::array());
}

TEST_F(AdminTest, ForcedDeleteClosesProducersAndConsumers) {
    const std::string topic = "persistent://public/default/gone";
    auto p = wire();
    ASSERT_TRUE(create_producer(*p, topic, 0));
    ASSERT_EQ(produce(*p, 0, 2), 2);
    auto c = wire();
    ASSERT_TRUE(subscribe(*c, topic, "s", 7, 10));
    EXPECT_EQ(status("DELETE", topic_path("gone")), 412U);
    EXPECT_EQ(status("DELETE", topic_path("gone") + "?force=true"), 204U);
    // Both are told to go at once (the "lost ownership" close path), without sending anything.
    auto cp = p->expect(command_type::close_producer);
    ASSERT_TRUE(cp) << "the producer was not closed";
    EXPECT_EQ(cp->cmd.close_producer().producer_id(), 0U);
    auto cc = c->expect(command_type::close_consumer);
    ASSERT_TRUE(cc) << "the consumer was not closed";
    EXPECT_EQ(cc->cmd.close_consumer().consumer_id(), 7U);
    EXPECT_EQ(http_->get(ns_path)->json(), json::array());
    // The client reconnects its producer, as after CLOSE_PRODUCER: the id is free again and the
    // topic comes back fresh (entry ids from 0).
    ASSERT_TRUE(create_producer(*p, topic, 0));
    p->send_message(0, 2, "again");
    auto r = p->expect(command_type::send_receipt);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->cmd.send_receipt().message_id().entryid(), 0U);
}

TEST_F(AdminTest, PartitionedTopicCreateMetadataListDelete) {
    const auto pt = topic_path("orders");
    EXPECT_EQ(status("PUT", pt + "/partitions", "3"), 204U);
    auto m = http_->get(pt + "/partitions");
    ASSERT_TRUE(m);
    EXPECT_EQ(m->status, 200U);
    EXPECT_EQ(m->json().at("partitions"), 3);
    EXPECT_EQ(http_->get(std::string(ns_path) + "/partitioned")->json(),
              json::parse(R"(["persistent://public/default/orders"])"));
    // The partitions are listed as topics, as Pulsar lists them.
    EXPECT_EQ(http_->get(ns_path)->json(), json::parse(R"([
        "persistent://public/default/orders-partition-0",
        "persistent://public/default/orders-partition-1",
        "persistent://public/default/orders-partition-2"])"));
    // Conflicts: the same partitioned topic again, a non-partitioned one of that name.
    EXPECT_EQ(status("PUT", pt + "/partitions", "3"), 409U);
    EXPECT_EQ(status("PUT", pt), 409U);
    // A non-partitioned topic reports 0 and cannot become partitioned.
    ASSERT_EQ(status("PUT", topic_path("plain")), 204U);
    EXPECT_EQ(http_->get(topic_path("plain") + "/partitions")->json().at("partitions"), 0);
    EXPECT_EQ(status("PUT", topic_path("plain") + "/partitions", "2"), 409U);
    // Delete: the partitions and the metadata go.
    EXPECT_EQ(status("DELETE", pt), 409U);
    EXPECT_EQ(status("DELETE", pt + "/partitions"), 204U);
    EXPECT_EQ(http_->get(pt + "/partitions")->json().at("partitions"), 0);
    EXPECT_EQ(http_->get(ns_path)->json(), json::parse(R"(["persistent://public/default/plain"])"));
    EXPECT_EQ(status("DELETE", pt + "/partitions"), 404U);
}

TEST_F(AdminTest, PartitionCountBadInputChangesNothing) {
    const auto pt = topic_path("bad");
    EXPECT_EQ(status("PUT", pt + "/partitions", "three"), 400U);
    EXPECT_EQ(status("PUT", pt + "/partitions", R"({"n":3})"), 400U);
    EXPECT_EQ(status("PUT", pt + "/partitions", "2.5"), 400U);
    EXPECT_EQ(status("PUT", pt + "/partitions", "0"), 406U);
    EXPECT_EQ(status("PUT", pt + "/partitions", "-4"), 406U);
    EXPECT_EQ(status("PUT", pt + "/partitions", "10001"), 406U);
    EXPECT_EQ(status("PUT", pt + "/partitions", ""), 400U);
    EXPECT_EQ(status("PUT", topic_path("bad-partition-1") + "/partitions", "2"), 412U);
    EXPECT_EQ(http_->get(std::string(ns_path) + "/partitioned")->json(), json::array());
    EXPECT_EQ(http_->get(ns_path)->json(), json::array());
    EXPECT_EQ(status("PUT", "/admin/v2/persistent/public/nope/x/partitions", "2"), 404U);
}

// POST .../partitions raises the count (Pulsar's updatePartitionedTopic): the new partitions
// exist and PARTITIONED_METADATA answers the new count; shrinking, the same count, a topic that
// is not partitioned and out-of-range counts are refused and change nothing.
TEST_F(AdminTest, PartitionCountGrowsAndNeverShrinks) {
    const auto pt = topic_path("grow");
    ASSERT_EQ(status("PUT", pt + "/partitions", "2"), 204U);
    EXPECT_EQ(status("POST", pt + "/partitions", "2"), 409U);
    EXPECT_EQ(status("POST", pt + "/partitions", "1"), 409U);
    EXPECT_EQ(status("POST", pt + "/partitions", "0"), 406U);
    EXPECT_EQ(status("POST", pt + "/partitions", "10001"), 406U);
    EXPECT_EQ(status("POST", pt + "/partitions", "four"), 400U);
    EXPECT_EQ(http_->get(pt + "/partitions")->json().at("partitions"), 2);

    ASSERT_EQ(status("POST", pt + "/partitions", "4"), 204U);
    EXPECT_EQ(http_->get(pt + "/partitions")->json().at("partitions"), 4);
    EXPECT_EQ(http_->get(ns_path)->json(), json::parse(R"([
        "persistent://public/default/grow-partition-0",
        "persistent://public/default/grow-partition-1",
        "persistent://public/default/grow-partition-2",
        "persistent://public/default/grow-partition-3"])"));
    auto c = wire();
    ASSERT_TRUE(c);
    EXPECT_EQ(partitioned_metadata(*c, "persistent://public/default/grow"), 4U);

    ASSERT_EQ(status("PUT", topic_path("flat")), 204U);
    EXPECT_EQ(status("POST", topic_path("flat") + "/partitions", "3"), 404U);
    EXPECT_EQ(status("POST", topic_path("never") + "/partitions", "3"), 404U);
    EXPECT_EQ(http_->get(topic_path("flat") + "/partitions")->json().at("partitions"), 0);
}

TEST_F(AdminTest, PartitionedMetadataOnTheBinaryProtocolAndPartitionsServeClients) {
    ASSERT_EQ(status("PUT", topic_path("p") + "/partitions", "4"), 204U);
    auto c = wire();
    ASSERT_TRUE(c);
    EXPECT_EQ(partitioned_metadata(*c, "persistent://public/default/p"), 4U);
    EXPECT_EQ(partitioned_metadata(*c, "p"), 4U);
    EXPECT_EQ(partitioned_metadata(*c, "persistent://public/default/p-partition-1"), 0U);
    EXPECT_EQ(partitioned_metadata(*c, "persistent://public/default/other"), 0U);

    // Produce to and consume from one partition.
    const std::string part = "persistent://public/default/p-partition-2";
    auto consumer = wire();
    ASSERT_TRUE(subscribe(*consumer, part, "s", 0, 10));
    ASSERT_TRUE(create_producer(*c, part, 0));
    ASSERT_EQ(produce(*c, 0, 3), 3);
    EXPECT_EQ(payloads(receive(*consumer, 3)), (std::vector<std::string>{"m0", "m1", "m2"}));
    auto stats = http_->get(topic_path("p-partition-2") + "/stats");
    ASSERT_TRUE(stats);
    EXPECT_EQ(stats->json().at("msgInCounter"), 3);
    auto ps = http_->get(topic_path("p") + "/partitioned-stats");
    ASSERT_TRUE(ps);
    EXPECT_EQ(ps->status, 200U);
    EXPECT_EQ(ps->json().at("msgInCounter"), 3);
}

TEST_F(AdminTest, PartitionedMetadataSurvivesARestart) {
    ASSERT_EQ(status("PUT", topic_path("kept") + "/partitions", "2"), 204U);
    ASSERT_EQ(status("PUT", "/admin/v2/tenants/acme"), 204U);
    ASSERT_EQ(status("PUT", "/admin/v2/namespaces/acme/ns"), 204U);
    // Stop everything and open the same directory again.
    const auto dir = dir_;
    dir_.clear();
    TearDown();
    broker::ledger_backend_options lo;
    lo.data_dir = dir;
    auto b = broker::ledger_backend::open(lo);
    ASSERT_TRUE(b.has_value());
    backend_ = std::move(*b);
    dir_ = dir;
    broker::broker_options bo;
    bo.bind_address = "127.0.0.1";
    bo.port = 0;
    broker_ = std::make_unique<broker::server>(bo, *backend_);
    ASSERT_TRUE(broker_->start().has_value());
    admin_options ao;
    ao.http.bind_address = "127.0.0.1";
    ao.http.port = 0;
    admin_ = std::make_unique<admin_server>(*broker_, *backend_, ao);
    ASSERT_TRUE(admin_->start().has_value());
    http_ = http_client::open(admin_->port());
    ASSERT_TRUE(http_);
    EXPECT_EQ(http_->get(topic_path("kept") + "/partitions")->json().at("partitions"), 2);
    EXPECT_EQ(status("GET", "/admin/v2/namespaces/acme/ns"), 200U);
    auto c = wire();
    EXPECT_EQ(partitioned_metadata(*c, "persistent://public/default/kept"), 2U);
}

TEST_F(AdminTest, HttpLookup) {
    auto r = http_->get("/lookup/v2/topic/persistent/public/default/anything");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200U);
    const auto v = r->json();
    EXPECT_EQ(v.at("brokerUrl"),
              json::value("pulsar://127.0.0.1:" + std::to_string(broker_->port())));
    EXPECT_EQ(v.at("httpUrl"), json::value("http://127.0.0.1:" + std::to_string(admin_->port())));
    EXPECT_EQ(v.at("nativeUrl"), v.at("brokerUrl"));
    EXPECT_EQ(status("GET", "/lookup/v2/topic/persistent/public/nope/t"), 404U);
}

}  // namespace
}  // namespace nereus::admin::test
