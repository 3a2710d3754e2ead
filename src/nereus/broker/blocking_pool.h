#pragma once

// The broker's bounded pool for blocking storage / metadata calls (opening a topic, creating,
// deleting or seeking a subscription, cursor reads of the dispatcher), so a slow disk never
// stalls an io thread. Callers post a job and get their completion back on their own executor
// (the connection's strand, the io executor for dispatch); see doc/broker.md, "Threads and
// strands".
//
// Ownership: owned by the server; outlives every topic, subscription and connection using it.
// Thread-safety: post() and in_flight() are thread-safe; drain() and stop() are called from the
//   controlling thread only (server::stop).
// Durability: none of its own; the jobs' storage calls state theirs (topic_backend.h).

#include <atomic>
#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>
#include <chrono>
#include <cstddef>
#include <utility>

namespace nereus::broker {

class blocking_pool {
public:
    explicit blocking_pool(unsigned threads) : pool_(threads == 0 ? 1 : threads) {}
    blocking_pool(const blocking_pool&) = delete;
    blocking_pool& operator=(const blocking_pool&) = delete;
    ~blocking_pool() { stop(); }

    // Runs `job` on a pool thread. The job must not throw.
    template <class F>
    void post(F&& job) {
        in_flight_.fetch_add(1);
        boost::asio::post(pool_, [this, job = std::forward<F>(job)]() mutable {
            name_thread();
            job();
            in_flight_.fetch_sub(1);
        });
    }

    // Jobs posted and not yet finished.
    std::size_t in_flight() const { return in_flight_.load(); }

    // Waits until no job is queued or running, or until `until`. True when drained.
    bool drain(std::chrono::steady_clock::time_point until);

    // Drops queued jobs and joins the threads (a running job finishes first). Idempotent.
    void stop();

private:
    // Names a pool thread "nereus-pool" on its first job (asio::thread_pool starts the threads).
    static void name_thread() noexcept;

    boost::asio::thread_pool pool_;
    std::atomic<std::size_t> in_flight_{0};
    bool stopped_ = false;
};

}  // namespace nereus::broker
