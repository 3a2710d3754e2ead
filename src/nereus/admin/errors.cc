#include "nereus/admin/errors.h"

#include "nereus/proto/server_error.h"

namespace nereus::admin {

unsigned http_status_of(const std::error_code& ec) noexcept {
    using proto::error_kind;
    if (ec.category() == proto::error_kind_category()) {
        switch (static_cast<error_kind>(ec.value())) {
            case error_kind::topic_not_found:
            case error_kind::subscription_not_found:
            case error_kind::consumer_not_found:
                return 404;
            case error_kind::bad_request:
                return 400;
            case error_kind::invalid_topic_name:
            case error_kind::not_allowed:
            case error_kind::consumer_busy:
            case error_kind::producer_busy:
                return 412;
            case error_kind::not_authenticated:
                return 401;
            case error_kind::not_authorized:
                return 403;
            case error_kind::unavailable:
            case error_kind::too_many_requests:
                return 503;
            default:
                return 500;
        }
    }
    return 500;
}

http_response error_from(const std::error_code& ec, std::string_view reason) {
    using proto::error_kind;
    if (!reason.empty()) {
        return error_response(http_status_of(ec), reason);
    }
    if (ec == error_kind::topic_not_found) {
        return error_response(404, "Topic not found");
    }
    if (ec == error_kind::subscription_not_found) {
        return error_response(404, "Subscription not found");
    }
    if (ec == error_kind::invalid_topic_name) {
        return error_response(412, "Invalid topic name");
    }
    return error_response(http_status_of(ec), ec.message());
}

}  // namespace nereus::admin
