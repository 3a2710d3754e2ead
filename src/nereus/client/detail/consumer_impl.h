#pragma once

// The state behind a `consumer` (and a `reader`) handle: one topic_state per topic partition
// (its broker-side consumer id, connection, FLOW permit accounting, reconnect), the shared
// receive queue and waiting receivers, and the settlement trackers: delivered entries (ack
// timeout, batch-index bitsets), pending negative acks, and the lazily created dead-letter and
// retry-letter producers.
//
// Ownership: shared by the handles and by its own coroutines; the client holds it weakly
//   (entity); connections hold each topic's listener weakly.
// Thread-safety: strand-confined (the handles' initiators post to the client's strand).

#include "nereus/client/detail/client_impl.h"
#include "nereus/client/detail/completion.h"
#include "nereus/client/message.h"
#include "nereus/client/message_id.h"
#include "nereus/client/options.h"
#include "nereus/client/pattern.h"
#include "nereus/proto/batch_codec.h"
#include "nereus/proto/commands.h"

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <tuple>
#include <variant>
#include <vector>

namespace nereus::client::detail {

class producer_impl;

class consumer_impl final : public entity, public std::enable_shared_from_this<consumer_impl> {
public:
    // A consumer (reader == nullopt) or a reader.
    consumer_impl(std::shared_ptr<client_impl> client,
                  consumer_options options,
                  std::optional<reader_options> reader);
    ~consumer_impl() override;

    // Resolves the topics (partitions), subscribes every one and grants FLOW permits.
    static asio::awaitable<result<void>> open(std::shared_ptr<consumer_impl> self);

    void receive(completion<message> done);
    void ack(const message_id& id, bool cumulative, completion<void> done);
    // acknowledge() from any thread (thread-safe): the ack joins an inbox in call order, and
    // only the first ack into an empty inbox posts a drain to the strand, so a burst of acks
    // costs one post. The post is made under the inbox's lock: an operation the same thread
    // starts afterwards (close, seek, nack, ...) is posted behind the drain that carries it.
    void enqueue_ack(const message_id& id, bool cumulative, completion<void> done);
    void nack(const message_id& id);
    void redeliver_unacknowledged();
    // REDELIVER_UNACKNOWLEDGED of `id`'s entry now, confirmed by a GET_LAST_MESSAGE_ID answer.
    static asio::awaitable<result<void>> redeliver(std::shared_ptr<consumer_impl> self,
                                                   message_id id);
    static asio::awaitable<result<void>> reconsume_later(std::shared_ptr<consumer_impl> self,
                                                         message m,
                                                         std::chrono::milliseconds delay);
    static asio::awaitable<result<void>> seek(std::shared_ptr<consumer_impl> self,
                                              std::variant<message_id, system_time> where);
    static asio::awaitable<result<bool>> has_message_available(std::shared_ptr<consumer_impl> self);
    static asio::awaitable<result<void>> unsubscribe(std::shared_ptr<consumer_impl> self);
    static asio::awaitable<result<void>> close(std::shared_ptr<consumer_impl> self);

    void tick(steady::time_point now) override;
    asio::awaitable<result<void>> close_from_client() override;

    [[nodiscard]] const std::string& subscription() const noexcept { return options_.subscription; }
    // The topics (partitions) the consumer reads now; thread-safe (a pattern consumer's set
    // changes as topics appear and disappear).
    [[nodiscard]] std::vector<std::string> topic_names() const;
    // A reader's one topic (fixed once opened).
    [[nodiscard]] const std::string& reader_topic() const noexcept;
    [[nodiscard]] const std::shared_ptr<client_impl>& client() const noexcept { return client_; }

    // Connection callbacks, per topic (through a listener holding this weakly).
    void on_message(std::size_t t, const proto::frame_view& f);
    void on_closed(std::size_t t, bool connection_lost);

private:
    struct topic_state;
    struct entry_key {
        std::uint32_t topic;
        std::int64_t ledger;
        std::int64_t entry;
        friend auto operator<=>(const entry_key&, const entry_key&) = default;
    };
    struct entry_state {
        std::int32_t batch_size = 0;        // 0: not batched
        std::vector<std::int64_t> unacked;  // batch bitset, 1 = not yet acknowledged
        steady::time_point ack_deadline = steady::time_point::max();
    };

