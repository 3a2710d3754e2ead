#pragma once

// ledger_stream — the cursor's stream_view over one stream of the stream log, plus the
// ledger's sparse publish-time index (doc/ledger.md, "Publish times").
//
//   start(): the LOGICAL first offset (the retention root's start, or the target of a trim in
//            progress): no cursor is created or reset below it. Monotonic.
//   end():   one past the last entry whose append completion has run (the durable end the
//            ledger has confirmed; appends of this ledger are the only ones to its stream).
//   find_by_time(T): the first retained offset, in offset order, whose publish time is >= T.
//
// Publish times live in each entry's header (records.h). The index keeps, per block of
// `block` consecutive offsets, the maximum publish time and the stored bytes of the block. It
// is built lazily (one sequential read of the retained stream) on the first lookup and then
// kept up to date by append completions. A lookup skips blocks whose maximum is < T and reads
// only the first block that may hold a match. Times need not be monotonic.
//
// Thread-safety: thread-safe. Durability: none (in memory; rebuilt after a restart).

#include "nereus/base/result.h"
#include "nereus/cursor/stream_view.h"
#include "nereus/storage/stream_store.h"

#include <atomic>
#include <cstdint>
#include <mutex>
#include <optional>
#include <vector>

namespace nereus::ledger {

class ledger_stream final : public cursor::stream_view {
public:
    ledger_stream(storage::stream_store* streams,
                  storage::stream_id id,
                  std::uint32_t block,
                  cursor::offset start,
                  cursor::offset end);

    [[nodiscard]] cursor::offset start() const override { return start_.load(); }
    [[nodiscard]] cursor::offset end() const override { return end_.load(); }
    [[nodiscard]] time_lookup find_by_time(std::int64_t publish_time) const override;

    // Raises start() to `x` (never lowers it).
    void raise_start(cursor::offset x);
    // Records the max publish time of everything below start() (persisted by the ledger).
    void set_trimmed_max_time(std::optional<std::int64_t> t);
    [[nodiscard]] std::optional<std::int64_t> trimmed_max_time() const;
    // Append completion of entry `at` (in offset order).
    void on_appended(cursor::offset at, std::int64_t publish_time, std::size_t bytes);

    // The maximum publish time of the entries in [from, to) (nullopt when none is readable).
    // Builds the index if needed. Errors: storage read errors.
    [[nodiscard]] result<std::optional<std::int64_t>> max_time(cursor::offset from,
                                                               cursor::offset to) const;
    // The smallest block boundary x >= start() such that [x, end) holds at most `bytes` stored
    // bytes (size retention). Errors: storage read errors.
    [[nodiscard]] result<cursor::offset> size_boundary(std::uint64_t bytes) const;
    // find_by_time with the storage error surfaced (find_by_time maps an error to start()).
    [[nodiscard]] result<time_lookup> lookup(std::int64_t publish_time) const;

    [[nodiscard]] storage::stream_id id() const { return id_; }

private:
    struct block_info {
        std::int64_t max_time = 0;
        bool has = false;
        std::uint64_t bytes = 0;
    };
    // Requires: mu_ held.
    result<void> ensure_built() const;
    void add_locked(cursor::offset at, std::int64_t t, std::size_t bytes) const;
    // Reads entries [from, to) and calls f(offset, publish_time, stored_bytes).
    template <class F>
    result<void> scan(cursor::offset from, cursor::offset to, F&& f) const;

    storage::stream_store* streams_;
    storage::stream_id id_;
    std::uint32_t block_;
    std::atomic<cursor::offset> start_;
    std::atomic<cursor::offset> end_;

    mutable std::mutex mu_;
    // Written under mu_; read without it by on_appended, which takes mu_ only once the index
    // exists (until the first lookup, an append completion takes no lock here). An append
    // that skipped the lock while the index was being built is caught up by the next
    // ensure_built() (from indexed_end_ to end()).
    mutable std::atomic<bool> built_{false};
    mutable cursor::offset indexed_end_ = 0;  // every entry below it is in blocks_
    mutable std::vector<block_info> blocks_;  // block i covers [i*block_, (i+1)*block_)
    std::optional<std::int64_t> trimmed_max_;
};

}  // namespace nereus::ledger
