// `nereus standalone --metadata zk://...` against a real ZooKeeper (Debian's package, started by
// the test with tickTime=200 and stopped by its PID): produce, consume, ack, graceful restart
// and SIGKILL restart keep exactly the confirmed state; the same through `metadataStoreUrl` in
// a --config file. The embedded RocksDB store is not created.

#include <gtest/gtest.h>

#include "integration/zk_support.h"
#include "unit/meta/support/temp_dir.h"
#include "unit/meta/support/zk_server.h"
#include <filesystem>
#include <fstream>

namespace nereus::broker::test {
namespace {

using meta::test::temp_dir;
using meta::test::zk_server;
using proto::command_type;

constexpr std::string_view topic = "persistent://public/default/zk-it";

class ZkStandalone : public ::testing::Test {
protected:
    void SetUp() override {
        auto& zk = zk_server::shared();
        ASSERT_TRUE(zk.ok()) << zk.error();
        url_ = "zk://" + zk.hosts() + "/nereus-it-" + std::to_string(::getpid()) +
               "?session_timeout_ms=1000";
    }

    // Subscribes, retrying while the topic is still owned by a dead process's session.
    std::unique_ptr<wire_client> subscribed(const broker_proc& b) {
        for (int i = 0; i < 100; ++i) {
            auto c = wire_client::open(b.port());
            if (!c || !c->handshake()) {
                return nullptr;
            }
            int err = 0;
            if (subscribe_shared(*c, topic, "sub", 0, 1, &err)) {
                return c;
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(100));
        }
        return nullptr;
    }
    static int produce(wire_client& c, int from, int n) {
        if (!create_producer(c, topic, 0, 2)) {
            return 0;
        }
        for (int i = from; i < from + n; ++i) {
            c.send_message(0, static_cast<std::uint64_t>(i), "m-" + std::to_string(i));
        }
        int ok = 0;
        for (int i = 0; i < n; ++i) {
            if (!c.expect(command_type::send_receipt)) {
                break;
            }
            ++ok;
        }
        return ok;
    }
    std::vector<std::string> consume_all(wire_client& c) {
        c.send([&](proto::frame_buffer& b) { return c.writer().flow(b, 0, 1000).has_value(); });
        std::vector<std::string> got;
        while (auto m = c.expect(command_type::message, std::chrono::milliseconds(700))) {
            ledger_ = m->cmd.message().message_id().ledgerid();
            ids_[m->payload] = m->cmd.message().message_id().entryid();
            got.push_back(m->payload);
        }
        return got;
    }
    bool ack(wire_client& c, const std::string& payload, std::uint64_t req) {
        proto::message_id id;
        id.ledger_id = ledger_;
        id.entry_id = ids_.at(payload);
        proto::ack_args a;
        a.consumer_id = 0;
        a.ids = std::span(&id, 1);
        a.request_id = req;
        c.send([&](proto::frame_buffer& b) { return c.writer().ack(b, a).has_value(); });
        auto r = c.expect(command_type::ack_response);
        return r && !r->cmd.ackresponse().has_error();
    }
    static std::vector<std::string> range(int from, int to) {
        std::vector<std::string> v;
        for (int i = from; i < to; ++i) {
            v.push_back("m-" + std::to_string(i));
        }
        return v;
    }

    std::string url_;
    std::uint64_t ledger_ = 0;
    std::map<std::string, std::uint64_t> ids_;
};

TEST_F(ZkStandalone, ProduceConsumeAckSurviveRestartsWithZooKeeperMetadata) {
    temp_dir dir;
    const std::string data = dir.sub("data");
    broker_proc b({"--data-dir", data, "--metadata", url_}, dir.sub("broker.log"));
    ASSERT_TRUE(b.start());
    {
        auto c = subscribed(b);
        ASSERT_TRUE(c);
        ASSERT_EQ(produce(*c, 0, 30), 30);
        ASSERT_EQ(consume_all(*c), range(0, 30));
        for (int i = 0; i < 10; ++i) {
            ASSERT_TRUE(ack(*c, "m-" + std::to_string(i), 100 + i));
        }
        EXPECT_EQ(b.stop(SIGTERM), 0);
    }
    // The cursor roots and the registry live in ZooKeeper, not in an embedded store.
    EXPECT_FALSE(std::filesystem::exists(data + "/meta"));
    ASSERT_TRUE(b.start());
    {
        auto c = subscribed(b);
        ASSERT_TRUE(c);
        ASSERT_EQ(consume_all(*c), range(10, 30));
        for (int i = 10; i < 20; ++i) {
            ASSERT_TRUE(ack(*c, "m-" + std::to_string(i), 200 + i));
        }
        EXPECT_EQ(b.stop(SIGKILL), 128 + SIGKILL);
    }
    // Right after a SIGKILL the dead process's session still owns the topic; the new process
    // gets it once ZooKeeper expires that session (about a second).
    ASSERT_TRUE(b.start());
    {
        auto c = subscribed(b);
        ASSERT_TRUE(c);
        ASSERT_EQ(consume_all(*c), range(20, 30));
        EXPECT_EQ(b.stop(SIGTERM), 0);
    }

    // The same metadata through the --config file's metadataStoreUrl (Pulsar's zk: form).
    const std::string conf = dir.sub("standalone.conf");
    {
        std::ofstream out(conf);
        out << "dataDir=" << data << "\nmetadataStoreUrl=zk:" << url_.substr(5) << "\n";
    }
    broker_proc viaconf({"--config", conf}, dir.sub("broker2.log"));
    ASSERT_TRUE(viaconf.start());
    auto c = subscribed(viaconf);
    ASSERT_TRUE(c);
    EXPECT_EQ(consume_all(*c), range(20, 30));
    EXPECT_EQ(viaconf.stop(SIGTERM), 0);
}

}  // namespace
}  // namespace nereus::broker::test
