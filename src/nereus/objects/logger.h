#pragma once

// The objects module's logger (style R9): NEREUS_LOG(objects_log(), warn, "...", ...).
// Thread-safety: thread-safe.

#include "nereus/base/logger.h"

namespace nereus::objects {

inline spdlog::logger& objects_log() {
    static const auto logger = nereus::make_logger("objects");
    return *logger;
}

}  // namespace nereus::objects
