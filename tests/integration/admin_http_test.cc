// `nereus standalone --http-port`: the admin REST API of a real process. Creates a partitioned
// topic over HTTP, looks it up, sees PARTITIONED_METADATA answer it on the binary protocol,
// and finds the metadata again after a SIGTERM and a restart.

#include <gtest/gtest.h>

#include "support/http_client.h"
#include "support/wire_client.h"
#include <arpa/inet.h>
#include <boost/json.hpp>
#include <fcntl.h>
#include <filesystem>
#include <netinet/in.h>
#include <signal.h>
#include <string>
#include <sys/socket.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

namespace nereus::admin::test {
namespace {

using broker::test::wire_client;
using proto::command_type;

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

class AdminProcessTest : public ::testing::Test {
protected:
    void SetUp() override {
        std::string pattern =
            (std::filesystem::temp_directory_path() / "nereus-admin-it-XXXXXX").string();
        ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
        dir_ = pattern;
        port_ = free_port();
        http_port_ = free_port();
    }
    void TearDown() override {
        stop(SIGKILL);
        std::error_code ec;
        std::filesystem::remove_all(dir_, ec);
        std::filesystem::remove(dir_ + ".log", ec);
    }

    // Starts the process; bounded wait until both ports answer.
    bool start() {
        pid_ = ::fork();
        if (pid_ == 0) {
            const std::string log = dir_ + ".log";
            const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
            ::dup2(fd, 1);
            ::dup2(fd, 2);
            const std::string port = std::to_string(port_);
            const std::string http = std::to_string(http_port_);
            ::execl(NEREUS_BINARY, NEREUS_BINARY, "standalone", "--data-dir", dir_.c_str(),
                    "--bind", "127.0.0.1", "--port", port.c_str(), "--http-port", http.c_str(),
                    static_cast<char*>(nullptr));
            ::_exit(127);
        }
        for (int i = 0; i < 400; ++i) {
            auto c = wire_client::open(port_);
            if (c && c->handshake()) {
                if (auto h = http_client::open(http_port_)) {
                    if (auto r = h->get("/admin/v2/brokers/health"); r && r->status == 200) {
                        return true;
                    }
                }
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

    int stop(int sig) {
        if (pid_ <= 0) {
            return -1;
        }
        ::kill(pid_, sig);
        int st = 0;
        for (int i = 0; i < 1500; ++i) {
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
    pid_t pid_ = -1;
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
