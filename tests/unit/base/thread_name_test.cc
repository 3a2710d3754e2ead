#include "nereus/base/thread_name.h"

#include <gtest/gtest.h>

#include <array>
#include <pthread.h>
#include <string>
#include <thread>

namespace nereus {
namespace {

std::string name_of_this_thread() {
    std::array<char, 64> buf{};
    EXPECT_EQ(pthread_getname_np(pthread_self(), buf.data(), buf.size()), 0);
    return buf.data();
}

TEST(ThreadName, NamesTheCallingThread) {
    std::string seen;
    std::thread t([&] {
        set_thread_name("nereus-io-3");
        seen = name_of_this_thread();
    });
    t.join();
    EXPECT_EQ(seen, "nereus-io-3");
}

TEST(ThreadName, LongNamesKeepTheirFirstFifteenBytes) {
    std::string seen;
    std::thread t([&] {
        set_thread_name("nereus-client-1234567");  // 21 bytes: pthread_setname_np alone fails
        seen = name_of_this_thread();
    });
    t.join();
    EXPECT_EQ(seen, "nereus-client-1");
}

TEST(ThreadName, OtherThreadsKeepTheirNames) {
    const std::string before = name_of_this_thread();
    std::thread t([] { set_thread_name("elsewhere"); });
    t.join();
    EXPECT_EQ(name_of_this_thread(), before);
}

}  // namespace
}  // namespace nereus
