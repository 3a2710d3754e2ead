#include "nereus/runtime/pulsar/client_handle.h"

#include "nereus/client/errc.h"
#include "nereus/runtime/errc.h"
#include "nereus/runtime/pulsar/consumer.h"
#include "nereus/runtime/pulsar/errors.h"
#include "nereus/runtime/pulsar/pattern.h"
#include "nereus/runtime/pulsar/producer.h"

#include <boost/asio/use_awaitable.hpp>

namespace nereus::runtime::pulsar {

namespace asio = boost::asio;
namespace nc = nereus::client;

struct client_handle::state {
    state(nc::client c, options o) : client(std::move(c)), settings(std::move(o)) {}
    nc::client client;
    options settings;
};

result<client_handle> client_handle::make(const asio::any_io_executor& ex, options o) {
    constexpr std::string_view scheme = "pulsar://";
    if (!std::string_view(o.service_url).starts_with(scheme) ||
        o.service_url.size() == scheme.size()) {
        return error(nc::errc::invalid_argument);
    }
    auto co = o.client;
    co.service_url = o.service_url;
    return client_handle(std::make_shared<state>(nc::client(ex, std::move(co)), std::move(o)));
}

const nc::client& client_handle::client() const {
    return s_->client;
}
const options& client_handle::settings() const {
    return s_->settings;
}

namespace {

nc::subscription_type to_client(subscription_type t) {
    switch (t) {
        case subscription_type::exclusive:
            return nc::subscription_type::exclusive;
        case subscription_type::shared:
            return nc::subscription_type::shared;
        case subscription_type::failover:
            return nc::subscription_type::failover;
        case subscription_type::key_shared:
            return nc::subscription_type::key_shared;
    }
    return nc::subscription_type::exclusive;
}

}  // namespace

asio::awaitable<result<std::unique_ptr<consumer_port>>> subscribe(const client_handle& c,
                                                                  const asio::any_io_executor& ex,
                                                                  const subscriber_spec& spec,
                                                                  std::string consumer_name) {
    if (auto v = validate(spec); !v)
        co_return error(v.error());
    nc::consumer_options o;
    if (spec.topics.of == topic_selector::kind::pattern) {
        // The client lists the namespace, subscribes to what matches (possibly nothing yet) and
        // keeps listing it: topics created later join the same consumer (the driver's).
        if (auto ns = pattern_namespace(spec.topics.pattern); !ns)
            co_return error(ns.error());
        o.topics_pattern = spec.topics.pattern;
        o.pattern_auto_discovery_period = c.settings().pattern_auto_discovery_period;
    } else {
        for (const auto& n : spec.topics.names)
            o.topics.push_back(full_topic_name(n));
    }
    o.subscription = spec.subscription;
    o.type = to_client(spec.type);
    o.consumer_name = std::move(consumer_name);
    o.start = spec.initial == initial_position::earliest ? nc::initial_position::earliest
                                                         : nc::initial_position::latest;
    o.receiver_queue_size = c.settings().receiver_queue_size;
    o.ack_timeout = spec.ack_timeout;
    // Retries are confirmed redeliveries (consumer::redeliver), never the delayed nack; the
    // dead-letter policy is the runtime's own (driver.h), so the client's stays off.
    o.nack_redelivery_delay = std::chrono::milliseconds(0);
    auto r = co_await c.client().subscribe(o, asio::use_awaitable);
    if (!r)
        co_return error(from_client(r.error()));
    co_return make_consumer_port(ex, std::move(*r), spec.type);
}

asio::awaitable<result<std::unique_ptr<producer_port>>> create_producer(
    const client_handle& c, const asio::any_io_executor& ex, std::string topic) {
    (void)ex;
    const auto& s = c.settings();
    nc::producer_options o;
    o.topic = std::move(topic);
    o.batching = s.producer_batching;
    o.batch_max_delay = s.batch_max_delay;
    o.compression = s.compression;
    o.send_timeout = s.send_timeout;
    auto r = co_await c.client().create_producer(o, asio::use_awaitable);
    if (!r)
        co_return error(from_client(r.error()));
    co_return make_producer_port(std::move(*r));
}

std::size_t max_message_size(const client_handle& c) {
    if (auto learnt = c.client().max_message_size())
        return *learnt;
    return c.settings().max_message_size;
}

asio::awaitable<void> shutdown(const client_handle& c) {
    (void)co_await c.client().async_close(asio::use_awaitable);
}

}  // namespace nereus::runtime::pulsar
