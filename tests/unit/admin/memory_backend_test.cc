// The same admin API over the in-memory backend (what broker unit tests use): admin records,
// topic delete, skip and clear implemented there too.

#include "support/admin_fixture.h"
#include "support/wire_helpers.h"
#include <boost/json.hpp>

namespace nereus::admin::test {
namespace {

namespace json = boost::json;

class MemoryAdminTest : public AdminTest {
protected:
    void SetUp() override { start(/*ledger=*/false); }
};

// The in-memory backend has no stream log: /metrics has no nereus_log_* series.
TEST_F(MemoryAdminTest, MetricsHaveNoStreamLogSeries) {
    auto r = http_->get("/metrics");
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 200U);
    EXPECT_NE(r->body.find("pulsar_topics_count"), std::string::npos);
    EXPECT_EQ(r->body.find("nereus_log_"), std::string::npos) << r->body;
}

TEST_F(MemoryAdminTest, PartitionedTopicsTenantsAndDelete) {
    const std::string ns = "/admin/v2/persistent/public/default";
    ASSERT_EQ(status("PUT", ns + "/m/partitions", "2"), 204U);
    EXPECT_EQ(http_->get(ns + "/m/partitions")->json().at("partitions"), 2);
    auto c = wire();
    EXPECT_EQ(partitioned_metadata(*c, "m"), 2U);
    EXPECT_EQ(status("PUT", "/admin/v2/tenants/acme"), 204U);
    EXPECT_EQ(status("PUT", "/admin/v2/tenants/acme"), 409U);
    EXPECT_EQ(status("DELETE", ns + "/m/partitions"), 204U);
    EXPECT_EQ(http_->get(ns)->json(), json::array());
    EXPECT_EQ(partitioned_metadata(*c, "m"), 0U);
}

TEST_F(MemoryAdminTest, SkipKeepsIndividualAcksAboveAndClearEmptiesTheBacklog) {
    const std::string t = "/admin/v2/persistent/public/default/mt";
    auto p = wire();
    ASSERT_TRUE(create_producer(*p, "persistent://public/default/mt", 0));
    auto c = wire();
    ASSERT_TRUE(subscribe(*c, "persistent://public/default/mt", "s", 0, 100));
    ASSERT_EQ(produce(*p, 0, 5), 5);
    auto got = receive(*c, 5);
    ASSERT_EQ(got.size(), 5U);
    ASSERT_TRUE(ack(*c, 0, got[0].ledger_id, 3));
    ASSERT_EQ(status("POST", t + "/subscription/s/skip/1"), 204U);
    EXPECT_TRUE(c->expect(command_type::close_consumer));
    EXPECT_EQ(http_->get(t + "/stats")->json().at("subscriptions").at("s").at("msgBacklog"), 3);
    auto c2 = wire();
    ASSERT_TRUE(subscribe(*c2, "persistent://public/default/mt", "s", 0, 100));
    EXPECT_EQ(payloads(receive(*c2, 3)), (std::vector<std::string>{"m1", "m2", "m4"}));
    ASSERT_EQ(status("POST", t + "/subscription/s/skip_all"), 204U);
    EXPECT_EQ(http_->get(t + "/stats")->json().at("subscriptions").at("s").at("msgBacklog"), 0);
}

}  // namespace
}  // namespace nereus::admin::test
