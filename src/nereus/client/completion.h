#pragma once

// How the client's asynchronous operations complete (Asio's universal model).
//
// Every asynchronous member function takes an Asio completion token as its last argument and
// completes with the signature void(result<T>): the value, or the error as a std::error_code
// (see errc.h). Any token works:
//
//   auto r = co_await p.send(m, asio::use_awaitable);            // r is result<message_id>
//   auto f = p.send(m, asio::use_future);  f.get();              // std::future<result<...>>
//   p.send(m, [](nereus::result<message_id> r) { ... });         // a callback
//
// The initiation is thread-safe: it may be called from any thread. The work runs on the
// client's executor; the completion handler is invoked through its associated executor (for
// use_awaitable: the awaiting coroutine's), or, when it has none, on one of the client's
// threads — such a callback must not block.
// Allocation: the type-erased handler (asio::any_completion_handler) allocates once per call.

#include "nereus/base/result.h"

#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/async_result.hpp>

namespace nereus::client {

namespace asio = boost::asio;

namespace detail {
template <class T>
using handler = asio::any_completion_handler<void(result<T>)>;
}  // namespace detail

}  // namespace nereus::client
