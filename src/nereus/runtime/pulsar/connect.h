#pragma once

// How an application mounts a runtime on a Pulsar-protocol broker:
//
//   boost::asio::io_context io;
//   auto t = nereus::runtime::pulsar::connect(io.get_executor(),
//                                             {.service_url = "pulsar://127.0.0.1:6650"});
//   if (!t) { /* t.error(): a URL that is not pulsar://host[:port] */ }
//   auto clk = nereus::runtime::clock::real(io.get_executor());
//   nereus::runtime::runtime rt(io.get_executor(), std::move(*t), clk);
//
// The connection is opened lazily (by the first subscription or publish, from start()); a
// broker that cannot be reached fails start() or the publish with the client's error.
// Thread-safety: call from the thread that runs (or will run) the executor.

#include "nereus/base/result.h"
#include "nereus/runtime/pulsar/client_handle.h"
#include "nereus/runtime/transport.h"

#include <boost/asio/any_io_executor.hpp>

namespace nereus::runtime::pulsar {

[[nodiscard]] result<transport> connect(const boost::asio::any_io_executor& ex, options o = {});

}  // namespace nereus::runtime::pulsar
