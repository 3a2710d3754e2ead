#include "apps/nereus/perf/options.h"

#include <gtest/gtest.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <string>
#include <vector>

namespace nereus::app::perf {
namespace {

// Parses `args` as `perf <mode> args...` and finalizes; returns the error text or "".
std::string parse(perf_mode mode, std::vector<std::string> args, perf_options& o) {
    CLI::App app{"test"};
    auto* sub = app.add_subcommand(mode == perf_mode::produce ? "produce" : "consume");
    add_perf_options(*sub, o, mode);
    args.insert(args.begin(), mode == perf_mode::produce ? "produce" : "consume");
    std::reverse(args.begin(), args.end());  // CLI11 takes the reversed vector
    try {
        app.parse(args);
    } catch (const CLI::ParseError& e) {
        return std::string("parse: ") + e.what();
    }
    auto e = finalize(o);
    return e ? *e : std::string();
}

TEST(PerfOptions, Defaults) {
    perf_options o;
    ASSERT_EQ(parse(perf_mode::produce, {}, o), "");
    EXPECT_EQ(o.service, (endpoint{"127.0.0.1", 6650}));
    ASSERT_EQ(o.topic_names.size(), 1U);
    EXPECT_EQ(o.topic_names[0], "persistent://public/default/perf-0");
    EXPECT_EQ(o.rate, 0);
    EXPECT_EQ(o.size, 1024U);
    EXPECT_EQ(o.max_pending, 1000U);
    EXPECT_TRUE(o.batching());
    EXPECT_EQ(o.sub_type, 0);
    EXPECT_EQ(o.initial_position, 0);
    EXPECT_EQ(o.ack_kind, ack_mode::individual);
    EXPECT_FALSE(o.consume);
}

TEST(PerfOptions, ProduceFlags) {
    perf_options o;
    ASSERT_EQ(parse(perf_mode::produce,
                    {"--service-url",
                     "pulsar://localhost:7000",
                     "--topics",
                     "3",
                     "--rate",
                     "5000",
                     "--size",
                     "100",
                     "--num-messages",
                     "2000",
                     "--max-pending",
                     "64",
                     "--batch-max-messages",
                     "10",
                     "--batch-delay-ms",
                     "2.5",
                     "--batch-max-bytes",
                     "65536",
                     "--producers",
                     "2",
                     "--consume",
                     "--ack",
                     "cumulative",
                     "--subscription",
                     "s1",
                     "--subscription-type",
                     "Failover",
                     "--raw-baseline",
                     "/tmp/x"},
                    o),
              "");
    EXPECT_EQ(o.service, (endpoint{"localhost", 7000}));
    ASSERT_EQ(o.topic_names.size(), 3U);
    EXPECT_EQ(o.topic_names[2], "persistent://public/default/perf-2");
    EXPECT_EQ(o.rate, 5000);
    EXPECT_EQ(o.size, 100U);
    EXPECT_EQ(o.num_messages, 2000U);
    EXPECT_EQ(o.max_pending, 64U);
    EXPECT_EQ(o.batch_max_messages, 10U);
    EXPECT_DOUBLE_EQ(o.batch_delay_ms, 2.5);
    EXPECT_EQ(o.batch_max_bytes, 65536U);
    EXPECT_EQ(o.producers, 2U);
    EXPECT_TRUE(o.consume);
    EXPECT_EQ(o.ack_kind, ack_mode::cumulative);
    EXPECT_EQ(o.subscription, "s1");
    EXPECT_EQ(o.sub_type, 2);
    EXPECT_EQ(o.raw_baseline_dir, "/tmp/x");
}

TEST(PerfOptions, TopicNamesAreExpanded) {
    perf_options o;
    ASSERT_EQ(
        parse(perf_mode::consume, {"--topics", "a,my/ns/b", "--topics", "persistent://t/n/c"}, o),
        "");
    ASSERT_EQ(o.topic_names.size(), 3U);
    EXPECT_EQ(o.topic_names[0], "persistent://public/default/a");
    EXPECT_EQ(o.topic_names[1], "persistent://my/ns/b");
    EXPECT_EQ(o.topic_names[2], "persistent://t/n/c");
}

// The many-topics run of bench/run: 10,000 topics, one client each.
TEST(PerfOptions, TenThousandTopics) {
    perf_options o;
    ASSERT_EQ(parse(perf_mode::consume, {"--topics", "10000"}, o), "");
    ASSERT_EQ(o.topic_names.size(), 10000U);
    EXPECT_EQ(o.topic_names.front(), "persistent://public/default/perf-0");
    EXPECT_EQ(o.topic_names.back(), "persistent://public/default/perf-9999");
    perf_options p;
    EXPECT_EQ(parse(perf_mode::produce, {"--topics", "100000"}, p), "");
}

TEST(PerfOptions, BatchingOff) {
    perf_options a;
    ASSERT_EQ(parse(perf_mode::produce, {"--no-batching"}, a), "");
    EXPECT_FALSE(a.batching());
    perf_options b;
    ASSERT_EQ(parse(perf_mode::produce, {"--batch-max-messages", "0"}, b), "");
    EXPECT_FALSE(b.batching());
    perf_options c;
    ASSERT_EQ(parse(perf_mode::produce, {"--batch-max-messages", "1"}, c), "");
    EXPECT_FALSE(c.batching());
}

TEST(PerfOptions, ConsumeFlags) {
    perf_options o;
    ASSERT_EQ(parse(perf_mode::consume,
                    {"--subscription-type", "Shared", "--consumers", "4", "--subscription-position",
                     "Earliest", "--num-messages", "10", "--receiver-queue", "500"},
                    o),
              "");
    EXPECT_EQ(o.sub_type, 1);
    EXPECT_EQ(o.consumers, 4U);
    EXPECT_EQ(o.initial_position, 1);
    EXPECT_EQ(o.num_messages, 10U);
    EXPECT_EQ(o.receiver_queue, 500U);
}

TEST(PerfOptions, ProduceOnlyFlagsAreRejectedByConsume) {
    perf_options o;
    EXPECT_NE(parse(perf_mode::consume, {"--rate", "10"}, o), "");
}

TEST(PerfOptions, RejectsBadValues) {
    struct bad_case {
        perf_mode mode;
        std::vector<std::string> args;
    };
    const std::vector<bad_case> cases = {
        {perf_mode::produce, {"--service-url", "http://127.0.0.1:8080"}},
        {perf_mode::produce, {"--service-url", "pulsar://127.0.0.1:0"}},
        {perf_mode::produce, {"--service-url", "pulsar://127.0.0.1:99999"}},
        {perf_mode::produce, {"--service-url", "pulsar://:6650"}},
        {perf_mode::produce, {"--topics", "0"}},
        {perf_mode::produce, {"--topics", "100001"}},
        {perf_mode::produce, {"--size", "0"}},
        {perf_mode::produce, {"--max-pending", "0"}},
        {perf_mode::produce, {"--rate", "-1"}},
        {perf_mode::produce, {"--subscription-type", "Exclusiv", "--consume"}},
        {perf_mode::consume, {"--subscription-position", "Middle"}},
        {perf_mode::consume, {"--ack", "sometimes"}},
        // The broker would refuse the second consumer of an Exclusive subscription.
        {perf_mode::consume, {"--consumers", "2"}},
        // Pulsar does not allow cumulative acks on Shared / Key_Shared.
        {perf_mode::consume, {"--subscription-type", "Shared", "--ack", "cumulative"}},
        {perf_mode::produce,
         {"--consume", "--subscription-type", "Key_Shared", "--ack", "cumulative"}},
        {perf_mode::produce, {"--topics", "10000", "--producers", "11"}},
        {perf_mode::consume,
         {"--topics", "100000", "--consumers", "2", "--subscription-type", "Shared"}},
    };
    for (const auto& c : cases) {
        perf_options o;
        std::string joined;
        for (const auto& a : c.args) {
            joined += a + " ";
        }
        EXPECT_NE(parse(c.mode, c.args, o), "") << joined;
    }
}

TEST(PerfOptions, ServiceUrl) {
    EXPECT_EQ(parse_service_url("pulsar://127.0.0.1:6650"), (endpoint{"127.0.0.1", 6650}));
    EXPECT_EQ(parse_service_url("pulsar://broker"), (endpoint{"broker", 6650}));
    EXPECT_EQ(parse_service_url("pulsar://broker:1234/"), (endpoint{"broker", 1234}));
    EXPECT_FALSE(parse_service_url("pulsar+ssl://broker:6651"));
    EXPECT_FALSE(parse_service_url("pulsar://broker:12x"));
    EXPECT_FALSE(parse_service_url("127.0.0.1:6650"));
}

}  // namespace
}  // namespace nereus::app::perf
