#include "nereus/broker/blocking_pool.h"

#include "nereus/base/thread_name.h"

#include <thread>

namespace nereus::broker {

bool blocking_pool::drain(std::chrono::steady_clock::time_point until) {
    while (in_flight_.load() != 0) {
        if (std::chrono::steady_clock::now() >= until) {
            return false;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    return true;
}

void blocking_pool::name_thread() noexcept {
    thread_local bool named = false;
    if (!named) {
        named = true;
        set_thread_name("nereus-pool");
    }
}

void blocking_pool::stop() {
    if (stopped_) {
        return;
    }
    stopped_ = true;
    pool_.stop();
    pool_.join();
}

}  // namespace nereus::broker
