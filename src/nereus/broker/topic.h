#pragma once

// A topic as the broker serves it: its store (topic_backend.h), its producers (access modes,
// names) and its subscriptions; and the registry of open topics.
//
// Producers: Shared producers coexist; an Exclusive producer needs the topic to itself (else
// ProducerBusy) and keeps Shared ones out; WaitForExclusive queues until the topic is free and
// is then granted (its connection answers PRODUCER_SUCCESS late). A user-provided producer name
// that is already connected is refused with ProducerBusy; otherwise names are generated,
// unique per process start.
//
// Ownership: topics are owned by the registry and shared with connections; a topic owns its
//   subscriptions (durable ones stay while the topic is open, non-durable ones go with their
//   last consumer).
// Thread-safety: thread-safe (one mutex per topic for producers and the subscription map; the
//   registry has its own). Neither mutex is held across a blocking store call: a subscription
//   name being created or deleted, and a topic name being opened, are marked busy instead, and
//   a second caller for the same name waits (on its blocking-pool thread) for the first, so a
//   name is never created or opened twice. Storage completions never take the mutexes (they
//   post to the io executor). The blocking calls (subscribe, delete_subscription,
//   topic_registry::open / remove) run on the blocking pool or an admin thread, never on an io
//   thread.
// Durability: append completions are durable (the store's); see subscription.h for acks.

#include "nereus/base/result.h"
#include "nereus/broker/options.h"
#include "nereus/broker/subscription.h"
#include "nereus/broker/topic_backend.h"
#include "nereus/broker/topic_compaction.h"
#include "nereus/broker/topic_name.h"

#include <atomic>
#include <boost/asio/any_io_executor.hpp>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace nereus::broker {

class blocking_pool;

enum class access_mode : std::int32_t {
    shared = 0,
    exclusive = 1,
    wait_for_exclusive = 2,
    exclusive_with_fencing = 3,
};

struct producer_grant {
    std::uint64_t token = 0;  // identifies this producer on the topic
    std::string name;
    bool ready = true;  // false: WaitForExclusive queued; on_granted runs later
};

class topic : public std::enable_shared_from_this<topic> {
public:
    topic(topic_name name,
          std::shared_ptr<topic_store> store,
          boost::asio::any_io_executor ex,
          const broker_options& options,
          blocking_pool* pool = nullptr,
          topic_backend* backend = nullptr);

    const topic_name& name() const { return name_; }
    // The topic's compaction (topic_compaction.h); nullptr when the topic was made without a
    // backend (tests that build a topic by hand).
    const std::shared_ptr<topic_compaction>& compaction() const { return compaction_; }
    const std::string& full_name() const { return full_; }
    topic_store& store() { return *store_; }

    // Registers a producer. `on_granted` runs (any thread, topic mutex not held) when a queued
    // WaitForExclusive producer becomes the exclusive one; `on_closed` when the broker closes
    // the producer (close_clients: ownership lost, forced delete) — its connection then sends
    // CLOSE_PRODUCER and removes it. Errors: producer_busy, not_allowed.
    [[nodiscard]] result<producer_grant> add_producer(std::optional<std::string> name,
                                                      access_mode mode,
                                                      std::function<void()> on_granted,
                                                      std::function<void()> on_closed = {});
    void remove_producer(std::uint64_t token);

    // Appends (durable completion, any thread) and wakes the subscriptions' dispatchers.
    // Requires: the caller keeps this topic alive until `done` has run (a producer's completion
    // holds its producer, which holds the topic); the completion does not hold it per message.
    void append(std::span<const std::byte> entry, const append_info& info, append_done done);

    // Finds or creates the subscription (blocking: call it on the blocking pool). Errors:
    // consumer_busy (non-durable name clash), store errors.
    [[nodiscard]] result<std::shared_ptr<subscription>> subscribe(const std::string& name,
                                                                  const subscription_start& start,
                                                                  bool durable);
    // Drops a non-durable subscription without consumers (after its last consumer left).
    void release_subscription(const std::shared_ptr<subscription>& s);
    // Deletes the subscription (UNSUBSCRIBE). Durable before it returns (blocking).
    [[nodiscard]] result<void> delete_subscription(const std::shared_ptr<subscription>& s);

    // Admin API / stats: producers attached, the subscriptions opened so far (durable ones not
    // yet subscribed to since the topic opened are only in the store), messages and bytes whose
    // append was durable since the topic opened.
    std::size_t producer_count();
    std::vector<std::shared_ptr<subscription>> open_subscriptions();
    std::uint64_t messages_in() const { return msg_in_.load(); }

