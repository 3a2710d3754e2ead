#pragma once

// The state behind a `producer` handle: admission (the bounded pending queue and its blocked
// senders), routing over partitions, and one partition_state per partition (its broker-side
// producer id, connection, sequence ids, the batch being built and the SEND frames awaiting
// their SEND_RECEIPT, kept encoded so a reconnect re-sends them byte for byte, same sequence
// ids, in order).
//
// Ownership: shared by the producer handles and by its own coroutines; the client holds it
//   weakly (entity). Connections hold each partition's listener weakly.
// Thread-safety: strand-confined (the handle's initiators post to the client's strand).

#include "nereus/client/detail/client_impl.h"
#include "nereus/client/detail/completion.h"
#include "nereus/client/message.h"
#include "nereus/client/message_id.h"
#include "nereus/client/options.h"
#include "nereus/proto/commands.h"

#include <boost/asio/steady_timer.hpp>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace nereus::proto::pb {
class MessageMetadata;
class SingleMessageMetadata;
}  // namespace nereus::proto::pb

namespace nereus::client::detail {

class producer_impl final : public entity, public std::enable_shared_from_this<producer_impl> {
public:
    producer_impl(std::shared_ptr<client_impl> client, producer_options options, std::string topic);
    ~producer_impl() override;

    // Looks the topic up (partitions) and registers every partition's producer.
    static asio::awaitable<result<void>> open(std::shared_ptr<producer_impl> self);

    void send(outgoing_message m, completion<message_id> done);
    void flush(completion<void> done);
    static asio::awaitable<result<void>> close(std::shared_ptr<producer_impl> self);

    void tick(steady::time_point now) override;
    asio::awaitable<result<void>> close_from_client() override;

    [[nodiscard]] const std::string& topic() const noexcept { return topic_; }
    [[nodiscard]] const std::string& name() const noexcept { return name_; }
    [[nodiscard]] std::int64_t last_sequence_id() const noexcept { return last_sequence_id_; }
    [[nodiscard]] const std::shared_ptr<client_impl>& client() const noexcept { return client_; }

    // Connection callbacks, per partition (through a listener that holds this weakly).
    void on_send_receipt(std::size_t p, const proto::pb::BaseCommand& cmd);
    void on_send_error(std::size_t p, const proto::pb::BaseCommand& cmd);
    void on_lost(std::size_t p);

private:
    struct send_op {  // one SEND frame: a batch or a single message
        std::uint64_t sequence_id = 0;
        std::uint64_t highest_sequence_id = 0;
        std::int32_t num_messages = 1;
        bool batched = false;
        std::vector<std::byte> frame;
        std::vector<completion<message_id>> callbacks;
        steady::time_point deadline;
    };
    struct partition_state;
    struct blocked_send {
        outgoing_message m;
        completion<message_id> done;
        steady::time_point deadline;
    };
    struct flush_waiter {
        // Per partition: the sequence id of its last op when flush() was called (or none).
        std::vector<std::optional<std::uint64_t>> last;
        completion<void> done;
    };

    static asio::awaitable<result<void>> connect_partition(std::shared_ptr<producer_impl> self,
                                                           std::size_t p);
    static asio::awaitable<void> reconnect(std::shared_ptr<producer_impl> self, std::size_t p);
    static asio::awaitable<void> batch_timer(std::shared_ptr<producer_impl> self,
                                             std::size_t p,
                                             std::uint64_t generation);
    void admit(outgoing_message m, completion<message_id> done);
    std::size_t route(const outgoing_message& m);
    void add_to_partition(std::size_t p, outgoing_message m, completion<message_id> done);
    void flush_batch(std::size_t p);
    void enqueue(std::size_t p, send_op op);
    void complete_op(send_op& op, const result<message_id>& first);
    void fail_all(std::error_code ec);
    void released(std::uint32_t n);
    void check_flush_waiters();
    [[nodiscard]] steady::time_point send_deadline(steady::time_point now) const;

    std::shared_ptr<client_impl> client_;
    producer_options options_;
    std::string topic_;
    std::string name_;
    std::vector<std::unique_ptr<partition_state>> partitions_;
    std::uint32_t pending_ = 0;  // messages admitted and not yet completed
    std::deque<blocked_send> blocked_;
    std::vector<flush_waiter> flush_waiters_;
    std::size_t round_robin_ = 0;
    std::int64_t last_sequence_id_ = -1;
    bool closed_ = false;
    proto::command_writer writer_;
    std::unique_ptr<proto::pb::MessageMetadata> metadata_;
    std::unique_ptr<proto::pb::SingleMessageMetadata> single_;
    std::vector<std::byte> compress_scratch_;
};

}  // namespace nereus::client::detail
