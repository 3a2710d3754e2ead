#include "nereus/broker/topic.h"

#include "nereus/base/assert.h"
#include "nereus/base/wake_batch.h"
#include "nereus/broker/logger.h"
#include "nereus/proto/server_error.h"

#include <fmt/format.h>

#include <atomic>
#include <boost/asio/post.hpp>
#include <chrono>

namespace nereus::broker {

topic::topic(topic_name name,
             std::shared_ptr<topic_store> store,
             boost::asio::any_io_executor ex,
             const broker_options& options,
             blocking_pool* pool,
             topic_backend* backend)
    : name_(std::move(name)),
      full_(name_.full()),
      store_(std::move(store)),
      ex_(std::move(ex)),
      options_(options),
      pool_(pool),
      compaction_(backend != nullptr
                      ? std::make_shared<topic_compaction>(full_, store_, *backend, pool)
                      : nullptr) {}

void topic::wait_not_busy(std::unique_lock<std::mutex>& lock, const std::string& name) {
    busy_cv_.wait(lock, [&] { return !busy_.contains(name); });
}

std::string topic::generate_name() {
    // Unique per process start: the start time tells two runs apart, the counter two producers.
    static const auto start = std::chrono::duration_cast<std::chrono::milliseconds>(
                                  std::chrono::system_clock::now().time_since_epoch())
                                  .count();
    static std::atomic<std::uint64_t> counter{0};
    return fmt::format("nereus-{:x}-{}", start, counter.fetch_add(1));
}

result<producer_grant> topic::add_producer(std::optional<std::string> name,
                                           access_mode mode,
                                           std::function<void()> on_granted,
                                           std::function<void()> on_closed) {
    std::lock_guard lock(mu_);
    if (mode == access_mode::exclusive_with_fencing) {
        return nereus::error(proto::error_kind::not_allowed);
    }
    if (name && !name->empty()) {
        for (const auto& [t, p] : producers_) {
            (void)t;
            if (p.name == *name) {
                return nereus::error(proto::error_kind::producer_busy);
            }
        }
    }
    bool exclusive_present = false;
    for (const auto& [t, p] : producers_) {
        (void)t;
        exclusive_present = exclusive_present || p.mode != access_mode::shared;
    }
    producer_grant g;
    g.name = (name && !name->empty()) ? *name : generate_name();
    switch (mode) {
        case access_mode::shared:
            if (exclusive_present) {
                return nereus::error(proto::error_kind::producer_busy);
            }
            break;
        case access_mode::exclusive:
            if (!producers_.empty()) {
                return nereus::error(proto::error_kind::producer_busy);
            }
            break;
        case access_mode::wait_for_exclusive:
            if (!producers_.empty()) {
                g.token = next_token_++;
                g.ready = false;
                waiters_.push_back({g.token, g.name, std::move(on_granted), std::move(on_closed)});
                return g;
            }
            break;
        case access_mode::exclusive_with_fencing:
            break;
    }
    g.token = next_token_++;
    producers_.emplace(g.token, producer_entry{g.name, mode, std::move(on_closed)});
    return g;
}

void topic::close_clients() {
    std::vector<std::function<void()>> closers;
    {
        std::lock_guard lock(mu_);
        for (const auto& [t, p] : producers_) {
            (void)t;
            if (p.on_closed) {
                closers.push_back(p.on_closed);
            }
        }
        for (const auto& w : waiters_) {
            if (w.on_closed) {
                closers.push_back(w.on_closed);
            }
        }
    }
    for (const auto& c : closers) {
        c();
    }
    for (const auto& s : open_subscriptions()) {
        s->disconnect_consumers();
    }
}

void topic::remove_producer(std::uint64_t token) {
    std::function<void()> grant;
    {
        std::lock_guard lock(mu_);
        if (producers_.erase(token) == 0) {
            std::erase_if(waiters_, [&](const waiter& w) { return w.token == token; });
            return;
        }
        if (producers_.empty() && !waiters_.empty()) {
            auto w = std::move(waiters_.front());
            waiters_.pop_front();
            producers_.emplace(w.token, producer_entry{w.name, access_mode::wait_for_exclusive,
                                                       std::move(w.on_closed)});
            grant = std::move(w.on_granted);
        }
    }
    if (grant) {
        grant();
    }
}

void topic::append(std::span<const std::byte> entry, const append_info& info, append_done done) {
    if (lost_.load()) {
        done(nereus::error(proto::error_kind::unavailable));
        return;
    }
    // Stored inline in the store's append_callback (no allocation per message): 24 bytes
    // besides `done`, so the counts are two 32-bit halves (an entry is far below 4 GiB). A raw
    // `this`, not a shared_ptr (two atomic operations per message on a count both the SEND's
    // thread and the storage thread write): the caller keeps the topic alive until `done` has
    // run (Requires in topic.h), so a reference is taken only for the dispatchers' wake-up
    // (once per burst), before `done`, and used after it.
    // Relocatable by copying when `done` is: the rest is a pointer and integers.
    const bool relocatable = done.relocatable();
    auto finish = [self = this, done = std::move(done),
                   batch = std::max<std::uint32_t>(1, info.batch_size),
                   size = static_cast<std::uint32_t>(std::min<std::size_t>(
                       entry.size(), UINT32_MAX))](result<position> r) mutable {
        std::shared_ptr<topic> notify;
        if (r.has_value()) {
            self->msg_in_ += batch;
            self->bytes_in_ += size;
            // Completions run on a storage thread: wake the dispatchers from an io
            // thread, once per burst. The flag is cleared before the subscriptions are
            // read, so an append completing after that posts a new wake-up. A load first
            // (no read-modify-write while a wake-up is already posted): seq_cst, so a load
            // that sees `true` precedes the handler's clearing store, and the handler's reads
            // of the stream's end come after this append's.
            if (!self->notify_posted_.load() && !self->notify_posted_.exchange(true)) {
                notify = self->shared_from_this();
            }
        }
        // `self` may be gone once `done` returns (it may drop the caller's last reference).
        done(std::move(r));
        if (notify) {
            // In the storage committer's group, once after its last completion
            // (base/wake_batch.h), after the producer's receipt wake-up registered in `done`.
            auto wake = [](void* t) {
                static_cast<topic*>(t)->post_notify();
            };
            if (!wake_batch::defer(notify, wake)) {
                notify->post_notify();
            }
        }
    };
    static_assert(append_callback::fits_inline<decltype(finish)>);
    store_->append(entry, info, append_callback(relocatable_if{relocatable}, std::move(finish)));
}

void topic::post_notify() {
    boost::asio::post(ex_, [self = shared_from_this()] {
        self->notify_posted_.store(false);
        self->notify_subscriptions();
    });
}

void topic::notify_subscriptions() {
    std::vector<std::shared_ptr<subscription>> subs;
    {
        std::lock_guard lock(mu_);
        for (auto& [n, s] : subscriptions_) {
            (void)n;
            subs.push_back(s);
        }
    }
    for (auto& s : subs) {
        s->notify_new_entries();
    }
}

result<std::shared_ptr<subscription>> topic::subscribe(const std::string& name,
                                                       const subscription_start& start,
                                                       bool durable) {
    std::unique_lock lock(mu_);
    wait_not_busy(lock, name);
    if (auto it = subscriptions_.find(name); it != subscriptions_.end()) {
        if (it->second->durable() != durable) {
            return nereus::error(proto::error_kind::consumer_busy);
        }
        it->second->set_parked(false);  // a reader reconnecting after its seek
        return it->second;
    }
    if (!durable) {
        // Readers that seeked and never came back: drop their parked cursors.
        std::erase_if(subscriptions_, [](const auto& kv) {
            return kv.second->parked() && kv.second->consumer_count() == 0;
        });
    }
    // The store call runs without the mutex (io threads take it); the name stays busy.
    busy_.insert(name);
    lock.unlock();
    auto c = store_->open_subscription(name, start, durable);
    lock.lock();
    busy_.erase(name);
    busy_cv_.notify_all();
    if (!c) {
        return nereus::error(c.error());
    }
    auto s = std::make_shared<subscription>(name, std::move(*c), ex_, options_, pool_);
    subscriptions_.emplace(name, s);
    return s;
}

void topic::release_subscription(const std::shared_ptr<subscription>& s) {
    if (s->durable() || s->consumer_count() > 0) {
        return;
    }
    std::lock_guard lock(mu_);
    if (auto it = subscriptions_.find(s->name()); it != subscriptions_.end() && it->second == s) {
        subscriptions_.erase(it);
    }
}

result<void> topic::delete_subscription(const std::shared_ptr<subscription>& s) {
    std::unique_lock lock(mu_);
    wait_not_busy(lock, s->name());
    if (s->durable()) {
        busy_.insert(s->name());
        lock.unlock();
        auto r = store_->delete_subscription(s->name());
        lock.lock();
        busy_.erase(s->name());
        busy_cv_.notify_all();
        if (!r) {
            return r;
        }
    }
    if (auto it = subscriptions_.find(s->name()); it != subscriptions_.end() && it->second == s) {
        subscriptions_.erase(it);
    }
    return {};
}

topic_registry::topic_registry(topic_backend& backend,
                               boost::asio::any_io_executor ex,
                               const broker_options& options,
                               blocking_pool* pool)
    : backend_(backend), exs_{std::move(ex)}, options_(options), pool_(pool) {}

topic_registry::topic_registry(topic_backend& backend,
                               std::vector<boost::asio::any_io_executor> exs,
                               const broker_options& options,
                               blocking_pool* pool)
    : backend_(backend), exs_(std::move(exs)), options_(options), pool_(pool) {
    NEREUS_ASSERT(!exs_.empty(), "topic_registry needs an executor");
}

result<std::shared_ptr<topic>> topic_registry::open(const topic_name& name,
                                                    bool create,
                                                    bool explicit_create) {
    const std::string full = name.full();
    std::unique_lock lock(mu_);
    // A concurrent open of the same name (another connection, or the admin API): wait for it.
    opening_cv_.wait(lock, [&] { return !opening_.contains(full); });
    if (auto it = topics_.find(full); it != topics_.end()) {
        return it->second;
    }
    // Recovery runs without the mutex (other topics open meanwhile); the name stays busy.
    opening_.insert(full);
    lock.unlock();
    auto store =
        backend_.open_topic(full, create && (options_.auto_create_topics || explicit_create));
    lock.lock();
    opening_.erase(full);
    opening_cv_.notify_all();
    if (!store) {
        return nereus::error(store.error());
    }
    auto t = std::make_shared<topic>(name, std::move(*store), exs_[next_ex_++ % exs_.size()],
                                     options_, pool_, &backend_);
    topics_.emplace(full, t);
    NEREUS_LOG(broker_log(), info, "topic opened topic={}", full);
    return t;
}

std::vector<std::string> topic_registry::topics_in_namespace(const std::string& ns) const {
    const std::string prefix = "persistent://" + ns + "/";
    std::vector<std::string> out;
    for (auto& n : backend_.topic_names()) {
        if (n.rfind(prefix, 0) == 0) {
            out.push_back(std::move(n));
        }
    }
    return out;
}

std::size_t topic::producer_count() {
    std::lock_guard lock(mu_);
    return producers_.size() + waiters_.size();
}

std::vector<std::shared_ptr<subscription>> topic::open_subscriptions() {
    std::lock_guard lock(mu_);
    std::vector<std::shared_ptr<subscription>> out;
    for (const auto& [n, s] : subscriptions_) {
        (void)n;
        out.push_back(s);
    }
    return out;
}

std::vector<std::shared_ptr<topic>> topic_registry::open_topics() const {
    std::lock_guard lock(mu_);
    std::vector<std::shared_ptr<topic>> out;
    for (const auto& [n, t] : topics_) {
        (void)n;
        out.push_back(t);
    }
    return out;
}

result<void> topic_registry::remove(
    const std::string& full,
    const std::function<result<void>(const std::shared_ptr<topic>&)>& prepare) {
    std::unique_lock lock(mu_);
    opening_cv_.wait(lock, [&] { return !opening_.contains(full); });
    std::shared_ptr<topic> t;
    if (auto it = topics_.find(full); it != topics_.end()) {
        t = it->second;
    }
    if (prepare) {
        if (auto r = prepare(t); !r) {
            return r;
        }
    }
    if (auto r = backend_.delete_topic(full); !r) {
        if (t && t->lost()) {
            topics_.erase(full);  // its clients were sent away: a later open starts afresh
        }
        return r;
    }
    topics_.erase(full);
    NEREUS_LOG(broker_log(), info, "topic removed topic={}", full);
    return {};
}

void topic_registry::release_lost(const std::string& full) {
    std::shared_ptr<topic> t;
    {
        std::lock_guard lock(mu_);
        if (auto it = topics_.find(full); it != topics_.end()) {
            t = it->second;
            topics_.erase(it);
        }
    }
    if (!t) {
        return;
    }
    t->mark_lost();
    t->close_clients();
    NEREUS_LOG(broker_log(), warn, "topic lost (ownership gone): {}; clients disconnected", full);
}

void topic_registry::close_all() {
    std::map<std::string, std::shared_ptr<topic>> topics;
    {
        std::lock_guard lock(mu_);
        topics.swap(topics_);
    }
    for (auto& [n, t] : topics) {
        if (auto r = t->store().close(); !r) {
            NEREUS_LOG(broker_log(), warn, "topic close failed topic={} error={}", n,
                       r.error().message());
        }
    }
}

}  // namespace nereus::broker
