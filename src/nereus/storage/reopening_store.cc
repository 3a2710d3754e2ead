#include "nereus/storage/reopening_store.h"

#include "nereus/base/thread_name.h"
#include "nereus/storage/logger.h"

#include <algorithm>

namespace nereus::storage {

result<std::unique_ptr<reopening_store>> reopening_store::open(std::shared_ptr<file_system> fs,
                                                               std::string dir,
                                                               store_options options,
                                                               reopen_options reopen,
                                                               corruption_info* corruption) {
    if (reopen.check_interval.count() <= 0 || reopen.max_backoff < reopen.check_interval) {
        return error(errc::invalid_argument);
    }
    auto inner = stream_store::open(fs, dir, options, corruption);
    if (!inner) {
        return error(inner.error());
    }
    return std::make_unique<reopening_store>(std::move(fs), std::move(dir), options, reopen,
                                             std::move(*inner));
}

reopening_store::reopening_store(std::shared_ptr<file_system> fs,
                                 std::string dir,
                                 const store_options& options,
                                 const reopen_options& reopen,
                                 std::unique_ptr<stream_store> inner)
    : fs_(std::move(fs)),
      dir_(std::move(dir)),
      options_(options),
      reopen_(reopen),
      inner_(std::move(inner)),
      serving_(inner_.get()) {
    thread_ = std::thread([this] {
        set_thread_name("nereus-reopen");
        loop();
    });
}

reopening_store::~reopening_store() {
    (void)close();
}

void reopening_store::loop() {
    std::chrono::milliseconds wait = reopen_.check_interval;
    std::unique_lock lock(mu_);
    while (!stop_) {
        cv_.wait_for(lock, wait, [&] { return stop_; });
        if (stop_) {
            break;
        }
        if (inner_ && !inner_->failed()) {
            wait = reopen_.check_interval;
            continue;
        }
        lock.unlock();
        const auto r = reopen_if_failed();
        lock.lock();
        wait = r ? reopen_.check_interval : std::min(reopen_.max_backoff, wait * 2);
    }
}

result<void> reopening_store::reopen_if_failed() {
    const std::lock_guard reopen_lock(reopen_mu_);
    std::shared_ptr<stream_store> old;
    {
        const std::lock_guard lock(mu_);
        if (closed_) {
            return error(errc::closed);
        }
        if (inner_ && !inner_->failed()) {
            return {};
        }
        old = std::move(inner_);  // from here on every call fails with store_failed
        serving_.store(nullptr);
    }
    if (old) {
        // Not under mu_: the old store's completions may call append() on this wrapper while
        // close() joins its committer (they get store_failed at once).
        NEREUS_LOG(storage_log(), warn, "stream store failed dir={}: closing it to reopen", dir_);
        (void)old->close();  // reports the failure again; nothing more to do with it
        const std::lock_guard lock(mu_);
        retired_.push_back(std::move(old));  // an append() may still hold its pointer
    }
    auto s = stream_store::open(fs_, dir_, options_);
    if (!s) {
        NEREUS_LOG(storage_log(), err, "stream store reopen failed dir={} error={}", dir_,
                   s.error().message());
        return error(s.error());
    }
    {
        const std::lock_guard lock(mu_);
        inner_ = std::shared_ptr<stream_store>(std::move(*s));
        serving_.store(inner_.get());
    }
    reopens_.fetch_add(1);
    NEREUS_LOG(storage_log(), warn, "stream store reopened dir={} reopens={}", dir_,
               reopens_.load());
    return {};
}

result<void> reopening_store::close() {
    {
        const std::lock_guard lock(mu_);
        if (stop_) {
            return {};
        }
        stop_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) {
        thread_.join();
    }
    const std::lock_guard reopen_lock(reopen_mu_);  // a reopen_if_failed() in progress ends
    std::shared_ptr<stream_store> s;
    {
        const std::lock_guard lock(mu_);
        closed_ = true;
        s = std::move(inner_);
        serving_.store(nullptr);
    }
    if (!s) {
        return error(errc::store_failed);
    }
    auto r = s->close();
    const std::lock_guard lock(mu_);
    retired_.push_back(std::move(s));  // an append() may still hold its pointer
    return r;
}

std::shared_ptr<stream_store> reopening_store::current(std::error_code& ec) const {
    const std::lock_guard lock(mu_);
    if (closed_) {
        ec = make_error_code(errc::closed);
        return nullptr;
    }
    if (!inner_) {
        ec = make_error_code(errc::store_failed);
        return nullptr;
    }
    return inner_;
}

result<void> reopening_store::create_stream(stream_id id) {
    std::error_code ec;
    auto s = current(ec);
    return s ? s->create_stream(id) : error(ec);
}

result<void> reopening_store::delete_stream(stream_id id) {
    std::error_code ec;
    auto s = current(ec);
    return s ? s->delete_stream(id) : error(ec);
}

void reopening_store::append(stream_id id, bytes_view payload, append_completion done) {
    append(id, payload, verified_tail{}, std::move(done));
}

void reopening_store::append(stream_id id,
                             bytes_view payload,
                             verified_tail tail,
                             append_completion done) {
    // The lock-free path (header: Thread-safety): a store taken out of service after this load
    // is closed, not destroyed, and fails the append itself.
    if (stream_store* serving = serving_.load()) {
        serving->append(id, payload, tail, std::move(done));
        return;
    }
    std::error_code ec;
    auto s = current(ec);
    if (!s) {
        done(error(ec));
        return;
    }
    s->append(id, payload, tail, std::move(done));
}

result<read_batch> reopening_store::read(stream_id id,
                                         offset from,
                                         std::size_t max_entries,
                                         std::size_t max_bytes) {
    std::error_code ec;
    auto s = current(ec);
    if (!s) {
        return error(ec);
    }
    return s->read(id, from, max_entries, max_bytes);
}

result<read_batch> reopening_store::read_nowait(stream_id id,
                                                offset from,
                                                std::size_t max_entries,
                                                std::size_t max_bytes) {
    std::error_code ec;
    auto s = current(ec);
    if (!s) {
        return error(ec);
    }
    return s->read_nowait(id, from, max_entries, max_bytes);
}

result<stream_info> reopening_store::info(stream_id id) {
    std::error_code ec;
    auto s = current(ec);
    if (!s) {
        return error(ec);
    }
    return s->info(id);
}

result<offset> reopening_store::trim(stream_id id, offset floor) {
    std::error_code ec;
    auto s = current(ec);
    if (!s) {
        return error(ec);
    }
    return s->trim(id, floor);
}

std::vector<stream_id> reopening_store::list_streams() {
    std::error_code ec;
    auto s = current(ec);
    return s ? s->list_streams() : std::vector<stream_id>{};
}

std::optional<corruption_info> reopening_store::last_corruption() const {
    std::error_code ec;
    auto s = current(ec);
    return s ? s->last_corruption() : std::nullopt;
}

store_stats reopening_store::stats() const {
    std::error_code ec;
    auto s = current(ec);
    return s ? s->stats() : store_stats{};
}

bool reopening_store::failed() const {
    const std::lock_guard lock(mu_);
    return !closed_ && (!inner_ || inner_->failed());
}

}  // namespace nereus::storage
