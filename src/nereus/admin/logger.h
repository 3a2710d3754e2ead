#pragma once

// The admin module's logger (style R9).
// Thread-safety: thread-safe.

#include "nereus/base/logger.h"

namespace nereus::admin {

inline spdlog::logger& admin_log() {
    static auto l = nereus::make_logger("admin");
    return *l;
}

}  // namespace nereus::admin
