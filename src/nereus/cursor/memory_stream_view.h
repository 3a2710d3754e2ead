#pragma once

// memory_stream_view — a stream_view over an in-memory list of publish times, for tests and
// tools: append(t) adds an entry, trim_to(x) moves start().
//
// Ownership: owns its list. Thread-safety: thread-safe (one mutex).

#include "nereus/cursor/stream_view.h"

#include <cstdint>
#include <mutex>
#include <vector>

namespace nereus::cursor {

class memory_stream_view final : public stream_view {
public:
    memory_stream_view() = default;

    // Appends one entry with this publish time; returns its offset.
    offset append(std::int64_t publish_time);
    // Appends `n` entries with publish times time0, time0 + 1, ...
    void append_n(std::uint64_t n, std::int64_t time0 = 0);
    // Moves start() forward to `x` (at most end()).
    void trim_to(offset x);

    [[nodiscard]] offset start() const override;
    [[nodiscard]] offset end() const override;
    [[nodiscard]] time_lookup find_by_time(std::int64_t publish_time) const override;

private:
    mutable std::mutex mu_;
    std::vector<std::int64_t> times_;
    offset start_ = 0;
};

}  // namespace nereus::cursor
