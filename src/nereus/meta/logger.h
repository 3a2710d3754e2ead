#pragma once

// The meta module's logger (style R9): NEREUS_LOG(meta_log(), info, "...", ...).
// Thread-safety: thread-safe.

#include "nereus/base/logger.h"

namespace nereus::meta {

inline spdlog::logger& meta_log() {
    static auto logger = nereus::make_logger("meta");
    return *logger;
}

}  // namespace nereus::meta
