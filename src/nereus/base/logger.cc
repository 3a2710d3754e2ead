#include "nereus/base/logger.h"

#include <spdlog/sinks/stdout_color_sinks.h>

#include <cstdlib>
#include <mutex>

namespace nereus {

std::shared_ptr<spdlog::logger> make_logger(const std::string& name) {
    static std::mutex mu;
    const std::lock_guard lock(mu);
    if (auto existing = spdlog::get(name)) {
        return existing;
    }
    auto logger = spdlog::stderr_color_mt(name);
    const char* env = std::getenv("NEREUS_LOG_LEVEL");
    logger->set_level(env != nullptr ? spdlog::level::from_str(env) : spdlog::level::info);
    logger->set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%l%$ [%n] %v (%s:%#)");
    return logger;
}

}  // namespace nereus
