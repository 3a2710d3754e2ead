#pragma once

// The cursor module's logger (style R9): NEREUS_LOG(cursor_log(), info, "...", ...).
// Thread-safety: thread-safe.

#include "nereus/base/logger.h"

namespace nereus::cursor {

inline spdlog::logger& cursor_log() {
    static auto logger = nereus::make_logger("cursor");
    return *logger;
}

}  // namespace nereus::cursor
