#include "nereus/runtime/clock.h"

#include <gtest/gtest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>

namespace nereus::runtime {
namespace {

using namespace std::chrono_literals;
namespace asio = boost::asio;

void drain(asio::io_context& io) {
    for (;;) {
        io.restart();
        if (io.poll() == 0)
            return;
    }
}

asio::awaitable<void> sleeper(clock& c, clock::duration d, const void* owner, int& state) {
    state = co_await c.sleep(d, owner) ? 1 : 2;
}

TEST(Clock, VirtualSleepWakesOnlyWhenItsDeadlineIsReached) {
    asio::io_context io;
    auto c = clock::manual(io.get_executor());
    const auto start = c.now();
    int state = 0;
    asio::co_spawn(io, sleeper(c, 1000ms, nullptr, state), asio::detached);
    drain(io);
    EXPECT_EQ(state, 0);
    EXPECT_EQ(c.sleepers(), 1U);
    c.advance(999ms);
    drain(io);
    EXPECT_EQ(state, 0) << "woke before its deadline";
    c.advance(1ms);
    drain(io);
    EXPECT_EQ(state, 1);
    EXPECT_EQ(c.sleepers(), 0U);
    EXPECT_EQ(c.now() - start, 1000ms);
}

TEST(Clock, CancelEndsOnlyTheOwnersSleeps) {
    asio::io_context io;
    auto c = clock::manual(io.get_executor());
    int mine = 0, theirs = 0;
    int owner = 0;
    asio::co_spawn(io, sleeper(c, 1000ms, &owner, mine), asio::detached);
    asio::co_spawn(io, sleeper(c, 1000ms, nullptr, theirs), asio::detached);
    drain(io);
    c.cancel(&owner);
    drain(io);
    EXPECT_EQ(mine, 2);
    EXPECT_EQ(theirs, 0);
    c.cancel_all();
    drain(io);
    EXPECT_EQ(theirs, 2);
}

TEST(Clock, RealClockSleepsRealTime) {
    asio::io_context io;
    auto c = clock::real(io.get_executor());
    int state = 0;
    const auto t0 = std::chrono::steady_clock::now();
    asio::co_spawn(io, sleeper(c, 20ms, nullptr, state), asio::detached);
    io.run();
    EXPECT_EQ(state, 1);
    EXPECT_GE(std::chrono::steady_clock::now() - t0, 20ms);
}

}  // namespace
}  // namespace nereus::runtime
