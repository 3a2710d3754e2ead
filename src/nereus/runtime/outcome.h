#pragma once

// How a delivery ends. A handler returns one outcome per delivery (a batch handler one per
// batch, applied to each of its messages); the runtime turns it into exactly one settlement:
//
//  ack          - acknowledged; the broker never redelivers it.
//  retry        - negatively acknowledged; the broker delivers it again (redelivery_count + 1).
//                 With a dead-letter policy, a retry of the delivery whose redelivery_count has
//                 reached max_redeliveries goes to the dead-letter topic instead.
//  retry_after  - held by this process for `delay` on the runtime's clock (unacknowledged),
//                 then a retry. Nothing is published to bring it back.
//  dead_letter  - published to the dead-letter topic (receipt awaited), then acknowledged.
//  drop         - acknowledged without being handled (counted apart from ack).
//
// A plain value. Thread-safety: thread-compatible.

#include <chrono>
#include <cstdint>

namespace nereus::runtime {

class outcome {
public:
    enum class kind : std::uint8_t { ack, retry, retry_after, dead_letter, drop };
    using duration = std::chrono::milliseconds;

    static outcome ack() { return outcome(kind::ack, duration{0}); }
    static outcome retry() { return outcome(kind::retry, duration{0}); }
    static outcome retry_after(duration d) { return outcome(kind::retry_after, d); }
    static outcome dead_letter() { return outcome(kind::dead_letter, duration{0}); }
    static outcome drop() { return outcome(kind::drop, duration{0}); }

    [[nodiscard]] kind what() const { return kind_; }
    [[nodiscard]] duration delay() const { return delay_; }
    friend bool operator==(const outcome&, const outcome&) = default;

private:
    outcome(kind k, duration d) : kind_(k), delay_(d) {}
    kind kind_;
    duration delay_;
};

const char* to_string(outcome::kind k);

}  // namespace nereus::runtime
