#pragma once

// How the client's errors (nereus::client::errc and the broker's ServerErrors) appear to the
// runtime: the refusals every transport reports alike become the runtime's codes
// (message_too_large, consumer_busy, shut_down, topic_not_found); any other error keeps the
// client's code (timeout, disconnected, ...), so it still says what happened.
// Thread-safety: a pure function.

#include <system_error>

namespace nereus::runtime::pulsar {

[[nodiscard]] std::error_code from_client(const std::error_code& ec);

}  // namespace nereus::runtime::pulsar
