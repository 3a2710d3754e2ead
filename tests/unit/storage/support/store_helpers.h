#pragma once

// Helpers shared by the storage tests: opening stores, async append bookkeeping, reading a whole
// stream back.

#include "nereus/storage/stream_store.h"

#include <gtest/gtest.h>

#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace nereus::storage::testing {

inline std::unique_ptr<stream_store> open_store(std::shared_ptr<file_system> fs,
                                                const std::string& dir,
                                                store_options o = {}) {
    auto r = stream_store::open(std::move(fs), dir, o);
    EXPECT_TRUE(r) << "open failed: " << r.error().message();
    return r ? std::move(*r) : nullptr;
}

// Small options so rolls, index entries and checkpoints happen in small tests.
inline store_options tiny_options() {
    store_options o;
    o.segment_max_bytes = 1024;
    o.journal_max_bytes = 8 << 10;
    o.checkpoint_bytes = 4 << 10;
    o.index_interval_bytes = 128;
    o.fd_cache_size = 8;
    o.prepare_max_bytes_per_s = 0;    // spares however fast the tests write
    o.pipelined_apply_min_bytes = 0;  // small groups go through the applier too
    return o;
}

// Counts outstanding async appends and waits for all of them.
class pending_counter {
public:
    void add(int n = 1) {
        const std::lock_guard l(mu_);
        outstanding_ += n;
    }
    void done() {
        const std::lock_guard l(mu_);
        if (--outstanding_ == 0) {
            cv_.notify_all();
        }
    }
    void wait() {
        std::unique_lock l(mu_);
        cv_.wait(l, [&] { return outstanding_ == 0; });
    }

private:
    std::mutex mu_;
    std::condition_variable cv_;
    int outstanding_ = 0;
};

// All entries of a stream from `from` to its end, as owned byte vectors.
inline std::vector<std::vector<std::byte>> read_all(stream_store& s,
                                                    stream_id id,
                                                    std::uint64_t from = 0) {
    std::vector<std::vector<std::byte>> out;
    offset cur(from);
    for (;;) {
        auto b = s.read(id, cur, 1000, 1 << 20);
        EXPECT_TRUE(b) << "read failed at " << cur.value() << ": " << b.error().message();
        if (!b || b->empty()) {
            break;
        }
        for (const auto& e : *b) {
            EXPECT_EQ(e.at.value(), from + out.size());
            out.emplace_back(e.payload.begin(), e.payload.end());
        }
        cur = b->next(cur);
    }
    return out;
}

}  // namespace nereus::storage::testing
