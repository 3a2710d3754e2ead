// `nereus standalone --http-port`: the admin REST API of a real process. Creates a partitioned
// topic over HTTP, looks it up, sees PARTITIONED_METADATA answer it on the binary protocol,
// and finds the metadata again after a SIGTERM and a restart.

#include <gtest/gtest.h>

#include "support/http_client.h"
#include "support/standalone_process.h"
#include "support/wire_client.h"
#include <boost/json.hpp>
#include <filesystem>
#include <memory>
#include <signal.h>
#include <string>

namespace nereus::admin::test {
namespace {

using broker::test::wire_client;
using proto::command_type;

class AdminProcessTest : public ::testing::Test {
protected:
    void SetUp() override {
        std::string pattern =
            (std::filesystem::temp_directory_path() / "nereus-admin-it-XXXXXX").string();
        ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
        dir_ = pattern;
        // On free ports over dir_; start() waits for CONNECT and the admin health route.
        broker_ = std::make_unique<nereus::test::standalone_process>(
            nereus::test::standalone_options{.binary = NEREUS_BINARY, .data_dir = dir_});
        port_ = broker_->port();
        http_port_ = broker_->http_port();
    }
    void TearDown() override {
        broker_.reset();  // SIGKILLed and reaped if still running
        std::error_code ec;
        std::filesystem::remove_all(dir_, ec);
        std::filesystem::remove(dir_ + ".log", ec);
    }

    bool start() { return broker_->start(); }
    int stop(int sig) { return broker_->stop(sig); }

    std::optional<std::uint32_t> partitions_on_the_wire(std::string_view topic) {
        auto c = wire_client::open(port_);
        if (!c || !c->handshake()) {
            return std::nullopt;
        }
        c->send([&](proto::frame_buffer& b) {
            return c->writer().partitioned_metadata(b, topic, 1).has_value();
        });
        auto r = c->expect(command_type::partitioned_metadata_response);
        if (!r || r->cmd.partitionmetadataresponse().has_error()) {
            return std::nullopt;
        }
        return r->cmd.partitionmetadataresponse().partitions();
    }

    std::string dir_;
    std::uint16_t port_ = 0;
    std::uint16_t http_port_ = 0;
    std::unique_ptr<nereus::test::standalone_process> broker_;
};

TEST_F(AdminProcessTest, PartitionedTopicOverHttpThenLookupAndRestart) {
    ASSERT_TRUE(start());
    auto h = http_client::open(http_port_);
    ASSERT_TRUE(h);
    auto created = h->put("/admin/v2/persistent/public/default/orders/partitions", "3");
    ASSERT_TRUE(created);
    EXPECT_EQ(created->status, 204U);
    auto meta = h->get("/admin/v2/persistent/public/default/orders/partitions");
    ASSERT_TRUE(meta);
    EXPECT_EQ(meta->json().at("partitions"), 3);
    auto look = h->get("/lookup/v2/topic/persistent/public/default/orders");
    ASSERT_TRUE(look);
    ASSERT_EQ(look->status, 200U);
    EXPECT_EQ(look->json().at("brokerUrl"),
              boost::json::value("pulsar://127.0.0.1:" + std::to_string(port_)));
    EXPECT_EQ(look->json().at("httpUrl"),
              boost::json::value("http://127.0.0.1:" + std::to_string(http_port_)));
    EXPECT_EQ(partitions_on_the_wire("persistent://public/default/orders"), 3U);

    // SIGTERM stops the HTTP server with the rest; the metadata is durable.
    h.reset();
    ASSERT_EQ(stop(SIGTERM), 0);
    ASSERT_TRUE(start());
    EXPECT_EQ(partitions_on_the_wire("persistent://public/default/orders"), 3U);
    auto h2 = http_client::open(http_port_);
    ASSERT_TRUE(h2);
    auto list = h2->get("/admin/v2/persistent/public/default");
    ASSERT_TRUE(list);
    EXPECT_EQ(list->json().as_array().size(), 3U);
    EXPECT_EQ(stop(SIGTERM), 0);
}

}  // namespace
}  // namespace nereus::admin::test
