#pragma once

// The file-system seam (style R6): every byte Nereus stores goes through these interfaces, so
// tests can swap the real POSIX implementation for fault_file_system (short writes, EIO on sync,
// ENOSPC, crash at byte N, power loss).
//
// Durability model (the one Linux gives, and the one fault_file_system enforces):
//   - file::write_at() makes bytes visible to readers (applied), not durable.
//   - file::sync() (fdatasync) makes the file's bytes and size durable, but NOT its directory
//     entry: a new, renamed or removed name is durable only after sync_dir() of its directory.
//   - After a failed sync() the file's unsynced bytes are in an unknown state (Linux may drop
//     them and mark the pages clean), so a caller must treat the file as failed, never retry
//     the sync and assume success.
// Thread-safety: implementations are thread-safe; a `file` may be used from several threads
// for positional reads and writes to disjoint ranges.

#include "nereus/base/result.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace nereus {

using bytes_view = std::span<const std::byte>;

// Offsets, sizes and buffer addresses of writes to a file opened with
// file_system::open_direct() are multiples of this (the page size; a multiple of every
// logical block size Linux's direct I/O asks for).
inline constexpr std::size_t kDirectIoAlign = 4096;

enum class open_mode {
    read_only,        // must exist
    read_write,       // must exist
    create,           // created (empty) if missing, opened read-write otherwise
    create_exclusive  // must not exist (EEXIST otherwise)
};

class file {
public:
    file() = default;
    file(const file&) = delete;
    file& operator=(const file&) = delete;
    file(file&&) = delete;
    file& operator=(file&&) = delete;
    virtual ~file() = default;

    // Writes all of `data` at `offset`, extending the file as needed. On error a prefix of
    // `data` may have been written. Applied, not durable.
    [[nodiscard]] virtual result<void> write_at(std::uint64_t offset, bytes_view data) = 0;
    // Gathers `parts` into one write at `offset` (writev). Same contract as write_at.
    [[nodiscard]] virtual result<void> writev_at(std::uint64_t offset,
                                                 std::span<const bytes_view> parts) = 0;
    // Reads up to out.size() bytes at `offset`; returns the count, which is smaller only at
    // end of file.
    [[nodiscard]] virtual result<std::size_t> read_at(std::uint64_t offset,
                                                      std::span<std::byte> out) = 0;
    // read_at() of bytes that need no disk I/O: when every byte of [offset, offset +
    // out.size()) that exists is in the page cache, the same count and bytes as read_at();
    // otherwise it fails with std::errc::operation_would_block (some of `out` may have been
    // filled; the caller ignores it and reads again elsewhere with read_at()). For callers on
    // threads that must never wait for a disk (a broker io thread). The default (every file
    // that does not say otherwise, e.g. the test doubles) always fails so: always safe.
    // posix: preadv2(RWF_NOWAIT); a kernel or file system without it (EOPNOTSUPP) makes every
    // later call on that file fail with operation_would_block at once.
    [[nodiscard]] virtual result<std::size_t> read_at_nowait(std::uint64_t offset,
                                                             std::span<std::byte> out);
    // fdatasync: the file's bytes and size are durable when this returns success.
    [[nodiscard]] virtual result<void> sync() = 0;
    // Starts writing the dirty pages of [offset, offset + len) to the disk and returns without
    // waiting for them: a hint that spreads a later sync()'s work over time. Durability is
    // unchanged (only sync() makes bytes durable). posix: sync_file_range(WRITE); the default
    // (the test doubles) does nothing.
    [[nodiscard]] virtual result<void> start_writeback(std::uint64_t offset, std::uint64_t len);
    // Drops the clean cached pages of [offset, offset + len) (dirty ones stay): a hint for
    // ranges written and synced here that another handle of the file overwrites with direct
    // writes, which would otherwise have to evict them first. posix:
    // posix_fadvise(DONTNEED); the default (the test doubles) does nothing.
    [[nodiscard]] virtual result<void> drop_cached(std::uint64_t offset, std::uint64_t len);
    [[nodiscard]] virtual result<std::uint64_t> size() = 0;
    // Sets the size (shrinks or zero-extends). Applied; durable after sync().
    [[nodiscard]] virtual result<void> truncate(std::uint64_t size) = 0;
    // Reserves space for [0, size) without changing the visible size where the platform allows
    // (fallocate KEEP_SIZE); a hint, may be a no-op.
    [[nodiscard]] virtual result<void> preallocate(std::uint64_t size) = 0;
};

