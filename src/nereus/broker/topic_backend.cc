#include "nereus/broker/topic_backend.h"

#include <memory>
#include <mutex>

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

void subscription_cursor::ack_ranges(std::span<const ack_entry_range> ranges,
                                     ack_ranges_callback done) {
    struct join {
        std::mutex mu;
        std::size_t left = 0;
        bool applied = false;
        bool stale = false;
        std::error_code error;
    };
    auto shared_done = std::make_shared<ack_ranges_callback>(std::move(done));
    for (std::size_t i = 0; i < ranges.size(); ++i) {
        const auto& g = ranges[i];
        if (g.first >= g.end) {
            (*shared_done)(i, ack_outcome::no_effect);
            continue;
        }
        auto j = std::make_shared<join>();
        j->left = g.end - g.first;
        for (std::uint64_t e = g.first; e < g.end; ++e) {
            ack(g.fence, e, [j, i, shared_done](result<ack_outcome> r) {
                std::optional<result<ack_outcome>> out;
                {
                    std::lock_guard lock(j->mu);
                    if (!r) {
                        if (!j->error) {
                            j->error = r.error();
                        }
                    } else if (*r == ack_outcome::applied) {
                        j->applied = true;
                    } else if (*r == ack_outcome::stale) {
                        j->stale = true;
                    }
                    if (--j->left == 0) {
                        if (j->error) {
                            out.emplace(nereus::error(j->error));
                        } else {
                            out.emplace(j->applied ? ack_outcome::applied
                                        : j->stale ? ack_outcome::stale
                                                   : ack_outcome::no_effect);
                        }
                    }
                }
                if (out) {
                    (*shared_done)(i, std::move(*out));
                }
            });
        }
    }
}

}  // namespace nereus::broker
