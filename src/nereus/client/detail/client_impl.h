#pragma once

// The state behind a `client` handle: the executor (own io_context + threads, or the
// application's), the connection pool (one connection per broker address), topic lookup and
// partitioned metadata, id generators, the 100 ms tick that drives timeouts, and the registry
// of open producers/consumers that close() closes.
//
// Ownership: shared by the client handles and by every producer/consumer/reader (they keep it
//   alive). Producers and consumers are registered weakly.
// Thread-safety: the public initiators post to the strand; everything else is strand-confined.

#include "nereus/client/completion.h"
#include "nereus/client/detail/completion.h"
#include "nereus/client/detail/connection.h"
#include "nereus/client/options.h"

#include <atomic>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

namespace nereus::client::detail {

// A producer or consumer as the client sees it.
class entity {
public:
    virtual ~entity() = default;
    virtual void tick(steady::time_point now) = 0;
    // Closes it (as its own close() does); completes when done.
    virtual asio::awaitable<result<void>> close_from_client() = 0;
};

class client_impl : public std::enable_shared_from_this<client_impl> {
public:
    // Owns an io_context run by options.io_threads threads.
    explicit client_impl(client_options options);
    // Runs on `ex`.
    client_impl(asio::any_io_executor ex, client_options options);
    ~client_impl();
    client_impl(const client_impl&) = delete;
    client_impl& operator=(const client_impl&) = delete;

    // Starts the tick loop (after construction, when shared_from_this works).
    void start();

    [[nodiscard]] const strand_type& strand() const noexcept { return ex_; }
    [[nodiscard]] const client_options& options() const noexcept { return options_; }

    std::uint64_t next_request_id() noexcept { return next_request_id_++; }
    std::uint64_t next_producer_id() noexcept { return next_producer_id_++; }
    std::uint64_t next_consumer_id() noexcept { return next_consumer_id_++; }

    // A ready connection to `ep` from the pool, opening one if needed (concurrent callers share
    // one attempt).
    asio::awaitable<result<std::shared_ptr<connection>>> get_connection(const endpoint& ep);
    // LOOKUP of `topic` (Redirects followed up to max_lookup_redirects) and a connection to the
    // broker that serves it.
    asio::awaitable<result<std::shared_ptr<connection>>> connection_for(const std::string& topic);
    // PARTITIONED_METADATA: 0 for a non-partitioned topic.
    asio::awaitable<result<std::uint32_t>> partitions(const std::string& topic);
    // GET_TOPICS_OF_NAMESPACE (persistent topics) on the service broker.
    asio::awaitable<result<std::vector<std::string>>> topics_of_namespace(const std::string& ns);

    // The max_message_size the broker announced in CONNECTED on the most recently opened
    // connection; 0 before any (or when no broker announced one). Readable from any thread.
    [[nodiscard]] std::uint32_t announced_max_message_size() const noexcept {
        return max_message_size_.load(std::memory_order_relaxed);
    }

    void add_entity(const std::shared_ptr<entity>& e);
    void remove_entity(const entity* e);

    asio::awaitable<result<void>> close_all();
    [[nodiscard]] bool closed() const noexcept { return closed_; }

    // Blocking: close_all() then stop the owned threads. Requires: not on the client's threads;
    // with an application executor, its io_context must be running on another thread.
    void shutdown();

private:
    static asio::awaitable<void> tick_loop(std::weak_ptr<client_impl> weak);
    asio::awaitable<result<std::shared_ptr<connection>>> lookup_once(const std::string& topic);

    client_options options_;
    std::unique_ptr<asio::io_context> own_ioc_;
    std::optional<asio::executor_work_guard<asio::io_context::executor_type>> work_;
    std::vector<std::thread> threads_;
    strand_type ex_;
    std::optional<endpoint> service_;
    std::unordered_map<std::string, std::shared_ptr<connection>> pool_;
    std::unordered_map<std::string, std::vector<completion<std::shared_ptr<connection>>>>
        connecting_;
    std::vector<std::weak_ptr<entity>> entities_;
    std::uint64_t next_request_id_ = 1;
    std::uint64_t next_producer_id_ = 1;
    std::uint64_t next_consumer_id_ = 1;
    bool closed_ = false;
    bool shut_down_ = false;
    std::atomic<std::uint32_t> max_message_size_{0};
    std::shared_ptr<asio::steady_timer> tick_timer_;
};

}  // namespace nereus::client::detail
