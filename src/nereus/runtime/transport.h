#pragma once

// The broker connection the runtime is mounted on: it opens one consumer per subscription and
// one producer per topic.
//
// In a production build (NEREUS_TESTING off) a transport is exactly the client handle
// (static_assert in transport.cc); with NEREUS_TESTING it is that or the in-process test broker
// (testing/test_broker.h, one test_connection per transport), which takes the client's place under
// the same descriptors, policies and settings.
//
// Ownership: a transport is a cheap handle; the runtime holds one. Thread-safety: strand-confined
// to the runtime's executor. Durability: see ports.h (everything is confirmed).

#include "nereus/base/result.h"
#include "nereus/runtime/ports.h"
#include "nereus/runtime/spec.h"

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <memory>
#include <string>
#include <variant>

#if NEREUS_RUNTIME_HAS_CLIENT
#include "nereus/runtime/pulsar/client_handle.h"
#endif

namespace nereus::runtime {

#if NEREUS_TESTING
namespace testing {
class test_connection;
}
#endif

class transport {
public:
#if NEREUS_RUNTIME_HAS_CLIENT
    explicit transport(pulsar::client_handle client);
#endif
#if NEREUS_TESTING
    explicit transport(std::shared_ptr<testing::test_connection> connection);
#endif

    // One consumer for the subscription `spec` declares, named `consumer_name`.
    boost::asio::awaitable<result<std::unique_ptr<consumer_port>>> subscribe(
        const boost::asio::any_io_executor& ex,
        const subscriber_spec& spec,
        std::string consumer_name);
    // One producer for `topic` (a full name).
    boost::asio::awaitable<result<std::unique_ptr<producer_port>>> create_producer(
        const boost::asio::any_io_executor& ex, std::string topic);
    // The largest payload the broker accepts.
    [[nodiscard]] std::size_t max_message_size() const;
    // Closes the connection: every handle opened through it is refused afterwards.
    boost::asio::awaitable<void> shutdown();

private:
#if NEREUS_TESTING && NEREUS_RUNTIME_HAS_CLIENT
    std::variant<pulsar::client_handle, std::shared_ptr<testing::test_connection>> impl_;
#elif NEREUS_TESTING
    std::variant<std::shared_ptr<testing::test_connection>> impl_;
#elif NEREUS_RUNTIME_HAS_CLIENT
    pulsar::client_handle impl_;
#endif
};

}  // namespace nereus::runtime
