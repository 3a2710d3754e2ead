#include "nereus/cursor/commit_timer.h"

#include <condition_variable>
#include <map>
#include <mutex>
#include <thread>
#include <utility>

namespace nereus::cursor::commit_timer {
namespace {

class timer_thread {
public:
    timer_thread() : thread_([this] { loop(); }) {}
    timer_thread(const timer_thread&) = delete;
    timer_thread& operator=(const timer_thread&) = delete;
    ~timer_thread() {
        {
            const std::lock_guard lock(mu_);
            stop_ = true;
        }
        cv_.notify_one();
        thread_.join();
    }

    void add(clock::time_point at, std::function<void()> task) {
        bool first = false;
        {
            const std::lock_guard lock(mu_);
            first = tasks_.empty() || at < tasks_.begin()->first;
            tasks_.emplace(at, std::move(task));
        }
        if (first) {
            cv_.notify_one();
        }
    }

private:
    void loop() {
        std::unique_lock lock(mu_);
        while (!stop_) {
            if (tasks_.empty()) {
                cv_.wait(lock);
                continue;
            }
            const auto at = tasks_.begin()->first;
            if (clock::now() < at) {
                cv_.wait_until(lock, at);
                continue;
            }
            auto task = std::move(tasks_.begin()->second);
            tasks_.erase(tasks_.begin());
            lock.unlock();
            task();
            task = nullptr;  // release captured handles outside the lock, too
            lock.lock();
        }
    }

    std::mutex mu_;
    std::condition_variable cv_;
    std::multimap<clock::time_point, std::function<void()>> tasks_;  // guarded by mu_
    bool stop_ = false;                                              // guarded by mu_
    std::thread thread_;  // last: started after the members above exist
};

timer_thread& instance() {
    static timer_thread t;
    return t;
}

}  // namespace

void schedule(clock::time_point at, std::function<void()> task) {
    instance().add(at, std::move(task));
}

}  // namespace nereus::cursor::commit_timer
