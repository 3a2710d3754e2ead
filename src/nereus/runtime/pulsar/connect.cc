#include "nereus/runtime/pulsar/connect.h"

namespace nereus::runtime::pulsar {

result<transport> connect(const boost::asio::any_io_executor& ex, options o) {
    auto h = client_handle::make(ex, std::move(o));
    if (!h)
        return error(h.error());
    return transport(std::move(*h));
}

}  // namespace nereus::runtime::pulsar
