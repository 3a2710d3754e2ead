#pragma once

// The client module's logger (style R9). Thread-safety: thread-safe.

#include "nereus/base/logger.h"

namespace nereus::client::detail {

inline spdlog::logger& client_log() {
    static auto l = nereus::make_logger("client");
    return *l;
}

}  // namespace nereus::client::detail
