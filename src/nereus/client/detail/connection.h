#pragma once

// One TCP connection to one broker, shared by every producer and consumer of the client that
// talks to that broker (the client's pool holds it, keyed by "host:port").
//
// open() connects and handshakes (CONNECT → CONNECTED, the broker's max_message_size applied
// to the encoder and decoder). Then a read loop routes frames: responses by request id to the
// request's waiter (SUCCESS, ERROR, PRODUCER_SUCCESS, LOOKUP/PARTITIONED_METADATA responses,
// ACK_RESPONSE, GET_LAST_MESSAGE_ID_RESPONSE), SEND_RECEIPT/SEND_ERROR/CLOSE_PRODUCER to the
// producer registered under the producer id, MESSAGE/CLOSE_CONSUMER/ACTIVE_CONSUMER_CHANGE to
// the consumer registered under the consumer id; PING is answered with PONG. A writer drains
// out() after flush(). tick() (called by the client every 100 ms) fails requests past their
// deadline with errc::timeout and sends PING after keep_alive_interval of silence, dropping
// the connection after twice that.
// When the connection is lost, every waiting request fails with errc::disconnected and every
// registered producer/consumer is told (on_connection_lost) so it can reconnect.
//
// Ownership: shared (pool, producers, consumers); listeners are held weakly.
// Thread-safety: strand-confined to the client's strand.

#include "nereus/base/result.h"
#include "nereus/client/completion.h"
#include "nereus/client/detail/completion.h"
#include "nereus/client/options.h"
#include "nereus/proto/commands.h"
#include "nereus/proto/frame_decoder.h"

#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace nereus::proto::pb {
class BaseCommand;
}  // namespace nereus::proto::pb

namespace nereus::client::detail {

using steady = std::chrono::steady_clock;
using command_ptr = std::shared_ptr<const proto::pb::BaseCommand>;

struct endpoint {
    std::string host;
    std::uint16_t port = 6650;
    [[nodiscard]] std::string key() const { return host + ":" + std::to_string(port); }
    friend bool operator==(const endpoint&, const endpoint&) = default;
};

// "pulsar://host:port" (port defaults to 6650); errc::invalid_argument otherwise.
[[nodiscard]] result<endpoint> parse_service_url(std::string_view url);

class producer_listener {
public:
    virtual ~producer_listener() = default;
    virtual void on_send_receipt(const proto::pb::BaseCommand& cmd) = 0;
    virtual void on_send_error(const proto::pb::BaseCommand& cmd) = 0;
    virtual void on_closed_by_broker() = 0;
    virtual void on_connection_lost() = 0;
};

class consumer_listener {
public:
    virtual ~consumer_listener() = default;
    virtual void on_message(const proto::frame_view& f) = 0;
    virtual void on_closed_by_broker() = 0;
    virtual void on_connection_lost() = 0;
};

class connection : public std::enable_shared_from_this<connection> {
public:
    connection(strand_type ex, const client_options& options, endpoint ep);
    ~connection();
    connection(const connection&) = delete;
    connection& operator=(const connection&) = delete;

    // TCP connect + CONNECT/CONNECTED within connection_timeout; starts the loops.
    asio::awaitable<result<void>> open();

    // Sends the frame `build` appends (build(out, writer) → result<size_t>) and completes with
    // the response command for `request_id` (an ERROR response becomes a broker_category
    // error). Fails at once when the frame cannot be encoded or the connection is closed.
    using build_fn =
        std::function<result<std::size_t>(proto::frame_buffer&, proto::command_writer&)>;
    void request(std::uint64_t request_id, const build_fn& build, completion<command_ptr> done);
    asio::awaitable<result<command_ptr>> request(std::uint64_t request_id, build_fn build);

    // Appends a frame without a response (FLOW, ACK without receipt, REDELIVER, SEND, ...).
    result<void> send(const build_fn& build);
    // Appends already-encoded frame bytes (a producer's re-send).
    void send_raw(std::span<const std::byte> frame);

    void add_producer(std::uint64_t id, std::weak_ptr<producer_listener> l);
    void remove_producer(std::uint64_t id);
    void add_consumer(std::uint64_t id, std::weak_ptr<consumer_listener> l);
    void remove_consumer(std::uint64_t id);

    void tick(steady::time_point now);
    void close();

    [[nodiscard]] bool usable() const noexcept { return ready_ && !closed_; }
    [[nodiscard]] const endpoint& peer() const noexcept { return peer_; }
    [[nodiscard]] std::int32_t protocol_version() const noexcept { return protocol_version_; }
    // The broker's limit: its CONNECTED.max_message_size, or Pulsar's 5 MiB when it sent none.
    [[nodiscard]] std::uint32_t max_message_size() const noexcept { return max_message_size_; }
    // Whether the broker announced max_message_size in CONNECTED.
    [[nodiscard]] bool max_message_size_announced() const noexcept { return announced_; }
    [[nodiscard]] proto::command_writer& writer() noexcept { return writer_; }

    // Called once when the connection is lost or closed (the pool forgets it).
    std::function<void(connection*)> on_gone;

private:
    asio::awaitable<result<void>> handshake();
    asio::awaitable<void> read_loop();
    asio::awaitable<void> write_loop();
    asio::awaitable<result<proto::frame_view>> read_frame();
    void dispatch(const proto::frame_view& f);
    void lost(std::error_code why);
    void flush();

    struct waiter {
        completion<command_ptr> done;
        steady::time_point deadline;
    };

    strand_type ex_;
    client_options options_;
    endpoint peer_;
    asio::ip::tcp::socket socket_;
    asio::steady_timer wake_;
    proto::frame_decoder decoder_;
    proto::command_writer writer_;
    std::vector<std::byte> rbuf_;
    std::size_t begin_ = 0;
    std::size_t end_ = 0;
    proto::frame_buffer pending_;
    proto::frame_buffer inflight_;
    bool writing_ = false;
    bool ready_ = false;
    bool closed_ = false;
    std::int32_t protocol_version_ = 0;
    std::uint32_t max_message_size_ = 5 * 1024 * 1024;
    bool announced_ = false;
    steady::time_point last_received_;
    bool ping_outstanding_ = false;
    std::unordered_map<std::uint64_t, waiter> waiters_;
    std::unordered_map<std::uint64_t, std::weak_ptr<producer_listener>> producers_;
    std::unordered_map<std::uint64_t, std::weak_ptr<consumer_listener>> consumers_;
};

}  // namespace nereus::client::detail
