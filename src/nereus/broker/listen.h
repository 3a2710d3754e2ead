#pragma once

// Opens a TCP listener the way every Nereus server does (binary protocol, admin HTTP): parse
// the address, open, SO_REUSEADDR (a restart right after a SIGKILL binds the same port), bind,
// listen with the system's backlog. Port 0 picks a free port (read it from
// acceptor.local_endpoint()). On failure the acceptor may be left open; the caller discards it.
// Thread-safety: call before the acceptor is shared.

#include "nereus/base/result.h"

#include <boost/asio/ip/tcp.hpp>
#include <cstdint>
#include <string>

namespace nereus::broker {

[[nodiscard]] result<void> listen_on(boost::asio::ip::tcp::acceptor& acceptor,
                                     const std::string& bind_address,
                                     std::uint16_t port);

}  // namespace nereus::broker
