#pragma once

// Per-module loggers (style R9). Each module declares one, e.g. in storage/logger.h:
//     inline spdlog::logger& storage_log() { static auto l = nereus::make_logger("storage"); return
//     *l; }
// and logs with NEREUS_LOG(storage_log(), info, "segment rolled stream={} base={}", id, base);
// The macro adds file:line and skips argument evaluation when the level is off.
// Thread-safety: thread-safe (spdlog's multi-threaded sinks).

#include <spdlog/spdlog.h>

#include <memory>
#include <string>

namespace nereus {

// Creates (or returns the already registered) logger `name`, writing to stderr.
// The level comes from NEREUS_LOG_LEVEL (trace|debug|info|warn|error|off), default info.
std::shared_ptr<spdlog::logger> make_logger(const std::string& name);

}  // namespace nereus

#define NEREUS_LOG(logger, lvl, ...)                                                              \
    do {                                                                                          \
        auto& nereus_log_l_ = (logger);                                                           \
        if (nereus_log_l_.should_log(::spdlog::level::lvl)) {                                     \
            nereus_log_l_.log(::spdlog::source_loc{__FILE__, __LINE__, ""}, ::spdlog::level::lvl, \
                              __VA_ARGS__);                                                       \
        }                                                                                         \
    } while (false)
