// `nereus standalone` as a process: produce + consume over the wire, graceful SIGTERM, and a
// SIGKILL that loses nothing that was confirmed (receipts and ack responses), with an
// immediate restart on the same port.

#include <gtest/gtest.h>

#include "support/standalone_process.h"
#include "support/wire_client.h"
#include <filesystem>
#include <signal.h>
#include <string>

namespace nereus::broker::test {
namespace {

using nereus::test::standalone_process;
using proto::command_type;

constexpr std::string_view topic = "persistent://public/default/it";

class StandaloneTest : public ::testing::Test {
protected:
    void SetUp() override {
        std::string pattern =
            (std::filesystem::temp_directory_path() / "nereus-standalone-XXXXXX").string();
        ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
        dir_ = pattern;
        // On free ports over dir_; start() after a stop restarts it on the same ports.
        broker_ = std::make_unique<standalone_process>(
            nereus::test::standalone_options{.binary = NEREUS_BINARY, .data_dir = dir_});
        port_ = broker_->port();
    }
    void TearDown() override {
        broker_.reset();  // SIGKILLed and reaped if still running
        std::error_code ec;
        std::filesystem::remove_all(dir_, ec);
        std::filesystem::remove(dir_ + ".log", ec);
    }

    std::unique_ptr<wire_client> client() {
        auto c = wire_client::open(port_);
        EXPECT_TRUE(c && c->handshake());
        return c;
    }
    static bool subscribe(wire_client& c) {
        proto::subscribe_args a;
        a.topic = topic;
        a.subscription = "it-sub";
        a.sub_type = 1;  // Shared
        a.consumer_id = 0;
        a.request_id = 1;
        a.initial_position = 1;
        c.send([&](proto::frame_buffer& b) { return c.writer().subscribe(b, a).has_value(); });
        return c.expect(command_type::success).has_value();
    }
    bool ack(wire_client& c, std::uint64_t entry, std::uint64_t req) const {
        proto::message_id id;
        id.ledger_id = ledger_;
        id.entry_id = entry;
        proto::ack_args a;
        a.consumer_id = 0;
        a.ids = std::span(&id, 1);
        a.request_id = req;
        c.send([&](proto::frame_buffer& b) { return c.writer().ack(b, a).has_value(); });
        auto r = c.expect(command_type::ack_response);
        return r && !r->cmd.ackresponse().has_error();
    }
    // Produces n messages; returns how many receipts came back in order.
    static int produce(wire_client& c, int n) {
        proto::producer_args p;
        p.topic = topic;
        p.producer_id = 0;
        p.request_id = 2;
        c.send([&](proto::frame_buffer& b) { return c.writer().producer(b, p).has_value(); });
        if (!c.expect(command_type::producer_success)) {
            return 0;
        }
        for (int i = 0; i < n; ++i) {
            c.send_message(0, static_cast<std::uint64_t>(i),
                           std::string("payload-").append(std::to_string(i)));
        }
        int ok = 0;
        for (int i = 0; i < n; ++i) {
            auto r = c.expect(command_type::send_receipt);
            if (!r || r->cmd.send_receipt().sequence_id() != static_cast<std::uint64_t>(i)) {
                break;
            }
            ++ok;
        }
        return ok;
    }
    std::vector<std::uint64_t> consume_all(wire_client& c, std::uint32_t permits) {
        c.send([&](proto::frame_buffer& b) { return c.writer().flow(b, 0, permits).has_value(); });
        std::vector<std::uint64_t> got;
        while (auto m = c.expect(command_type::message, std::chrono::milliseconds(500))) {
            ledger_ = m->cmd.message().message_id().ledgerid();
            got.push_back(m->cmd.message().message_id().entryid());
        }
        return got;
    }

