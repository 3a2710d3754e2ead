#pragma once

// test_env: the in-process world a runtime test runs in (NEREUS_TESTING only) — one
// io_context, a virtual clock, one test_broker, and any number of connections (one per
// runtime: `runtime rt(env.executor(), env.connect(), env.clock())`).
//
// Nothing runs by itself: run_until_idle() runs every ready handler until none is left, and
// advance(d) moves virtual time (waking retry_after holds, batch lingers and drain timeouts whose
// deadline is reached) and then runs until idle. So every test is deterministic and never sleeps.
//
// Ownership: owns the io_context, the clock and the broker. Destroy runtimes (after their
// shutdown) before the env. Thread-safety: thread-compatible (one test thread).

#include "nereus/runtime/clock.h"
#include "nereus/runtime/testing/test_broker.h"
#include "nereus/runtime/transport.h"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <exception>
#include <memory>
#include <optional>

namespace nereus::runtime::testing {

class test_env {
public:
    explicit test_env(broker_settings s = {})
        : clock_(clock::manual(io_.get_executor())),
          broker_(std::make_shared<test_broker>(clock_, s)) {}

    [[nodiscard]] boost::asio::any_io_executor executor() { return io_.get_executor(); }
    [[nodiscard]] boost::asio::io_context& io() { return io_; }
    [[nodiscard]] ::nereus::runtime::clock& clock() { return clock_; }
    [[nodiscard]] const std::shared_ptr<test_broker>& broker() const { return broker_; }
    // A new connection to the broker (what a runtime is mounted on).
    [[nodiscard]] transport connect() {
        return transport(std::make_shared<test_connection>(broker_));
    }

    void run_until_idle() {
        for (;;) {
            io_.restart();
            if (io_.poll() == 0)
                return;
        }
    }
    void advance(::nereus::runtime::clock::duration d) {
        clock_.advance(d);
        run_until_idle();
    }
    // Runs `a` until it completes; nullopt when it cannot complete without time moving.
    template <class T>
    std::optional<T> run(boost::asio::awaitable<T> a) {
        auto out = std::make_shared<std::optional<T>>();
        boost::asio::co_spawn(io_, std::move(a), [out](std::exception_ptr e, T v) {
            if (e)
                std::rethrow_exception(e);
            *out = std::move(v);
        });
        run_until_idle();
        return std::move(*out);
    }

private:
    boost::asio::io_context io_;
    ::nereus::runtime::clock clock_;
    std::shared_ptr<test_broker> broker_;
};

}  // namespace nereus::runtime::testing
