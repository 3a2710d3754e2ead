#pragma once

// The storage module's logger (style R9): NEREUS_LOG(storage_log(), info, "...", ...).
// Thread-safety: thread-safe.

#include "nereus/base/logger.h"

namespace nereus::storage {

inline spdlog::logger& storage_log() {
    static const auto l = nereus::make_logger("storage");
    return *l;
}

}  // namespace nereus::storage
