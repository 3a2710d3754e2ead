#include "nereus/broker/listen.h"

namespace nereus::broker {

result<void> listen_on(boost::asio::ip::tcp::acceptor& acceptor,
                       const std::string& bind_address,
                       std::uint16_t port) {
    namespace asio = boost::asio;
    using tcp = asio::ip::tcp;
    boost::system::error_code ec;
    const auto addr = asio::ip::make_address(bind_address, ec);
    if (ec) {
        return nereus::error(std::error_code(ec.value(), std::generic_category()));
    }
    const tcp::endpoint ep(addr, port);
    acceptor.open(ep.protocol(), ec);
    if (!ec) {
        acceptor.set_option(tcp::acceptor::reuse_address(true), ec);
    }
    if (!ec) {
        acceptor.bind(ep, ec);
    }
    if (!ec) {
        acceptor.listen(asio::socket_base::max_listen_connections, ec);
    }
    if (ec) {
        return nereus::error(std::error_code(ec.value(), std::system_category()));
    }
    return {};
}

}  // namespace nereus::broker