    // The backend lost this topic (doc/ownership.md): every later append fails, producers are
    // closed after their next send error, consumers are disconnected (they look it up again).
    void mark_lost() { lost_.store(true); }
    bool lost() const { return lost_.load() || store_->ownership_lost(); }
    // Tells every client to go (the "lost ownership" close path, also a forced delete):
    // consumers get CLOSE_CONSUMER, producers and queued WaitForExclusive producers
    // CLOSE_PRODUCER (each from its own connection's strand, after its in-flight sends were
    // answered in order). Non-blocking; call mark_lost() first so that nothing more appends.
    void close_clients();
    std::uint64_t bytes_in() const { return bytes_in_.load(); }

private:
    struct producer_entry {
        std::string name;
        access_mode mode = access_mode::shared;
        std::function<void()> on_closed;
    };
    struct waiter {
        std::uint64_t token = 0;
        std::string name;
        std::function<void()> on_granted;
        std::function<void()> on_closed;
    };
    std::string generate_name();
    void post_notify();  // any thread: posts notify_subscriptions() to ex_
    void notify_subscriptions();
    // Waits until no creation/deletion of `name` is in progress. Requires: lock holds mu_.
    void wait_not_busy(std::unique_lock<std::mutex>& lock, const std::string& name);

    const topic_name name_;
    const std::string full_;
    const std::shared_ptr<topic_store> store_;
    boost::asio::any_io_executor ex_;
    const broker_options& options_;
    blocking_pool* const pool_;
    const std::shared_ptr<topic_compaction> compaction_;

    std::mutex mu_;
    std::condition_variable busy_cv_;
    std::set<std::string> busy_;    // guarded by mu_: subscriptions being created or deleted
    std::uint64_t next_token_ = 1;  // guarded by mu_
    std::map<std::uint64_t, producer_entry> producers_;                   // guarded by mu_
    std::deque<waiter> waiters_;                                          // guarded by mu_
    std::map<std::string, std::shared_ptr<subscription>> subscriptions_;  // guarded by mu_
    std::atomic<std::uint64_t> msg_in_{0};
    std::atomic<std::uint64_t> bytes_in_{0};
    // True while a notify_subscriptions() is posted and has not started: a burst of append
    // completions (one group commit) posts one wake-up, not one per message.
    std::atomic<bool> notify_posted_{false};
    std::atomic<bool> lost_{false};
};

// The open topics of one broker.
// Thread-safety: thread-safe. open() may block on the backend (topic recovery).
class topic_registry {
public:
    topic_registry(topic_backend& backend,
                   boost::asio::any_io_executor ex,
                   const broker_options& options,
                   blocking_pool* pool = nullptr);
    // Topics opened get these executors round-robin (the server's per-thread io_contexts, so
    // the topics' dispatch work spreads over the io threads). `exs` must not be empty.
    topic_registry(topic_backend& backend,
                   std::vector<boost::asio::any_io_executor> exs,
                   const broker_options& options,
                   blocking_pool* pool = nullptr);

    // `explicit_create` (admin API): create even when auto-creation of topics is off.
    // Blocking (topic recovery): call it on the blocking pool or an admin thread. Concurrent
    // opens of one name open it once (the others wait for the first).
    [[nodiscard]] result<std::shared_ptr<topic>> open(const topic_name& name,
                                                      bool create,
                                                      bool explicit_create = false);
    // Full names of known topics in `tenant/ns` (backend's view, i.e. also unopened ones).
    std::vector<std::string> topics_in_namespace(const std::string& ns) const;
    // Closes every open topic's store (graceful stop).
    void close_all();
    // The backend lost `full` (topic_backend::set_lost_handler): forgets the topic and closes
    // its clients (topic::close_clients: CLOSE_CONSUMER, CLOSE_PRODUCER). Non-blocking.
    void release_lost(const std::string& full);

    // Admin API: the backend, the open topics, and deleting a topic. remove() holds the
    // registry lock throughout (no open() races it): `prepare` gets the open topic (nullptr
    // when not open) and may refuse (its error is returned, nothing changed); then the backend
    // deletes the topic durably and the registry forgets it (also when the delete failed
    // after `prepare` marked the topic lost: a later open makes a fresh one).
    topic_backend& backend() const { return backend_; }
    std::vector<std::shared_ptr<topic>> open_topics() const;
    [[nodiscard]] result<void> remove(
        const std::string& full,
        const std::function<result<void>(const std::shared_ptr<topic>&)>& prepare);

private:
    topic_backend& backend_;
    std::vector<boost::asio::any_io_executor> exs_;
    const broker_options& options_;
    blocking_pool* const pool_;
    mutable std::mutex mu_;
    std::size_t next_ex_ = 0;  // guarded by mu_
    std::condition_variable opening_cv_;
    std::map<std::string, std::shared_ptr<topic>> topics_;  // guarded by mu_
    std::set<std::string> opening_;                         // guarded by mu_: being opened
};

}  // namespace nereus::broker
