#pragma once

// The Pulsar binding's connection: what a production transport is (transport.h). A connected
// broker holds one nereus::client::client; every publisher of the connection shares it and its
// producers (one per topic, producer_pool), and each subscription opens one client consumer
// that its driver owns (driver.h, pulsar/consumer.h).
//
// How an application makes a runtime over a pulsar:// URL (pulsar/connect.h):
//
//   auto t = nereus::runtime::pulsar::connect(io.get_executor(), {.service_url = url});
//   if (!t) ...;                                   // a bad URL: errc::unsupported / the client's
//   nereus::runtime::runtime rt(io.get_executor(), std::move(*t), clk);
//
// Ownership: client_handle is a cheap handle, exactly one shared_ptr (static_assert below, so a
// production transport is exactly one pointer too); copies share the client and the settings.
// Thread-safety: the handle is strand-confined to the runtime's executor like the runtime; the
// client it wraps is thread-safe and runs on a strand of the same executor.
// Durability: nothing is stored here; every operation the ports (ports.h) offer completes on the
// broker's answer (*confirmed*).

#include "nereus/base/result.h"
#include "nereus/client/client.h"
#include "nereus/runtime/ports.h"
#include "nereus/runtime/spec.h"

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace nereus::runtime::pulsar {

// Settings of one binding (one client connection).
struct options {
    std::string service_url = "pulsar://127.0.0.1:6650";
    // Timeouts, keep-alive, reconnect backoff of the client (its service_url is replaced by the
    // one above).
    nereus::client::client_options client{};
    // FLOW permits per topic partition: how many messages the broker may push ahead of the
    // driver (the channel of 16 then bounds what reaches the runtime).
    std::uint32_t receiver_queue_size = 100;
    // Producers: batching is off by default, so a message is one entry and a nack redelivers
    // exactly that message (with batching on, a redelivery is per entry: Pulsar trap #5891).
    bool producer_batching = false;
    std::chrono::microseconds batch_max_delay{1'000};
    nereus::client::compression_type compression = nereus::client::compression_type::none;
    std::chrono::milliseconds send_timeout{30'000};
    // What max_message_size() reports before the client learnt the broker's own value; once a
    // connection is open it reports what the broker announced in CONNECTED (the client refuses
    // a bigger payload with errc::message_too_large before sending it).
    std::size_t max_message_size = 5 * 1024 * 1024;
    // Pattern subscriptions: how often the client lists the namespace again to subscribe to
    // topics created after the subscription started (and to close those no longer listed).
    // Java's patternAutoDiscoveryPeriod, 1 minute.
    std::chrono::milliseconds pattern_auto_discovery_period{60'000};
};

class client_handle {
public:
    // A client on `ex` (a strand of it) for `o.service_url`. errc::unsupported for a URL that is
    // not pulsar://host[:port].
    static result<client_handle> make(const boost::asio::any_io_executor& ex, options o);

    [[nodiscard]] const nereus::client::client& client() const;
    [[nodiscard]] const options& settings() const;

    struct state;  // the client and the settings (client_handle.cc)

private:
    explicit client_handle(std::shared_ptr<state> s) : s_(std::move(s)) {}
    std::shared_ptr<state> s_;
};

static_assert(sizeof(client_handle) == sizeof(std::shared_ptr<client_handle::state>),
              "a client handle is exactly one pointer");

// --- what transport.cc calls ---

// One client consumer for the subscription `spec` declares (a topic, a list, or a pattern the
// client resolves with GET_TOPICS_OF_NAMESPACE when it is opened and again every
// pattern_auto_discovery_period, adding topics created later; no matching topic yet is fine),
// wrapped as the driver's port.
boost::asio::awaitable<result<std::unique_ptr<consumer_port>>> subscribe(
    const client_handle& c,
    const boost::asio::any_io_executor& ex,
    const subscriber_spec& spec,
    std::string consumer_name);
// One client producer on `topic`.
boost::asio::awaitable<result<std::unique_ptr<producer_port>>> create_producer(
    const client_handle& c, const boost::asio::any_io_executor& ex, std::string topic);
// The broker's max_message_size as the client learnt it from CONNECTED; options::
// max_message_size before any connection.
[[nodiscard]] std::size_t max_message_size(const client_handle& c);
// Closes the client (every producer and consumer, then the connections); afterwards every
// handle of it is refused (errc::shut_down).
boost::asio::awaitable<void> shutdown(const client_handle& c);

}  // namespace nereus::runtime::pulsar
