// The Pulsar binding and the client against a real `nereus standalone` (started once per test
// process on free ports, --port and --http-port, with a config file; stopped by its PID at
// exit):
//  - the transport reports the broker's max_message_size as the client learnt it from
//    CONNECTED (the configured value only before any connection), and a payload over it is
//    refused client-side with errc::message_too_large (the broker's own refusal would be a
//    SEND_ERROR NotAllowed, which the binding does not turn into message_too_large);
//  - a client pattern consumer joins a topic created after it subscribed (the periodic
//    namespace listing), without disturbing the topic it already read.

#include "nereus/client/client.h"
#include "nereus/runtime/errc.h"
#include "nereus/runtime/pulsar/connect.h"
#include "nereus/runtime/runtime.h"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <csignal>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <netinet/in.h>
#include <stdexcept>
#include <sys/socket.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

namespace nereus::runtime {
namespace {

namespace asio = boost::asio;
namespace nc = nereus::client;
using namespace std::chrono_literals;

constexpr std::size_t broker_limit = 64 * 1024;  // maxMessageSize in the broker's config

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

bool accepts(std::uint16_t port) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(port);
    const bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
    ::close(fd);
    return ok;
}

// `nereus standalone` with maxMessageSize = broker_limit, for this test process.
class standalone {
public:
    standalone() {
        std::string dir = (std::filesystem::temp_directory_path() / "nereus-pulsar-XXXXXX").string();
        if (::mkdtemp(dir.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
        dir_ = dir;
        std::ofstream(dir_ + "/broker.conf") << "maxMessageSize=" << broker_limit << "\n";
        for (int attempt = 0; attempt < 3 && pid_ <= 0; ++attempt) {
            port_ = free_port();
            http_port_ = free_port();
            if (!start()) stop();
        }
        if (pid_ <= 0) throw std::runtime_error("nereus standalone did not start: " + dir_);
    }
    ~standalone() {
        stop();
        std::error_code ec;
        std::filesystem::remove_all(dir_, ec);
    }
    standalone(const standalone&) = delete;
    standalone& operator=(const standalone&) = delete;
    [[nodiscard]] std::string url() const { return "pulsar://127.0.0.1:" + std::to_string(port_); }

private:
    bool start() {
        const std::string conf = dir_ + "/broker.conf";
        const std::string data = dir_ + "/data";
        const std::string log = dir_ + "/broker.log";
        const std::string port = std::to_string(port_);
        const std::string http = std::to_string(http_port_);
        pid_ = ::fork();
        if (pid_ == 0) {
            const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
            ::dup2(fd, 1);
            ::dup2(fd, 2);
            ::execl(NEREUS_BINARY, NEREUS_BINARY, "standalone", "--config", conf.c_str(),
                    "--data-dir", data.c_str(), "--bind", "127.0.0.1", "--port", port.c_str(),
                    "--http-port", http.c_str(), static_cast<char*>(nullptr));
            ::_exit(127);
        }
        for (int i = 0; i < 2400; ++i) {  // up to 60 s on a loaded machine
            int st = 0;
            if (::waitpid(pid_, &st, WNOHANG) == pid_) {
                pid_ = -1;
                return false;
            }
            if (accepts(port_) && accepts(http_port_)) return true;
            std::this_thread::sleep_for(25ms);
        }
        return false;
    }
    void stop() {
        if (pid_ <= 0) return;
        ::kill(pid_, SIGTERM);
        int st = 0;
        for (int i = 0; i < 1500; ++i) {
            if (::waitpid(pid_, &st, WNOHANG) == pid_) {
                pid_ = -1;
                return;
            }
            std::this_thread::sleep_for(10ms);
        }
        ::kill(pid_, SIGKILL);
        ::waitpid(pid_, &st, 0);
        pid_ = -1;
    }

    std::string dir_;
    std::uint16_t port_ = 0;
    std::uint16_t http_port_ = 0;
    pid_t pid_ = -1;
};

standalone& broker() {
    static standalone b;  // stopped by its destructor at process exit
    return b;
}

// Runs `a` on `io` until it completes (bounded: 60 s).
template <class T>
std::optional<T> run(asio::io_context& io, asio::awaitable<T> a) {
    auto out = std::make_shared<std::optional<T>>();
    asio::co_spawn(io, std::move(a), [out](std::exception_ptr e, T v) {
        if (e) std::rethrow_exception(e);
        *out = std::move(v);
    });
    const auto until = std::chrono::steady_clock::now() + 60s;
    while (!out->has_value() && std::chrono::steady_clock::now() < until) {
        io.run_one_for(20ms);
    }
    return std::move(*out);
}

TEST(PulsarStandalone, TransportReportsTheBrokersMaxMessageSizeAndRefusesBiggerPayloads) {
    asio::io_context io;
    auto work = asio::make_work_guard(io);
    pulsar::options o;
    o.service_url = broker().url();
    auto t = pulsar::connect(io.get_executor(), o);
    ASSERT_TRUE(t) << t.error().message();
    const transport probe = *t;  // shares the client handle with the runtime's copy
    EXPECT_EQ(probe.max_message_size(), o.max_message_size) << "before any connection";
    ASSERT_NE(o.max_message_size, broker_limit);

    auto clk = clock::real(io.get_executor());
    runtime rt(io.get_executor(), std::move(*t), clk);
    auto started = run(io, rt.start());
    ASSERT_TRUE(started && *started);
    const std::string topic = "persistent://public/default/small-" + std::to_string(::getpid());
    auto first = run(io, rt.publisher_handle().publish(topic, outgoing{"hello", {}, {}}));
    ASSERT_TRUE(first && *first);
    EXPECT_EQ(probe.max_message_size(), broker_limit) << "the value of CONNECTED";

    auto exact = run(io, rt.publisher_handle().publish(
                             topic, outgoing{std::string(broker_limit, 'x'), {}, {}}));
    ASSERT_TRUE(exact);
    EXPECT_TRUE(*exact) << "exactly max_message_size is accepted: " << exact->error().message();
    auto over = run(io, rt.publisher_handle().publish(
                            topic, outgoing{std::string(broker_limit + 1, 'x'), {}, {}}));
    ASSERT_TRUE(over);
    ASSERT_FALSE(*over);
    EXPECT_EQ(over->error(), make_error_code(errc::message_too_large)) << over->error().message();
    auto after = run(io, rt.publisher_handle().publish(topic, outgoing{"after", {}, {}}));
    ASSERT_TRUE(after && *after) << "the producer is unharmed";

    auto report = run(io, rt.shutdown(5s));
    ASSERT_TRUE(report);
}

template <class T>
nereus::result<T> wait(std::future<nereus::result<T>> f) {
    if (f.wait_for(30s) != std::future_status::ready) {
        ADD_FAILURE() << "no answer within 30 s";
        return nereus::error(nc::errc::timeout);
    }
    return f.get();
}

TEST(PulsarStandalone, ClientPatternConsumerJoinsATopicCreatedAfterItSubscribed) {
    nc::client_options co;
    co.service_url = broker().url();
    nc::client c(co);
    const std::string base = "persistent://public/default/pat-" + std::to_string(::getpid());
    nc::producer_options po;
    po.topic = base + "-a";
    po.batching = false;
    auto pa = wait(c.create_producer(po, asio::use_future));
    ASSERT_TRUE(pa) << pa.error().message();
    ASSERT_TRUE(wait(pa->send(nc::outgoing_message::text("a1"), asio::use_future)));

    nc::consumer_options o;
    o.topics_pattern = base + "-.*";
    o.subscription = "s";
    o.type = nc::subscription_type::shared;
    o.start = nc::initial_position::earliest;
    o.pattern_auto_discovery_period = 300ms;
    auto s = wait(c.subscribe(o, asio::use_future));
    ASSERT_TRUE(s) << s.error().message();
    EXPECT_EQ(s->topics(), std::vector<std::string>{base + "-a"});
    auto m = wait(s->receive(asio::use_future));
    ASSERT_TRUE(m);
    EXPECT_EQ(m->payload_text(), "a1");
    ASSERT_TRUE(wait(s->acknowledge(m->id(), asio::use_future)));

    po.topic = base + "-b";  // created now, after the subscription
    auto pb = wait(c.create_producer(po, asio::use_future));
    ASSERT_TRUE(pb) << pb.error().message();
    ASSERT_TRUE(wait(pb->send(nc::outgoing_message::text("b1"), asio::use_future)));
    ASSERT_TRUE(wait(pa->send(nc::outgoing_message::text("a2"), asio::use_future)));
    std::vector<std::string> got;
    for (int i = 0; i < 2; ++i) {
        auto r = wait(s->receive(asio::use_future));
        ASSERT_TRUE(r);
        got.emplace_back(r->payload_text());
        EXPECT_EQ(r->topic(), r->payload_text() == "b1" ? base + "-b" : base + "-a");
        ASSERT_TRUE(wait(s->acknowledge(r->id(), asio::use_future)));
    }
    std::sort(got.begin(), got.end());
    EXPECT_EQ(got, (std::vector<std::string>{"a2", "b1"}));
    EXPECT_EQ(s->topics().size(), 2U);
    c.close();
}

}  // namespace
}  // namespace nereus::runtime
