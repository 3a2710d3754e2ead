#pragma once

// The broker module's logger (style R9).
// Thread-safety: thread-safe.

#include "nereus/base/logger.h"

namespace nereus::broker {

inline spdlog::logger& broker_log() {
    static auto l = nereus::make_logger("broker");
    return *l;
}

}  // namespace nereus::broker
