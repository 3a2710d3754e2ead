#include "nereus/runtime/clock.h"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <vector>

namespace nereus::runtime {

namespace asio = boost::asio;

clock::time_point clock::now() const {
    if (virtual_) {
        return now_;
    }
    return std::chrono::duration_cast<time_point>(
        std::chrono::system_clock::now().time_since_epoch());
}

asio::awaitable<bool> clock::sleep(duration d, const void* owner) {
    waiter w{asio::steady_timer(ex_), false, owner};
    if (virtual_) {
        if (d.count() <= 0) {
            co_return true;
        }
        w.timer.expires_at(asio::steady_timer::time_point::max());
    } else {
        w.timer.expires_after(d);
    }
    const auto it = waiters_.emplace(now() + d, &w);
    auto [ec] = co_await w.timer.async_wait(asio::as_tuple(asio::use_awaitable));
    waiters_.erase(it);
    if (!virtual_ && !ec) {
        co_return true;
    }
    co_return w.fired;
}

void clock::advance(duration d) {
    if (!virtual_) {
        return;
    }
    now_ += d;
    for (auto it = waiters_.begin(); it != waiters_.end() && it->first <= now_; ++it) {
        if (!it->second->fired) {
            it->second->fired = true;
            it->second->timer.cancel();
        }
    }
}

void clock::cancel(const void* owner) {
    for (auto& [t, w] : waiters_) {
        if (w->owner == owner)
            w->timer.cancel();
    }
}

void clock::cancel_all() {
    for (auto& [t, w] : waiters_) {
        w->timer.cancel();
    }
}

}  // namespace nereus::runtime