    static asio::awaitable<result<void>> subscribe_topic(std::shared_ptr<consumer_impl> self,
                                                         std::size_t t);
    static asio::awaitable<result<void>> subscribe_topic_once(std::shared_ptr<consumer_impl> self,
                                                              std::size_t t);
    static asio::awaitable<void> resubscribe(std::shared_ptr<consumer_impl> self, std::size_t t);
    // Pattern subscriptions: list the namespace again, subscribe to new matching topics and
    // close the consumers of topics no longer listed.
    static asio::awaitable<void> rediscover(std::shared_ptr<consumer_impl> self);
    static asio::awaitable<void> remove_topic(std::shared_ptr<consumer_impl> self, std::size_t t);
    std::size_t add_topic_state(const std::string& name, std::int32_t partition, bool from_pattern);
    void publish_names();
    static asio::awaitable<void> dead_letter(std::shared_ptr<consumer_impl> self, message m);
    static asio::awaitable<result<std::shared_ptr<producer_impl>>> side_producer(
        std::shared_ptr<consumer_impl> self, bool retry);

    void deliver(message m);
    void consumed(std::uint32_t t, std::uint32_t n);
    std::optional<std::uint32_t> topic_of(const message_id& id) const;
    void send_redeliver(std::uint32_t t, const std::vector<message_id>& ids);
    // Ack grouping (consumer.h). send_acks: one ACK of `ids` whose answer completes `waiters`;
    // flush_acks: sends the acks waiting for an answer now; fail_waiting_acks: completes them
    // with `ec` and forgets the ACKs in flight (a connection went; their answers are ignored).
    void send_acks(std::uint32_t t,
                   bool cumulative,
                   std::span<const proto::message_id> ids,
                   std::vector<completion<void>> waiters);
    void flush_acks(std::uint32_t t);
    // The strand's side of enqueue_ack: ack() for every ack in the inbox, in order.
    void drain_acks();
    void fail_waiting_acks(std::uint32_t t, std::error_code ec);
    void drop_topic_state(std::uint32_t t);
    void fail_receivers(std::error_code ec);
    [[nodiscard]] std::string dlq_topic() const;
    [[nodiscard]] std::string retry_topic() const;

    std::shared_ptr<client_impl> client_;
    consumer_options options_;
    std::optional<reader_options> reader_;
    std::vector<std::string> names_;  // full names of every topic partition (as topics_)
    mutable std::mutex active_mu_;
    std::vector<std::string> active_;  // names_ without the removed ones (topic_names())
    std::optional<topic_pattern> pattern_;
    steady::time_point next_discovery_ = steady::time_point::max();
    bool discovering_ = false;
    std::vector<std::unique_ptr<topic_state>> topics_;
    std::deque<message> queue_;
    std::deque<completion<message>> receivers_;
    std::map<entry_key, entry_state> entries_;
    std::map<entry_key, steady::time_point> nacks_;
    std::shared_ptr<producer_impl> dlq_producer_;
    std::shared_ptr<producer_impl> retry_producer_;
    bool closed_ = false;
    struct queued_ack {
        message_id id;
        bool cumulative = false;
        completion<void> done;
    };
    // A mutex and a swapped vector rather than a lock-free list: one short critical section per
    // ack, no node allocation, and the drained vector's capacity is reused.
    std::mutex ack_mu_;
    std::vector<queued_ack> ack_inbox_;  // guarded by ack_mu_
    bool ack_drain_posted_ = false;      // guarded by ack_mu_
    std::vector<queued_ack> ack_spare_;  // strand: the last drained inbox, kept for its capacity
    proto::batch_reader batch_;
    std::vector<std::byte> scratch_;
};

}  // namespace nereus::client::detail
