#include "nereus/runtime/transport.h"

#include "nereus/runtime/errc.h"

#if NEREUS_TESTING
#include "nereus/runtime/testing/test_broker.h"
#endif

namespace nereus::runtime {

namespace asio = boost::asio;

#if !NEREUS_TESTING && NEREUS_RUNTIME_HAS_CLIENT
// A production build: the broker's transport is exactly the client handle.
static_assert(sizeof(transport) == sizeof(pulsar::client_handle),
              "in a production build the transport is exactly the client handle");
#endif

#if NEREUS_RUNTIME_HAS_CLIENT
transport::transport(pulsar::client_handle client) : impl_(std::move(client)) {}
#endif

#if NEREUS_TESTING
transport::transport(std::shared_ptr<testing::test_connection> connection)
    : impl_(std::move(connection)) {}
#endif

#if NEREUS_TESTING
namespace {
template <class T>
const std::shared_ptr<testing::test_connection>* as_test(const T& impl) {
    return std::get_if<std::shared_ptr<testing::test_connection>>(&impl);
}
}  // namespace
#endif

asio::awaitable<result<std::unique_ptr<consumer_port>>> transport::subscribe(
    const asio::any_io_executor& ex, const subscriber_spec& spec, std::string consumer_name) {
#if NEREUS_TESTING
    if (const auto* t = as_test(impl_)) {
        const auto& c = **t;
        co_return c.broker()->subscribe(ex, spec, std::move(consumer_name), c.closed());
    }
#endif
#if NEREUS_RUNTIME_HAS_CLIENT
#if NEREUS_TESTING
    co_return co_await pulsar::subscribe(std::get<pulsar::client_handle>(impl_), ex, spec,
                                         std::move(consumer_name));
#else
    co_return co_await pulsar::subscribe(impl_, ex, spec, std::move(consumer_name));
#endif
#else
    (void)ex;
    (void)spec;
    (void)consumer_name;
    co_return error(errc::unsupported);
#endif
}

asio::awaitable<result<std::unique_ptr<producer_port>>> transport::create_producer(
    const asio::any_io_executor& ex, std::string topic) {
#if NEREUS_TESTING
    if (const auto* t = as_test(impl_)) {
        const auto& c = **t;
        if (*c.closed())
            co_return error(errc::shut_down);
        co_return testing::make_test_producer(c.broker(), c.closed(), std::move(topic));
    }
#endif
#if NEREUS_RUNTIME_HAS_CLIENT
#if NEREUS_TESTING
    co_return co_await pulsar::create_producer(std::get<pulsar::client_handle>(impl_), ex,
                                               std::move(topic));
#else
    co_return co_await pulsar::create_producer(impl_, ex, std::move(topic));
#endif
#else
    (void)ex;
    (void)topic;
    co_return error(errc::unsupported);
#endif
}

std::size_t transport::max_message_size() const {
#if NEREUS_TESTING
    if (const auto* t = as_test(impl_))
        return (*t)->broker()->settings().max_message_size;
#endif
#if NEREUS_RUNTIME_HAS_CLIENT
#if NEREUS_TESTING
    return pulsar::max_message_size(std::get<pulsar::client_handle>(impl_));
#else
    return pulsar::max_message_size(impl_);
#endif
#else
    return 0;
#endif
}

asio::awaitable<void> transport::shutdown() {
#if NEREUS_TESTING
    if (const auto* t = as_test(impl_)) {
        (*t)->shutdown();
        co_return;
    }
#endif
#if NEREUS_RUNTIME_HAS_CLIENT
#if NEREUS_TESTING
    co_await pulsar::shutdown(std::get<pulsar::client_handle>(impl_));
#else
    co_await pulsar::shutdown(impl_);
#endif
#endif
    co_return;
}

}  // namespace nereus::runtime
