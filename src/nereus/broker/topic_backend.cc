#include "nereus/broker/topic_backend.h"

namespace nereus::broker {

std::uint32_t dispatch_entry::message_count() const noexcept {
    if (remaining.empty()) {
        return batch_size;
    }
    std::uint32_t n = 0;
    for (auto w : remaining) {
        n += static_cast<std::uint32_t>(__builtin_popcountll(static_cast<std::uint64_t>(w)));
    }
    return n == 0 ? 1 : n;
}

}  // namespace nereus::broker
