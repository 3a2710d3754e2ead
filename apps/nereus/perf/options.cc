#include "apps/nereus/perf/options.h"

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <charconv>

namespace nereus::app::perf {

namespace {

bool all_digits(std::string_view s) {
    return !s.empty() &&
           std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

}  // namespace

void add_perf_options(CLI::App& cmd, perf_options& o, perf_mode mode) {
    o.mode = mode;
    const bool produce = mode == perf_mode::produce;
    cmd.add_option("--service-url", o.service_url, "Broker URL (pulsar://host:port)")
        ->capture_default_str();
    cmd.add_option("--topics", o.topics,
                   "A number N (topics perf-0..perf-N-1) or topic names (comma or space separated)")
        ->delimiter(',')
        ->capture_default_str();
    cmd.add_option("--num-messages,-m", o.num_messages,
                   produce ? "Messages to publish in total (0 = until --time or Ctrl-C)"
                           : "Messages to consume in total (0 = until --time or Ctrl-C)")
        ->capture_default_str();
    cmd.add_option("--time", o.time_seconds, "Seconds to run (0 = no limit)")
        ->capture_default_str()
        ->check(CLI::NonNegativeNumber);
    cmd.add_option("--consumers", o.consumers, "Consumers per topic")
        ->capture_default_str()
        ->check(CLI::Range(1, 1000));
    cmd.add_option("--subscription", o.subscription, "Subscription name")->capture_default_str();
    cmd.add_option("--subscription-type", o.subscription_type,
                   "Exclusive, Shared, Failover or Key_Shared")
        ->capture_default_str();
    cmd.add_option("--subscription-position", o.subscription_position,
                   "Where a new subscription starts: Latest or Earliest")
        ->capture_default_str();
    cmd.add_option("--ack", o.ack, "individual or cumulative")->capture_default_str();
    cmd.add_option("--receiver-queue", o.receiver_queue,
                   "Permits per consumer (FLOW); refilled at half")
        ->capture_default_str()
        ->check(CLI::Range(1, 1000000));
    cmd.add_flag("--defer-flow", o.defer_flow,
                 "Grant the first permits (FLOW) only once every consumer is subscribed; the "
                 "consume rate then counts from there");
    cmd.add_option("--ack-group-max", o.ack_group_max, "Most message ids per ACK frame")
        ->capture_default_str()
        ->check(CLI::Range(1, 100000));
    cmd.add_option("--ack-group-ms", o.ack_group_ms, "Acks are sent at least this often")
        ->capture_default_str()
        ->check(CLI::Range(0.1, 10000.0));
    cmd.add_option("--report-interval", o.report_interval, "Seconds between progress lines")
        ->capture_default_str()
        ->check(CLI::Range(0.1, 3600.0));
    cmd.add_option(
           "--drain-timeout", o.drain_timeout,
           "Seconds to wait for outstanding receipts, messages and ack responses at the end")
        ->capture_default_str()
        ->check(CLI::Range(0.1, 3600.0));
    if (produce) {
        cmd.add_option("--rate", o.rate,
                       "Messages/s over all producers, paced by schedule (0 = max rate)")
            ->capture_default_str()
            ->check(CLI::NonNegativeNumber);
        cmd.add_option("--size", o.size, "Payload bytes per message")
            ->capture_default_str()
            ->check(CLI::Range(1, 4 * 1024 * 1024));
        cmd.add_option("--max-pending", o.max_pending,
                       "Messages in flight per producer (sent or batched, not yet receipted)")
            ->capture_default_str()
            ->check(CLI::Range(1, 1000000));
        cmd.add_option("--batch-max-messages", o.batch_max_messages,
                       "Messages per batch (0 or 1 = no batching)")
            ->capture_default_str()
            ->check(CLI::Range(0, 100000));
        cmd.add_option("--batch-delay-ms", o.batch_delay_ms,
                       "A batch is sent at the latest this long after its first message")
            ->capture_default_str()
            ->check(CLI::Range(0.0, 10000.0));
        cmd.add_option("--batch-max-bytes", o.batch_max_bytes,
                       "A batch is sent before its payload would exceed this many bytes")
            ->capture_default_str()
            ->check(CLI::Range(1024, 5 * 1024 * 1024 - 64 * 1024));
        cmd.add_flag("--no-batching", o.no_batching, "One SEND per message");
        cmd.add_option("--producers", o.producers, "Producers per topic")
            ->capture_default_str()
            ->check(CLI::Range(1, 1000));
        cmd.add_flag("--consume", o.consume,
                     "Also consume in this process (end-to-end latency, every message checked)");
        cmd.add_flag("--consumer-thread,!--no-consumer-thread", o.consumer_thread,
                     "With --consume: run the consumers on a thread of their own, so that "
                     "receiving never delays a send or a receipt (as a separate consuming "
                     "application; bench/'s peer load generators do the same)")
            ->capture_default_str();
        cmd.add_option("--raw-baseline", o.raw_baseline_dir,
                       "Directory on the broker's --data-dir file system: measure the raw "
                       "group-commit fdatasync ceiling there (same record size, group = "
                       "--max-pending) before and after the run")
            ->capture_default_str();
        cmd.add_option("--raw-seconds", o.raw_seconds, "Seconds per raw baseline measurement")
            ->capture_default_str()
            ->check(CLI::Range(0.1, 60.0));
    }
}

std::optional<endpoint> parse_service_url(std::string_view url) {
    constexpr std::string_view scheme = "pulsar://";
    if (url.substr(0, scheme.size()) != scheme) {
        return std::nullopt;
    }
    url.remove_prefix(scheme.size());
    while (!url.empty() && url.back() == '/') {
        url.remove_suffix(1);
    }
    endpoint ep;
    const auto colon = url.rfind(':');
    if (colon == std::string_view::npos) {
        ep.host = std::string(url);
    } else {
        ep.host = std::string(url.substr(0, colon));
        const auto port = url.substr(colon + 1);
        unsigned value = 0;
        const auto [p, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
        if (ec != std::errc{} || p != port.data() + port.size() || value == 0 || value > 65535) {
            return std::nullopt;
        }
        ep.port = static_cast<std::uint16_t>(value);
    }
    if (ep.host.empty() || ep.host.find_first_of("/,") != std::string::npos) {
        return std::nullopt;
    }
    return ep;
}

std::string full_topic_name(std::string_view name) {
    if (name.find("://") != std::string_view::npos) {
        return std::string(name);
    }
    if (name.find('/') != std::string_view::npos) {
        return fmt::format("persistent://{}", name);
    }
    return fmt::format("persistent://public/default/{}", name);
}

std::optional<std::string> finalize(perf_options& o) {
    auto ep = parse_service_url(o.service_url);
    if (!ep) {
        return fmt::format("--service-url: expected pulsar://host:port, got '{}'", o.service_url);
    }
    o.service = *ep;

    o.topic_names.clear();
    if (o.topics.size() == 1 && all_digits(o.topics.front())) {
        unsigned n = 0;
        const auto& t = o.topics.front();
        const auto [p, ec] = std::from_chars(t.data(), t.data() + t.size(), n);
        if (ec != std::errc{} || n < 1 || n > 100000) {
            return fmt::format("--topics: a count must be 1..100000, got '{}'", t);
        }
        for (unsigned i = 0; i < n; ++i) {
            o.topic_names.push_back(full_topic_name(fmt::format("perf-{}", i)));
        }
    } else {
        for (const auto& t : o.topics) {
            if (t.empty()) {
                return std::string("--topics: empty topic name");
            }
            o.topic_names.push_back(full_topic_name(t));
        }
        if (o.topic_names.empty()) {
            return std::string("--topics: no topic");
        }
    }

    static constexpr std::string_view types[] = {"Exclusive", "Shared", "Failover", "Key_Shared"};
    const auto* it = std::find(std::begin(types), std::end(types), o.subscription_type);
    if (it == std::end(types)) {
        return fmt::format(
            "--subscription-type: expected Exclusive, Shared, Failover or "
            "Key_Shared, got '{}'",
            o.subscription_type);
    }
    o.sub_type = static_cast<std::int32_t>(it - std::begin(types));
    if (o.subscription_position == "Latest") {
        o.initial_position = 0;
    } else if (o.subscription_position == "Earliest") {
        o.initial_position = 1;
    } else {
        return fmt::format("--subscription-position: expected Latest or Earliest, got '{}'",
                           o.subscription_position);
    }
    if (o.ack == "individual") {
        o.ack_kind = ack_mode::individual;
    } else if (o.ack == "cumulative") {
        o.ack_kind = ack_mode::cumulative;
    } else {
        return fmt::format("--ack: expected individual or cumulative, got '{}'", o.ack);
    }
    if (o.subscription.empty()) {
        return std::string("--subscription: empty name");
    }
    const bool consuming = o.mode == perf_mode::consume || o.consume;
    if (consuming) {
        if (o.sub_type == 0 && o.consumers > 1) {
            return std::string(
                "--consumers > 1 on an Exclusive subscription: the broker admits one consumer "
                "(use --subscription-type Shared, Failover or Key_Shared)");
        }
        if (o.ack_kind == ack_mode::cumulative && (o.sub_type == 1 || o.sub_type == 3)) {
            return std::string(
                "--ack cumulative is not allowed on Shared and Key_Shared subscriptions");
        }
    }
    if (o.mode == perf_mode::produce) {
        if (static_cast<std::uint64_t>(o.producers) * o.topic_names.size() > 100000) {
            return std::string("--producers x topics must be at most 100000");
        }
    }
    if (consuming && static_cast<std::uint64_t>(o.consumers) * o.topic_names.size() > 100000) {
        return std::string("--consumers x topics must be at most 100000");
    }
    return std::nullopt;
}

}  // namespace nereus::app::perf
