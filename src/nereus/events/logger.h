#pragma once

// The events module's logger (style R9): NEREUS_LOG(events_log(), warn, "...", ...).
// Thread-safety: thread-safe.

#include "nereus/base/logger.h"

namespace nereus::events {

inline spdlog::logger& events_log() {
    static const auto logger = nereus::make_logger("events");
    return *logger;
}

}  // namespace nereus::events
