// The Pulsar binding and the client against a real `nereus standalone` (started once per test
// process on free ports with a config file, stopped by its PID at exit):
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

#include <gtest/gtest.h>

#include "support/standalone_process.h"
#include <algorithm>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>
#include <filesystem>
#include <fstream>
#include <memory>
#include <stdexcept>
#include <thread>
#include <unistd.h>

namespace nereus::runtime {
namespace {

namespace asio = boost::asio;
namespace nc = nereus::client;
using namespace std::chrono_literals;

constexpr std::size_t broker_limit = 64 * 1024;  // maxMessageSize in the broker's config

// `nereus standalone` with maxMessageSize = broker_limit (its --config), for this test process
// (tests/support/standalone_process.h: free ports, readiness, stop by PID).
class standalone {
public:
    standalone() {
        std::string dir =
            (std::filesystem::temp_directory_path() / "nereus-pulsar-XXXXXX").string();
        if (::mkdtemp(dir.data()) == nullptr)
            throw std::runtime_error("mkdtemp failed");
        dir_ = dir;
        const std::string conf = dir_ + "/broker.conf";
        std::ofstream(conf) << "maxMessageSize=" << broker_limit << "\n";
        proc_ = std::make_unique<nereus::test::standalone_process>(
            nereus::test::standalone_options{.binary = NEREUS_BINARY,
                                             .data_dir = dir_ + "/data",
                                             .log = dir_ + "/broker.log",
                                             .args = {"--config", conf}});
        if (!proc_->start(std::chrono::seconds(60))) {
            throw std::runtime_error("nereus standalone did not start; see " + dir_ +
                                     "/broker.log");
        }
    }
    ~standalone() {
        proc_->stop();
        std::error_code ec;
        std::filesystem::remove_all(dir_, ec);
    }
    standalone(const standalone&) = delete;
    standalone& operator=(const standalone&) = delete;
    [[nodiscard]] std::string url() const { return proc_->url(); }

private:
    std::string dir_;
    std::unique_ptr<nereus::test::standalone_process> proc_;
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
        if (e)
            std::rethrow_exception(e);
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

    auto exact = run(
        io, rt.publisher_handle().publish(topic, outgoing{std::string(broker_limit, 'x'), {}, {}}));
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
