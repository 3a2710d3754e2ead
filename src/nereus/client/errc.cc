#include "nereus/client/errc.h"

#include "nereus/proto/server_error.h"

#include <string>

namespace nereus::client {

namespace {

class client_category_impl final : public std::error_category {
public:
    const char* name() const noexcept override { return "nereus.client"; }
    std::string message(int ev) const override {
        switch (static_cast<errc>(ev)) {
            case errc::success:
                return "success";
            case errc::timeout:
                return "operation timed out";
            case errc::disconnected:
                return "connection to the broker lost";
            case errc::closed:
                return "already closed";
            case errc::producer_queue_full:
                return "producer pending queue is full";
            case errc::lookup_failed:
                return "topic lookup failed";
            case errc::invalid_argument:
                return "invalid argument";
            case errc::message_too_big:
                return "message too big";
            case errc::protocol_error:
                return "protocol error from the broker";
            case errc::connect_failed:
                return "cannot connect to the broker";
            case errc::not_supported:
                return "not supported by the broker";
            case errc::unacked_id:
                return "message id not delivered to this consumer";
        }
        return "unknown nereus.client error " + std::to_string(ev);
    }
};

class broker_category_impl final : public std::error_category {
public:
    const char* name() const noexcept override { return "pulsar.server_error"; }
    std::string message(int ev) const override {
        return std::string(proto::to_string(static_cast<proto::server_error>(ev)));
    }
};

}  // namespace

const std::error_category& client_category() noexcept {
    static const client_category_impl c;
    return c;
}

const std::error_category& broker_category() noexcept {
    static const broker_category_impl c;
    return c;
}

}  // namespace nereus::client