class file_system {
public:
    file_system() = default;
    file_system(const file_system&) = delete;
    file_system& operator=(const file_system&) = delete;
    file_system(file_system&&) = delete;
    file_system& operator=(file_system&&) = delete;
    virtual ~file_system() = default;

    [[nodiscard]] virtual result<std::unique_ptr<file>> open(const std::string& path,
                                                             open_mode mode) = 0;
    // Opens an existing file read-write for direct, synchronous writes (O_DIRECT | O_DSYNC):
    // write_at()/writev_at() bypass the page cache and their bytes (and a grown size) are
    // durable when they return success — *durable*, not applied; no sync() is needed (it
    // still works). Every write's offset, size and buffer address (each part's, for writev_at)
    // must be a multiple of kDirectIoAlign (EINVAL otherwise). Reads and the rest as open().
    // A file system without direct I/O (tmpfs) fails with EINVAL: use open() and sync().
    // The default (every test double) emulates it on this->open(path, read_write): the
    // alignment is checked, and each write is followed by sync(), so fault injection sees the
    // same calls and gives the same durability. posix_file_system() opens with
    // O_DIRECT | O_DSYNC.
    [[nodiscard]] virtual result<std::unique_ptr<file>> open_direct(const std::string& path);
    // Removes a file's name. Durable after sync_dir() of its directory.
    [[nodiscard]] virtual result<void> remove(const std::string& path) = 0;
    // Atomically replaces `to` with `from`. Durable after sync_dir() of both directories.
    [[nodiscard]] virtual result<void> rename(const std::string& from, const std::string& to) = 0;
    // Like rename, but fails with EEXIST (and changes nothing) when `to` exists.
    [[nodiscard]] virtual result<void> rename_noreplace(const std::string& from,
                                                        const std::string& to) = 0;
    // Creates one directory; EEXIST if it exists. Durable after sync_dir() of its parent.
    [[nodiscard]] virtual result<void> create_dir(const std::string& path) = 0;
    // Creates every missing directory on the path and syncs each parent it changed (durable).
    [[nodiscard]] virtual result<void> create_dirs(const std::string& path) = 0;
    // Removes an empty directory. Durable after sync_dir() of its parent.
    [[nodiscard]] virtual result<void> remove_dir(const std::string& path) = 0;
    // fsync of a directory: makes its entries (creations, renames, removals) durable.
    [[nodiscard]] virtual result<void> sync_dir(const std::string& path) = 0;
    // syncfs(2) of the file system holding `path`: every pending change on it — file bytes and
    // sizes, directory entries — becomes durable in one call (bytes whose earlier sync() failed
    // excepted, as above). For recovery, which must make durable whatever it saw without
    // knowing which directories had unsynced changes. Its cost depends on everything dirty on
    // that file system, not only on the caller's files.
    [[nodiscard]] virtual result<void> sync_all(const std::string& path) = 0;
    // Names (not paths) of the entries of a directory, sorted, without "." and "..".
    [[nodiscard]] virtual result<std::vector<std::string>> list_dir(const std::string& path) = 0;
    [[nodiscard]] virtual result<bool> exists(const std::string& path) = 0;
    [[nodiscard]] virtual result<bool> is_dir(const std::string& path) = 0;
    [[nodiscard]] virtual result<std::uint64_t> file_size(const std::string& path) = 0;
};

// The real file system (POSIX calls: pwrite/pwritev/pread/fdatasync/fsync of directories,
// renameat2(RENAME_NOREPLACE)). Returns a process-wide instance.
std::shared_ptr<file_system> posix_file_system();

// Joins two path components with one '/'.
std::string path_join(const std::string& dir, const std::string& name);
// The directory part of a path ("a/b/c" -> "a/b", "c" -> ".").
std::string path_parent(const std::string& path);

}  // namespace nereus
