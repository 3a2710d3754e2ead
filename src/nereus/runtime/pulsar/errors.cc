#include "nereus/runtime/pulsar/errors.h"

#include "nereus/client/errc.h"
#include "nereus/runtime/errc.h"

namespace nereus::runtime::pulsar {

namespace nc = nereus::client;

std::error_code from_client(const std::error_code& ec) {
    if (ec == nc::errc::message_too_big)
        return make_error_code(errc::message_too_large);
    if (ec == nc::errc::closed)
        return make_error_code(errc::shut_down);
    if (nc::is_broker_error(ec, nc::broker_errors::consumer_busy)) {
        return make_error_code(errc::consumer_busy);
    }
    if (nc::is_broker_error(ec, nc::broker_errors::topic_not_found)) {
        return make_error_code(errc::topic_not_found);
    }
    return ec;
}

}  // namespace nereus::runtime::pulsar
