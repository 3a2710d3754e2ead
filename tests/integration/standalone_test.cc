// `nereus standalone` as a process: produce + consume over the wire, graceful SIGTERM, and a
// SIGKILL that loses nothing that was confirmed (receipts and ack responses), with an
// immediate restart on the same port.

#include <gtest/gtest.h>

#include "support/wire_client.h"
#include <arpa/inet.h>
#include <fcntl.h>
#include <filesystem>
#include <netinet/in.h>
#include <signal.h>
#include <string>
#include <sys/socket.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

namespace nereus::broker::test {
namespace {

using proto::command_type;

constexpr std::string_view topic = "persistent://public/default/it";

std::uint16_t free_port() {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
    socklen_t len = sizeof a;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
    ::close(fd);
    return ntohs(a.sin_port);
}

class broker_process {
public:
    // The admin HTTP port is a free one too (the default 8080 may be taken by another test).
    broker_process(std::string dir, std::uint16_t port)
        : dir_(std::move(dir)), port_(port), http_port_(free_port()) {}
    ~broker_process() { kill(SIGKILL); }

    bool start() {
        pid_ = ::fork();
        if (pid_ == 0) {
            const std::string log = dir_ + ".log";
            const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
            ::dup2(fd, 1);
            ::dup2(fd, 2);
            const std::string port = std::to_string(port_);
            const std::string http_port = std::to_string(http_port_);
            ::execl(NEREUS_BINARY, NEREUS_BINARY, "standalone", "--data-dir", dir_.c_str(),
                    "--port", port.c_str(), "--http-port", http_port.c_str(),
                    static_cast<char*>(nullptr));
            ::_exit(127);
        }
        // Bounded wait until it accepts and answers CONNECT.
        for (int i = 0; i < 200; ++i) {
            if (auto c = wire_client::open(port_); c && c->handshake()) {
                return true;
            }
            int st = 0;
            if (::waitpid(pid_, &st, WNOHANG) == pid_) {
                pid_ = -1;
                return false;
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(25));
        }
        return false;
    }
    // Sends `sig` and waits (bounded) for the exit; returns the exit status or -1.
    int kill(int sig, std::chrono::seconds timeout = std::chrono::seconds(15)) {
        if (pid_ <= 0) {
            return -1;
        }
        ::kill(pid_, sig);
        const auto until = std::chrono::steady_clock::now() + timeout;
        int st = 0;
        while (std::chrono::steady_clock::now() < until) {
            if (::waitpid(pid_, &st, WNOHANG) == pid_) {
                pid_ = -1;
                return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
        ::kill(pid_, SIGKILL);
        ::waitpid(pid_, &st, 0);
        pid_ = -1;
        return -1;
    }

private:
    std::string dir_;
    std::uint16_t port_;
    std::uint16_t http_port_;
    pid_t pid_ = -1;
};

class StandaloneTest : public ::testing::Test {
protected:
    void SetUp() override {
        std::string pattern =
            (std::filesystem::temp_directory_path() / "nereus-standalone-XXXXXX").string();
        ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
        dir_ = pattern;
        port_ = free_port();
    }
    void TearDown() override {
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
    std::uint16_t port_ = 0;
    std::uint64_t ledger_ = 0;  // the topic's ledger id, learned from MESSAGEs
};

TEST_F(StandaloneTest, ServesProduceConsumeAndStopsGracefullyOnSigterm) {
    broker_process b(dir_, port_);
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
        EXPECT_EQ(b.kill(SIGTERM), 0);
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
    EXPECT_EQ(b.kill(SIGINT), 0);
}

TEST_F(StandaloneTest, SigkillLosesNothingConfirmedAndRestartsOnTheSamePort) {
    broker_process b(dir_, port_);
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
        EXPECT_EQ(b.kill(SIGKILL), 128 + SIGKILL);
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
    EXPECT_EQ(b.kill(SIGTERM), 0);
}

// Redelivery counts live in the cursor: a nack, an ack whose CAS carries the count, a SIGKILL,
// and the message comes back with redelivery_count >= 1 (Pulsar would say 0).
TEST_F(StandaloneTest, RedeliveryCountSurvivesSigkill) {
    broker_process b(dir_, port_);
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
        EXPECT_EQ(b.kill(SIGKILL), 128 + SIGKILL);
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
    EXPECT_EQ(b.kill(SIGTERM), 0);
}

}  // namespace
}  // namespace nereus::broker::test
