#pragma once

// The runtime module's logger (style R9). Thread-safety: thread-safe.

#include "nereus/base/logger.h"

namespace nereus::runtime {

inline spdlog::logger& runtime_log() {
    static auto l = nereus::make_logger("runtime");
    return *l;
}

}  // namespace nereus::runtime