    std::string dir_;
    std::unique_ptr<standalone_process> broker_;
    std::uint16_t port_ = 0;
    std::uint64_t ledger_ = 0;  // the topic's ledger id, learned from MESSAGEs
};

TEST_F(StandaloneTest, ServesProduceConsumeAndStopsGracefullyOnSigterm) {
    auto& b = *broker_;
    ASSERT_TRUE(b.start());
    {
        auto c = client();
        ASSERT_TRUE(subscribe(*c));
        ASSERT_EQ(produce(*c, 20), 20);
        auto got = consume_all(*c, 100);
        ASSERT_EQ(got.size(), 20U);
        for (std::uint64_t e = 0; e < 10; ++e) {
            ASSERT_TRUE(ack(*c, e, 100 + e));
        }
        EXPECT_EQ(b.stop(SIGTERM), 0);
        EXPECT_TRUE(c->wait_closed(std::chrono::seconds(2)));
    }
    ASSERT_TRUE(b.start());
    auto c = client();
    ASSERT_TRUE(subscribe(*c));
    auto got = consume_all(*c, 100);
    std::vector<std::uint64_t> want;
    for (std::uint64_t e = 10; e < 20; ++e) {
        want.push_back(e);
    }
    EXPECT_EQ(got, want);
    EXPECT_EQ(b.stop(SIGINT), 0);
}

TEST_F(StandaloneTest, SigkillLosesNothingConfirmedAndRestartsOnTheSamePort) {
    auto& b = *broker_;
    ASSERT_TRUE(b.start());
    {
        auto c = client();
        ASSERT_TRUE(subscribe(*c));  // durable before SUCCESS
        ASSERT_EQ(produce(*c, 200), 200);
        auto got = consume_all(*c, 1000);
        ASSERT_EQ(got.size(), 200U);
        for (std::uint64_t e = 0; e < 50; ++e) {
            ASSERT_TRUE(ack(*c, e, e));
        }
        EXPECT_EQ(b.stop(SIGKILL), 128 + SIGKILL);
    }
    ASSERT_TRUE(b.start());  // same port, right away
    auto c = client();
    ASSERT_TRUE(subscribe(*c));
    auto got = consume_all(*c, 1000);
    ASSERT_EQ(got.size(), 150U);
    for (std::size_t i = 0; i < got.size(); ++i) {
        EXPECT_EQ(got[i], 50 + i);
    }
    c->send([&](proto::frame_buffer& f) {
        return c->writer().get_last_message_id(f, 0, 9).has_value();
    });
    auto last = c->expect(command_type::get_last_message_id_response);
    ASSERT_TRUE(last);
    EXPECT_EQ(last->cmd.getlastmessageidresponse().last_message_id().entryid(), 199U);
    EXPECT_EQ(b.stop(SIGTERM), 0);
}

// Redelivery counts live in the cursor: a nack, an ack whose CAS carries the count, a SIGKILL,
// and the message comes back with redelivery_count >= 1 (Pulsar would say 0).
TEST_F(StandaloneTest, RedeliveryCountSurvivesSigkill) {
    auto& b = *broker_;
    ASSERT_TRUE(b.start());
    {
        auto c = client();
        ASSERT_TRUE(subscribe(*c));
        ASSERT_EQ(produce(*c, 2), 2);
        ASSERT_EQ(consume_all(*c, 100).size(), 2U);
        proto::message_id nack;
        nack.ledger_id = ledger_;
        nack.entry_id = 0;
        c->send([&](proto::frame_buffer& f) {
            return c->writer().redeliver_unacknowledged(f, 0, std::span(&nack, 1)).has_value();
        });
        auto m = c->expect(command_type::message);
        ASSERT_TRUE(m);
        EXPECT_EQ(m->cmd.message().message_id().entryid(), 0U);
        EXPECT_EQ(m->cmd.message().redelivery_count(), 1U);
        ASSERT_TRUE(ack(*c, 1, 7));  // its CAS writes the recorded count
        EXPECT_EQ(b.stop(SIGKILL), 128 + SIGKILL);
    }
    ASSERT_TRUE(b.start());
    auto c = client();
    ASSERT_TRUE(subscribe(*c));
    c->send([&](proto::frame_buffer& f) { return c->writer().flow(f, 0, 100).has_value(); });
    auto m = c->expect(command_type::message);
    ASSERT_TRUE(m);
    EXPECT_EQ(m->cmd.message().message_id().entryid(), 0U);
    EXPECT_GE(m->cmd.message().redelivery_count(), 1U);
    EXPECT_FALSE(c->expect(command_type::message, std::chrono::milliseconds(200)));
    EXPECT_EQ(b.stop(SIGTERM), 0);
}

// The helper itself (tests/support/standalone_process.h): a broker that exits at once (an
// unknown flag) makes start() fail with the child reaped (pid -1: it saw the exit, not only a
// timeout); stop() of a broker that is not running says -1.
TEST_F(StandaloneTest, HelperReportsABrokerThatExitsAtStart) {
    standalone_process bad({.binary = NEREUS_BINARY,
                            .data_dir = dir_ + "/bad",
                            .log = dir_ + ".log",
                            .args = {"--no-such-flag"}});
    EXPECT_FALSE(bad.start());
    EXPECT_EQ(bad.pid(), -1);
    EXPECT_EQ(bad.stop(SIGTERM), -1);
    auto& b = *broker_;
    ASSERT_TRUE(b.start());
    EXPECT_GT(b.pid(), 0);
    EXPECT_EQ(b.stop(SIGTERM), 0);
    EXPECT_EQ(b.stop(SIGTERM), -1);
}

}  // namespace
}  // namespace nereus::broker::test
