#include "nereus/storage/fd_cache.h"

#include "nereus/storage/format.h"

namespace nereus::storage {

fd_cache::fd_cache(std::shared_ptr<file_system> fs, std::string streams_dir, std::size_t capacity)
    : fs_(std::move(fs)), streams_dir_(std::move(streams_dir)), capacity_(capacity) {}

std::string fd_cache::stream_dir(std::uint64_t stream) const {
    return path_join(streams_dir_, format::stream_dir_name(stream));
}

std::string fd_cache::path(const segment_key& k) const {
    return path_join(stream_dir(k.stream), format::segment_file_name(k.base));
}

std::shared_ptr<file> fd_cache::lookup_locked(const segment_key& k) {
    auto it = map_.find(k);
    if (it == map_.end()) {
        return nullptr;
    }
    lru_.splice(lru_.begin(), lru_, it->second);
    return it->second->second;
}

void fd_cache::insert_locked(const segment_key& k, std::shared_ptr<file> f) {
    if (auto it = map_.find(k); it != map_.end()) {
        it->second->second = std::move(f);
        lru_.splice(lru_.begin(), lru_, it->second);
        return;
    }
    lru_.emplace_front(k, std::move(f));
    map_.emplace(k, lru_.begin());
    while (lru_.size() > capacity_) {
        map_.erase(lru_.back().first);
        lru_.pop_back();
    }
}

result<std::shared_ptr<file>> fd_cache::get(const segment_key& k) {
    {
        const std::lock_guard lock(mu_);
        if (auto f = lookup_locked(k)) {
            return f;
        }
    }
    auto opened = fs_->open(path(k), open_mode::read_write);
    if (!opened) {
        return error(opened.error());
    }
    std::shared_ptr<file> f = std::move(*opened);
    const std::lock_guard lock(mu_);
    if (auto existing = lookup_locked(k)) {
        return existing;  // another thread opened it meanwhile; ours closes on return
    }
    insert_locked(k, f);
    return f;
}

std::shared_ptr<file> fd_cache::find(const segment_key& k) {
    const std::unique_lock lock(mu_, std::try_to_lock);
    return lock.owns_lock() ? lookup_locked(k) : nullptr;
}

result<std::shared_ptr<file>> fd_cache::get_uncached(const segment_key& k) {
    {
        const std::lock_guard lock(mu_);
        if (auto f = lookup_locked(k)) {
            return f;
        }
    }
    auto opened = fs_->open(path(k), open_mode::read_write);
    if (!opened) {
        return error(opened.error());
    }
    return std::shared_ptr<file>(std::move(*opened));
}

void fd_cache::put(const segment_key& k, std::shared_ptr<file> f) {
    const std::lock_guard lock(mu_);
    insert_locked(k, std::move(f));
}

void fd_cache::evict(const segment_key& k) {
    std::shared_ptr<file> doomed;  // closed outside the lock
    const std::lock_guard lock(mu_);
    if (auto it = map_.find(k); it != map_.end()) {
        doomed = std::move(it->second->second);
        lru_.erase(it->second);
        map_.erase(it);
    }
}

void fd_cache::evict_stream(std::uint64_t stream) {
    std::list<entry> doomed;
    const std::lock_guard lock(mu_);
    for (auto it = lru_.begin(); it != lru_.end();) {
        auto next = std::next(it);
        if (it->first.stream == stream) {
            map_.erase(it->first);
            doomed.splice(doomed.end(), lru_, it);
        }
        it = next;
    }
}

void fd_cache::clear() {
    std::list<entry> doomed;
    const std::lock_guard lock(mu_);
    map_.clear();
    doomed.swap(lru_);
}

std::size_t fd_cache::size() const {
    const std::lock_guard lock(mu_);
    return lru_.size();
}

}  // namespace nereus::storage
