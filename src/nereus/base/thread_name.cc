#include "nereus/base/thread_name.h"

#include <algorithm>
#include <array>
#include <pthread.h>

namespace nereus {

void set_thread_name(std::string_view name) noexcept {
    std::array<char, 16> buf{};  // the kernel's TASK_COMM_LEN, terminator included
    const auto n = std::min(name.size(), buf.size() - 1);
    std::copy_n(name.data(), n, buf.data());
    (void)pthread_setname_np(pthread_self(), buf.data());
}

}  // namespace nereus
