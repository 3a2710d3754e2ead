#include "nereus/cursor/memory_stream_view.h"

#include <algorithm>

namespace nereus::cursor {

offset memory_stream_view::append(std::int64_t publish_time) {
    const std::lock_guard lock(mu_);
    times_.push_back(publish_time);
    return times_.size() - 1;
}

void memory_stream_view::append_n(std::uint64_t n, std::int64_t time0) {
    const std::lock_guard lock(mu_);
    for (std::uint64_t i = 0; i < n; ++i) {
        times_.push_back(time0 + static_cast<std::int64_t>(i));
    }
}

void memory_stream_view::trim_to(offset x) {
    const std::lock_guard lock(mu_);
    start_ = std::max(start_, std::min<offset>(x, times_.size()));
}

offset memory_stream_view::start() const {
    const std::lock_guard lock(mu_);
    return start_;
}

offset memory_stream_view::end() const {
    const std::lock_guard lock(mu_);
    return times_.size();
}

stream_view::time_lookup memory_stream_view::find_by_time(std::int64_t publish_time) const {
    const std::lock_guard lock(mu_);
    // The trimmed times are still known here, so a match lost to trimming is detected exactly.
    for (offset o = 0; o < times_.size(); ++o) {
        if (times_[o] >= publish_time) {
            if (o < start_) {
                return {start_, true};
            }
            return {o, false};
        }
    }
    return {times_.size(), false};
}

}  // namespace nereus::cursor
