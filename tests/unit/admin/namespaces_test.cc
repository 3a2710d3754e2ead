// Clusters, tenants, namespaces, health, and the generic errors (unknown path, wrong method).

#include "support/admin_fixture.h"
#include <boost/json.hpp>

namespace nereus::admin::test {
namespace {

namespace json = boost::json;

TEST_F(AdminTest, ClustersAndHealth) {
    auto c = http_->get("/admin/v2/clusters");
    ASSERT_TRUE(c);
    EXPECT_EQ(c->status, 200U);
    EXPECT_EQ(c->json(), json::parse(R"(["standalone"])"));
    auto h = http_->get("/admin/v2/brokers/health");
    ASSERT_TRUE(h);
    EXPECT_EQ(h->status, 200U);
    EXPECT_EQ(h->body, "ok");
    EXPECT_EQ(status("GET", "/admin/v2/clusters/elsewhere"), 404U);
}

TEST_F(AdminTest, UnknownPathIs404AndWrongMethodIs405) {
    auto r = http_->get("/admin/v2/nothing-here");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 404U);
    EXPECT_FALSE(r->reason().empty());
    EXPECT_EQ(status("POST", "/admin/v2/clusters"), 405U);
    EXPECT_EQ(status("DELETE", "/admin/v2/tenants"), 405U);
    EXPECT_EQ(status("PATCH", "/admin/v2/persistent/public/default/t"), 405U);
}

TEST_F(AdminTest, OversizedBodyIs413) {
    auto r = http_->raw(
        "PUT /admin/v2/tenants/big HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\n"
        "Content-Length: 2097152\r\n\r\n");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 413U);
    EXPECT_EQ(status("GET", "/admin/v2/tenants/big"), 404U);  // nothing created
}

TEST_F(AdminTest, TenantsListGetCreate) {
    auto l = http_->get("/admin/v2/tenants");
    ASSERT_TRUE(l);
    EXPECT_EQ(l->json(), json::parse(R"(["public"])"));
    EXPECT_EQ(status("GET", "/admin/v2/tenants/public"), 200U);
    EXPECT_EQ(status("GET", "/admin/v2/tenants/acme"), 404U);

    EXPECT_EQ(status("PUT", "/admin/v2/tenants/acme",
                     R"({"adminRoles":["r"],"allowedClusters":["standalone"]})"),
              204U);
    auto g = http_->get("/admin/v2/tenants/acme");
    ASSERT_TRUE(g);
    EXPECT_EQ(g->status, 200U);
    EXPECT_EQ(g->json().at("adminRoles"), json::parse(R"(["r"])"));
    EXPECT_EQ(status("PUT", "/admin/v2/tenants/acme", "{}"), 409U);
    l = http_->get("/admin/v2/tenants");
    EXPECT_EQ(l->json(), json::parse(R"(["acme","public"])"));
}

TEST_F(AdminTest, TenantBadInputChangesNothing) {
    auto r = http_->put("/admin/v2/tenants/t1", "{not json");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 400U);
    EXPECT_FALSE(r->reason().empty());
    EXPECT_EQ(status("PUT", "/admin/v2/tenants/t1", R"({"allowedClusters":"standalone"})"), 400U);
    EXPECT_EQ(status("PUT", "/admin/v2/tenants/t1", R"({"allowedClusters":["mars"]})"), 412U);
    EXPECT_EQ(status("PUT", "/admin/v2/tenants/bad%20name", "{}"), 412U);
    EXPECT_EQ(status("GET", "/admin/v2/tenants/t1"), 404U);
    EXPECT_EQ(http_->get("/admin/v2/tenants")->json(), json::parse(R"(["public"])"));
}

TEST_F(AdminTest, NamespacesListCreate) {
    auto l = http_->get("/admin/v2/namespaces/public");
    ASSERT_TRUE(l);
    EXPECT_EQ(l->json(), json::parse(R"(["public/default"])"));
    EXPECT_EQ(status("PUT", "/admin/v2/namespaces/public/ns1"), 204U);
    EXPECT_EQ(status("PUT", "/admin/v2/namespaces/public/ns1"), 409U);
    EXPECT_EQ(status("PUT", "/admin/v2/namespaces/public/default"), 409U);
    EXPECT_EQ(http_->get("/admin/v2/namespaces/public")->json(),
              json::parse(R"(["public/default","public/ns1"])"));
    EXPECT_EQ(status("GET", "/admin/v2/namespaces/public/ns1"), 200U);
    EXPECT_EQ(status("GET", "/admin/v2/namespaces/public/ns2"), 404U);
    // Unknown tenant, bad policies JSON, bad name: 4xx and nothing created.
    EXPECT_EQ(status("PUT", "/admin/v2/namespaces/nope/ns1"), 404U);
    EXPECT_EQ(status("GET", "/admin/v2/namespaces/nope"), 404U);
    EXPECT_EQ(status("PUT", "/admin/v2/namespaces/public/ns3", "[1,"), 400U);
    EXPECT_EQ(status("PUT", "/admin/v2/namespaces/public/n%2As"), 412U);
    EXPECT_EQ(http_->get("/admin/v2/namespaces/public")->json(),
              json::parse(R"(["public/default","public/ns1"])"));
    // A new tenant's namespaces.
    ASSERT_EQ(status("PUT", "/admin/v2/tenants/acme"), 204U);
    EXPECT_EQ(http_->get("/admin/v2/namespaces/acme")->json(), json::array());
    EXPECT_EQ(status("PUT", "/admin/v2/namespaces/acme/prod"), 204U);
    EXPECT_EQ(http_->get("/admin/v2/namespaces/acme")->json(), json::parse(R"(["acme/prod"])"));
}

}  // namespace
}  // namespace nereus::admin::test

namespace nereus::admin::test {
namespace {

TEST_F(AdminTest, DeleteNamespaceAndTenant) {
    ASSERT_EQ(status("PUT", "/admin/v2/tenants/acme"), 204U);
    ASSERT_EQ(status("PUT", "/admin/v2/namespaces/acme/ns"), 204U);
    ASSERT_EQ(status("PUT", "/admin/v2/persistent/acme/ns/t"), 204U);
    // Not empty: 409, nothing removed.
    EXPECT_EQ(status("DELETE", "/admin/v2/tenants/acme"), 409U);
    EXPECT_EQ(status("DELETE", "/admin/v2/namespaces/acme/ns"), 409U);
    ASSERT_EQ(status("DELETE", "/admin/v2/persistent/acme/ns/t"), 204U);
    EXPECT_EQ(status("DELETE", "/admin/v2/namespaces/acme/ns"), 204U);
    EXPECT_EQ(status("DELETE", "/admin/v2/namespaces/acme/ns"), 404U);
    EXPECT_EQ(status("DELETE", "/admin/v2/tenants/acme"), 204U);
    EXPECT_EQ(status("DELETE", "/admin/v2/tenants/acme"), 404U);
    EXPECT_EQ(status("GET", "/admin/v2/tenants/acme"), 404U);
    // The defaults stay.
    EXPECT_EQ(status("DELETE", "/admin/v2/namespaces/public/default"), 412U);
    EXPECT_EQ(status("DELETE", "/admin/v2/tenants/public"), 412U);
    EXPECT_EQ(status("GET", "/admin/v2/namespaces/public/default"), 200U);
}

}  // namespace
}  // namespace nereus::admin::test
