#pragma once

// The one mapping from an internal error to the admin API's HTTP status and reason, as
// Pulsar's REST API answers: not found 404, conflicts 409, refused preconditions 412, bad
// input 400, unavailable 503, anything else 500.
// Thread-safety: pure functions.

#include "nereus/admin/http_message.h"

#include <string_view>
#include <system_error>

namespace nereus::admin {

unsigned http_status_of(const std::error_code& ec) noexcept;
// error_response(http_status_of(ec), reason or a default text for ec).
http_response error_from(const std::error_code& ec, std::string_view reason = {});

}  // namespace nereus::admin
