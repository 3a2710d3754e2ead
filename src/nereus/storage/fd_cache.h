#pragma once

// fd_cache: a bounded LRU cache of open segment files, so 10,000 streams never mean 10,000 open
// descriptors. A file evicted while someone still uses it stays open until that user drops its
// shared_ptr, so the number of open files may exceed the bound by the files in active use.
//
// Keys carry the stream's incarnation, so a stale entry of a deleted stream can never be
// returned for a re-created stream with the same id.
// Ownership: shares the file_system; owns the cached files.
// Thread-safety: thread-safe (one mutex, never held across I/O).

#include "nereus/base/file_system.h"
#include "nereus/base/result.h"

#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

namespace nereus::storage {

struct segment_key {
    std::uint64_t stream = 0;
    std::uint64_t base = 0;
    std::uint64_t incarnation = 0;
    friend bool operator==(const segment_key&, const segment_key&) = default;
};

struct segment_key_hash {
    std::size_t operator()(const segment_key& k) const noexcept {
        std::uint64_t h = k.stream * 0x9e3779b97f4a7c15ULL;
        h ^= (k.base + 0x632be59bd9b4e019ULL) + (h << 6) + (h >> 2);
        h ^= (k.incarnation + 0x94d049bb133111ebULL) + (h << 6) + (h >> 2);
        return static_cast<std::size_t>(h);
    }
};

class fd_cache {
public:
    // `streams_dir` is the directory holding the stream directories.
    fd_cache(std::shared_ptr<file_system> fs, std::string streams_dir, std::size_t capacity);
    fd_cache(const fd_cache&) = delete;
    fd_cache& operator=(const fd_cache&) = delete;
    fd_cache(fd_cache&&) = delete;
    fd_cache& operator=(fd_cache&&) = delete;
    ~fd_cache() = default;

    // The cached file, or opens it read-write (must exist) and caches it.
    [[nodiscard]] result<std::shared_ptr<file>> get(const segment_key& k);
    // The cached file, or nullptr: never opens one and never waits for the mutex (nullptr when
    // it is busy), for reads that must not wait.
    [[nodiscard]] std::shared_ptr<file> find(const segment_key& k);
    // The cached file, or opens it without caching it (for one-off use such as a sync).
    [[nodiscard]] result<std::shared_ptr<file>> get_uncached(const segment_key& k);
    // Inserts a file the caller just created.
    void put(const segment_key& k, std::shared_ptr<file> f);
    void evict(const segment_key& k);
    void evict_stream(std::uint64_t stream);
    void clear();
    [[nodiscard]] std::size_t size() const;

    [[nodiscard]] std::string path(const segment_key& k) const;
    [[nodiscard]] std::string stream_dir(std::uint64_t stream) const;

private:
    using entry = std::pair<segment_key, std::shared_ptr<file>>;
    std::shared_ptr<file> lookup_locked(const segment_key& k);
    void insert_locked(const segment_key& k, std::shared_ptr<file> f);

    const std::shared_ptr<file_system> fs_;
    const std::string streams_dir_;
    const std::size_t capacity_;
    mutable std::mutex mu_;
    std::list<entry> lru_;  // front = most recently used
    std::unordered_map<segment_key, std::list<entry>::iterator, segment_key_hash> map_;
};

}  // namespace nereus::storage
