#pragma once

// The ledger module's logger (style R9): NEREUS_LOG(ledger_log(), info, "...", ...).
// Thread-safety: thread-safe.

#include "nereus/base/logger.h"

namespace nereus::ledger {

inline spdlog::logger& ledger_log() {
    static auto logger = nereus::make_logger("ledger");
    return *logger;
}

}  // namespace nereus::ledger
