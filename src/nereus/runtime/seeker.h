#pragma once

// A seeker moves one subscription (see position in message.h for Pulsar's semantics of each
// target). It travels the same way back to the subscription's driver as a delivery's
// settlement does, and is exactly that settlement.
//
// seek() completes once the consumer confirmed the seek; deliveries the runtime had buffered
// from before it (in the channel of 16 or in lanes) are then discarded, never handled; the
// broker delivers from the new position. Usable from handlers (context::seeker()) and from
// outside (runtime::seeker()). errc::shut_down after shutdown.
// Thread-safety: strand-confined to the runtime's executor. A cheap handle.

#include "nereus/runtime/channel.h"

namespace nereus::runtime {

class seeker {
public:
    explicit seeker(settlement s) : s_(std::move(s)) {}
    boost::asio::awaitable<result<void>> seek(position p) { co_return co_await s_.seek(p); }

private:
    settlement s_;
};

static_assert(sizeof(seeker) == sizeof(settlement));

}  // namespace nereus::runtime
