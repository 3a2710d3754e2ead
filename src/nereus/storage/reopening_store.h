#pragma once

// reopening_store: a stream_store that recovers from the stream log's fail-stop in-process.
//
// The embedded store is fail-stop (stream_store.h): after a write or fdatasync error on the
// commit path the kernel may already have dropped the unsynced pages ("fsyncgate"; PostgreSQL
// and RocksDB treat such an error as fatal for the file), so it never retries the sync and never
// confirms anything pending at the failure or queued after it; it refuses every append and read
// with errc::store_failed until reopened. This wrapper owns one such store plus a small thread
// that checks it every `check_interval`. Once the store failed, the thread closes it and opens
// it again on the same directory. The reopen runs the ordinary recovery: it rereads the
// journal, truncates at the last valid record, replays into the segments, syncs them and starts
// a fresh journal file. While the open fails (the fault persists) it retries with a doubling
// backoff up to `max_backoff`. Meanwhile every call fails with errc::store_failed.
//
// Ownership: owns the inner store and the thread.
// Thread-safety: thread-safe. Each call takes a short mutex to pick the current inner store,
//   except append(), which reads it from an atomic pointer (no lock, no reference count per
//   message): a store replaced by a reopen is closed but kept (not destroyed) until this
//   wrapper is, so an append that read the old pointer fails on it (store_failed) as it would
//   here. Completions run on the inner store's committer thread, as stream_store.h says.
// Durability: as stream_store.h (append: DURABLE on success; create/delete/trim: durable on
//   return). Across a reopen:
//   - every append confirmed before the failure is present;
//   - an append that failed may be present too, intact (recovery keeps every valid record it
//     can read), but it was never confirmed. Anything readable after the reopen was synced by
//     the reopen's recovery;
//   - offsets continue after the recovered end;
//   - stats() and last_corruption() describe the current inner store only.

#include "nereus/storage/stream_store.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace nereus::storage {

struct reopen_options {
    // How often the thread checks whether the store failed (an atomic load).
    std::chrono::milliseconds check_interval{200};
    // Upper bound of the backoff between failed reopen attempts.
    std::chrono::milliseconds max_backoff{5'000};
};

class reopening_store final : public stream_store {
public:
    // Opens the store (stream_store::open) and starts the thread.
    [[nodiscard]] static result<std::unique_ptr<reopening_store>> open(
        std::shared_ptr<file_system> fs,
        std::string dir,
        store_options options = {},
        reopen_options reopen = {},
        corruption_info* corruption = nullptr);

    reopening_store(std::shared_ptr<file_system> fs,
                    std::string dir,
                    const store_options& options,
                    const reopen_options& reopen,
                    std::unique_ptr<stream_store> inner);
    reopening_store(const reopening_store&) = delete;
    reopening_store& operator=(const reopening_store&) = delete;
    reopening_store(reopening_store&&) = delete;
    reopening_store& operator=(reopening_store&&) = delete;
    ~reopening_store() override;

    // What the thread does, now: when the store failed (or an earlier reopen failed), closes it
    // and opens it again. Success: the store is healthy (reopened, or it never failed).
    // Errors: the open's error (the store stays failed), errc::closed. Blocking; not on the
    // committer thread (a completion).
    [[nodiscard]] result<void> reopen_if_failed();
    // Successful reopens since open.
    [[nodiscard]] std::uint64_t reopens() const { return reopens_.load(); }

    result<void> create_stream(stream_id id) override;
    result<void> delete_stream(stream_id id) override;
    void append(stream_id id, bytes_view payload, append_completion done) override;
    void append(stream_id id,
                bytes_view payload,
                verified_tail tail,
                append_completion done) override;
    result<read_batch> read(stream_id id,
                            offset from,
                            std::size_t max_entries,
                            std::size_t max_bytes) override;
    result<read_batch> read_nowait(stream_id id,
                                   offset from,
                                   std::size_t max_entries,
                                   std::size_t max_bytes) override;
    result<stream_info> info(stream_id id) override;
    result<offset> trim(stream_id id, offset floor) override;
    std::vector<stream_id> list_streams() override;
    // Stops the thread, then closes the inner store (its close result; errc::store_failed when
    // a reopen was still pending).
    result<void> close() override;
    std::optional<corruption_info> last_corruption() const override;
    store_stats stats() const override;
    // True while the inner store is failed or being reopened.
    bool failed() const override;

private:
    // The current inner store, or null with `ec` set (closed, or failed and being reopened).
    std::shared_ptr<stream_store> current(std::error_code& ec) const;
    void loop();

    const std::shared_ptr<file_system> fs_;
    const std::string dir_;
    const store_options options_;
    const reopen_options reopen_;

    mutable std::mutex mu_;  // guards inner_, closed_, stop_, retired_
    std::shared_ptr<stream_store> inner_;
    // inner_.get() while it serves appends (null while failed-and-replaced or closed); written
    // under mu_, read by append() without it.
    std::atomic<stream_store*> serving_{nullptr};
    // Stores a reopen or close() took out of service: an append() may still hold their
    // pointer, so they live (closed) as long as this wrapper. One per reopen.
    std::vector<std::shared_ptr<stream_store>> retired_;
    bool closed_ = false;
    bool stop_ = false;
    std::condition_variable cv_;

    std::mutex reopen_mu_;  // serialises reopen_if_failed and close
    std::atomic<std::uint64_t> reopens_{0};
    std::thread thread_;
};

}  // namespace nereus::storage
