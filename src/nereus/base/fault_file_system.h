#pragma once

// An in-memory file system with fault injection, for deterministic tests of durability
// (style R6; leveldb's fault-injection Env, redpanda's failure-injecting storage).
//
// It keeps two images of everything: what a reader sees now (the "page cache") and what would
// survive a power loss (the "disk"). file::sync() copies a file's bytes and size to the disk
// image; sync_dir() copies a directory's entries; sync_all() does both for everything. Nothing else
// is durable: a new file whose directory was never synced disappears at power_loss(), as on Linux.
//
// Faults (each matched by a substring of the path; "" matches every path):
//   - fail_writes: the next `count` matching writes write `keep_bytes` bytes (a short write),
//     then fail with `code` (EIO, ENOSPC, ...).
//   - fail_syncs: the next `count` matching sync()/sync_dir() calls fail with EIO and, like
//     Linux after a writeback error, the unsynced data is no longer pending: a later successful
//     sync() does NOT make it durable (it stays visible until power loss).
//   - delay_syncs: the next `count` matching sync()/sync_dir() calls sleep `delay` (without
//     the lock) before they sync: a slow disk. They then succeed or fail as above.
//   - set_space_limit: writes that would grow the total size of all files past the limit
//     write what fits and fail with ENOSPC.
//   - crash_after_bytes(n): after n more bytes are written (all files), the write in progress
//     stops at that byte and the file system "crashes": every later call fails with EIO until
//     power_loss() or process_crash() simulates the restart.
// Nowait reads: file::read_at_nowait() serves the bytes as read_at() does (memory is this file
// system's page cache) unless set_nowait_reads(false), after which every nowait read fails with
// std::errc::operation_would_block (a cold cache) until set back. A setting, not a fault: the
// restarts keep it.
// Restarts: power_loss() drops every unsynced byte and directory entry; power_loss_torn(seed)
// keeps a random part of them (each unsynced range kept, dropped or torn; each unsynced
// directory change kept or dropped); process_crash() keeps everything (kill -9 keeps the page
// cache). All three invalidate every open file handle (later calls on them fail with EBADF)
// and clear the faults.
//
// Thread-safety: thread-safe (one mutex). Paths are normalised; relative and absolute paths
// name the same tree.

#include "nereus/base/file_system.h"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <system_error>
#include <vector>

namespace nereus {

class fault_file_system final : public file_system {
public:
    fault_file_system();
    ~fault_file_system() override;

    // --- faults ---
    void fail_writes(std::string path_substring,
                     std::errc code,
                     std::uint64_t keep_bytes = 0,
                     int count = 1);
    void fail_syncs(std::string path_substring, int count = 1);
    void delay_syncs(std::string path_substring, std::chrono::microseconds delay, int count = 1);
    void set_space_limit(std::optional<std::uint64_t> bytes);
    void crash_after_bytes(std::uint64_t n);
    void crash_now();
    void set_nowait_reads(bool served);
    [[nodiscard]] bool crashed() const;

    // --- restarts ---
    void power_loss();
    void power_loss_torn(std::uint64_t seed);
    void process_crash();

    // --- counters (since construction) ---
    [[nodiscard]] std::uint64_t sync_count() const;      // successful file syncs
    [[nodiscard]] std::uint64_t dir_sync_count() const;  // successful directory syncs
    [[nodiscard]] std::uint64_t bytes_written() const;
    [[nodiscard]] std::size_t open_files() const;    // live handles
    [[nodiscard]] std::uint64_t used_bytes() const;  // total size of all files now

    // --- file_system ---
    result<std::unique_ptr<file>> open(const std::string& path, open_mode mode) override;
    result<void> remove(const std::string& path) override;
    result<void> rename(const std::string& from, const std::string& to) override;
    result<void> rename_noreplace(const std::string& from, const std::string& to) override;
    result<void> create_dir(const std::string& path) override;
    result<void> create_dirs(const std::string& path) override;
    result<void> remove_dir(const std::string& path) override;
    result<void> sync_dir(const std::string& path) override;
    result<void> sync_all(const std::string& path) override;
    result<std::vector<std::string>> list_dir(const std::string& path) override;
    result<bool> exists(const std::string& path) override;
    result<bool> is_dir(const std::string& path) override;
    result<std::uint64_t> file_size(const std::string& path) override;

    struct state;  // implementation detail, shared with open handles

private:
    // rename / rename_noreplace with state::mu held.
    result<void> rename_locked(const std::string& from, const std::string& to, bool replace);

    std::shared_ptr<state> s_;
};

}  // namespace nereus
