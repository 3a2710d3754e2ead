#pragma once

// The runtime's clock: what retry_after delays, batch lingers and drain timeouts wait on, and
// (on the test transport) what publish times are stamped from.
//
// real    - steady timers for waits, the system clock for now().
// manual  - virtual time that moves only when advance() is called: a sleeper whose deadline is
//           reached wakes during advance(), never before, so "not redelivered at t < d, exactly
//           once at t >= d" is decided without sleeping.
//
// Ownership: owned by whoever builds the runtime (test_app, or the service's main); outlives the
// runtime. Thread-safety: strand-confined to the runtime's executor.

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstddef>
#include <map>

namespace nereus::runtime {

class clock {
public:
    using duration = std::chrono::milliseconds;
    using time_point = std::chrono::milliseconds;  // since the Unix epoch

    // A clock on real time.
    static clock real(boost::asio::any_io_executor ex) { return clock(std::move(ex), false, {}); }
    // A virtual clock starting at `start` (default 2023-11-14T22:13:20Z).
    static clock manual(boost::asio::any_io_executor ex,
                        time_point start = time_point{1'700'000'000'000}) {
        return clock(std::move(ex), true, start);
    }
    clock(clock&&) = default;
    clock(const clock&) = delete;
    clock& operator=(const clock&) = delete;

    [[nodiscard]] bool is_virtual() const { return virtual_; }
    [[nodiscard]] time_point now() const;

    // Waits `d`. Returns true when the time passed, false when cancel(owner) or cancel_all()
    // ended the wait. `owner` tags the wait (the runtime tags its own holds with itself, so a
    // shutdown ends them and not the handlers' own sleeps).
    boost::asio::awaitable<bool> sleep(duration d, const void* owner = nullptr);

    // Virtual clocks only: moves time forward by `d` and wakes every sleeper whose deadline is
    // now reached (they resume when the executor next runs).
    void advance(duration d);
    // Ends every pending sleep tagged `owner` with false.
    void cancel(const void* owner);
    // Ends every pending sleep with false.
    void cancel_all();
    [[nodiscard]] std::size_t sleepers() const { return waiters_.size(); }

private:
    struct waiter {
        boost::asio::steady_timer timer;
        bool fired = false;
        const void* owner = nullptr;
    };
    clock(boost::asio::any_io_executor ex, bool v, time_point start)
        : ex_(std::move(ex)), virtual_(v), now_(start) {}

    boost::asio::any_io_executor ex_;
    bool virtual_;
    time_point now_;
    std::multimap<time_point, waiter*> waiters_;
};

}  // namespace nereus::runtime
