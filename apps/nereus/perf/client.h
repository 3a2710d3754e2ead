#pragma once

// The perf tool's minimal Pulsar client: one TCP connection per producer or consumer, speaking
// the binary protocol through nereus::proto over Boost.Asio C++20 coroutines.
//
//   connection  CONNECT/CONNECTED, LOOKUP (Connect answers to another broker and Redirects are
//               followed, at most 20 hops), then a read loop (frames to a frame_handler, PINGs
//               answered with PONG) and an on-demand writer that drains a reusable buffer.
//   producer    PRODUCER, SEND with sequence ids (batches: num_messages_in_batch +
//               SingleMessageMetadata), receipts matched in order, an in-flight window, fixed-rate
//               pacing by schedule (latency measured from the intended send time).
//   consumer    SUBSCRIBE, FLOW permits (refilled at half the queue), MESSAGE (batches opened),
//               grouped individual or cumulative ACKs with request ids and ACK_RESPONSE (v17+).
//
// It is a load generator, not a client library: no reconnects, no partitioned topics, no
// compression; any broker error or lost connection fails the run.
// Ownership: a producer/consumer owns its connection; both must outlive their coroutines (the
//   run owns them until io_context::run() returned).
// Thread-safety: confined to the one thread running the io_context.
// Allocation: after setup, sending, receipts, messages and acks reuse buffers and rings sized
//   at construction (protobuf keeps its strings' capacity).

#include "nereus/base/result.h"
#include "nereus/proto/batch_codec.h"
#include "nereus/proto/commands.h"
#include "nereus/proto/frame_decoder.h"
#include "nereus/proto/message_scan.h"
#include "nereus/proto/send_encoder.h"

#include "apps/nereus/perf/options.h"
#include "apps/nereus/perf/stats.h"
#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace nereus::proto::pb {
class MessageMetadata;
class SingleMessageMetadata;
}  // namespace nereus::proto::pb

namespace nereus::app::perf {

namespace asio = boost::asio;
using steady = std::chrono::steady_clock;

class frame_handler {
public:
    virtual ~frame_handler() = default;
    // Every frame after setup (PING already answered). Views are valid during the call only.
    virtual void on_frame(const proto::frame_view& f) = 0;
    // The connection ended (read error, EOF or a protocol problem) without close().
    virtual void on_lost(const std::string& why) = 0;
    // With connection::scan_messages(true): a MESSAGE frame read by proto::scan_message_frame
    // (checksum verified) instead of on_frame(). Views are valid during the call only.
    virtual void on_message_frame(const proto::message_frame& /*m*/) {}
};

class connection {
public:
    explicit connection(asio::io_context& ioc);
    ~connection();
    connection(const connection&) = delete;
    connection& operator=(const connection&) = delete;

    // Connects to `service`, looks `topic` up (following Redirects / a Connect to another
    // broker) and leaves the connection handshaken with the broker that serves the topic.
    asio::awaitable<result<void>> open(const endpoint& service, std::string_view topic);

    // Setup phase (before start()): writes out() and reads frames until a `want` frame for
    // `request_id` (ERROR with that request id fails). The frame stays valid until the next read.
    asio::awaitable<result<const proto::frame_view*>> request(proto::command_type want,
                                                              std::uint64_t request_id);

    // Starts the read loop (frames go to `h`) and the writer.
    void start(frame_handler& h);
    // Frames appended to out() are written by the writer after flush().
    proto::frame_buffer& out() noexcept { return pending_; }
    void flush();
    void close();

    [[nodiscard]] bool closed() const noexcept { return closed_; }
    [[nodiscard]] proto::command_writer& writer() noexcept { return writer_; }
    [[nodiscard]] std::int32_t protocol_version() const noexcept { return protocol_version_; }
    [[nodiscard]] const std::string& error_text() const noexcept { return error_; }
    // Consumers: MESSAGE frames of the common shape go to on_message_frame() without protobuf
    // (any other frame, and any MESSAGE the scanner declines, still goes through the decoder).
    void scan_messages(bool on) noexcept { scan_messages_ = on; }
    // Socket reads completed by the read loop so far: frames delivered with the same count
    // arrived in the same read (a consumer takes one clock reading per read, not per message).
    [[nodiscard]] std::uint64_t reads() const noexcept { return reads_; }

private:
    asio::awaitable<result<void>> connect_to(const endpoint& ep);
    asio::awaitable<result<void>> write_now();
    asio::awaitable<result<const proto::frame_view*>> next_frame();
    asio::awaitable<void> read_loop();
    asio::awaitable<void> write_loop();
    void consume_frame() noexcept;
    void compact(std::size_t need);
    void lost(std::string why);
    result<void> fail(std::string why);

    asio::io_context& ioc_;
    asio::ip::tcp::socket socket_;
    asio::steady_timer wake_;
    proto::frame_decoder decoder_;
    proto::command_writer writer_;
    proto::frame_view frame_;
    std::vector<std::byte> rbuf_;
    std::size_t begin_ = 0;
    std::size_t end_ = 0;
    std::size_t frame_size_ = 0;  // bytes of the last returned frame, dropped on the next read
    proto::frame_buffer pending_;
    proto::frame_buffer inflight_;
    frame_handler* handler_ = nullptr;
    endpoint peer_;
    std::int32_t protocol_version_ = 0;
    bool closed_ = false;
    bool started_ = false;
    bool scan_messages_ = false;
    std::uint64_t reads_ = 0;
    std::string error_;
};

struct producer_config {
    std::string topic;
    std::uint32_t index = 0;     // over all producers of the run (payload header)
    std::uint64_t messages = 0;  // 0 = until stopped
    double rate = 0;             // msg/s of this producer; 0 = max
    std::uint32_t size = 1024;
    std::uint32_t max_pending = 1000;
    std::uint32_t batch_max = 1000;  // <= 1: no batching
    std::uint32_t batch_max_bytes = 4 * 1024 * 1024;
    std::chrono::nanoseconds batch_delay{1'000'000};
};

class producer final : public frame_handler {
public:
    producer(asio::io_context& ioc, perf_stats& stats, producer_config config);
    ~producer() override;

    asio::awaitable<result<void>> open(const endpoint& service);
    // Sends until the quota, `stop_at` or stop(); then waits up to `drain` for the receipts of
    // everything sent (fails the producer if some are still missing).
    asio::awaitable<void> run(steady::time_point start,
                              steady::time_point stop_at,
                              std::chrono::nanoseconds drain);
    void stop();
    void close() { conn_.close(); }

    [[nodiscard]] bool failed() const noexcept { return !error_.empty(); }
    [[nodiscard]] const std::string& error_text() const noexcept { return error_; }
    [[nodiscard]] std::uint64_t in_flight() const noexcept { return in_flight_; }

    void on_frame(const proto::frame_view& f) override;
    void on_lost(const std::string& why) override;

private:
    // `now`: the clock read of this message's loop turn (== intended at max rate).
    void add_message(std::uint64_t i, steady::time_point intended, steady::time_point now);
    void flush_batch();
    // Records `at`, the encoding time of the last n messages added (their SEND frame).
    void mark_sent(std::uint32_t n, steady::time_point at);
    void fail(std::string why);
    void wake();
    asio::awaitable<void> wait_until(steady::time_point t);

    struct pending_send {
        std::uint64_t sequence_id;
        std::uint32_t messages;
    };

    perf_stats& stats_;
    producer_config config_;
    connection conn_;
    asio::steady_timer timer_;
    bool waiting_ = false;
    bool stop_ = false;
    std::string error_;
    std::string name_;
    proto::send_encoder encoder_;  // SEND frames (the name set once the producer is open)
    std::unique_ptr<proto::pb::SingleMessageMetadata> single_;
    std::vector<std::byte> payload_;
    std::vector<std::byte> batch_;
    std::uint32_t batch_count_ = 0;
    std::uint64_t batch_first_seq_ = 0;
    steady::time_point batch_deadline_;
    std::uint64_t next_seq_ = 0;
    // Rings sized max_pending: sends in flight (in order) and each message's intended time.
    std::vector<pending_send> sends_;
    std::size_t sends_head_ = 0;
    std::size_t sends_size_ = 0;
    std::vector<std::int64_t> intended_;  // steady ns, per message in flight or batched
    std::vector<std::int64_t> sent_at_;   // steady ns its SEND was encoded, same ring as intended_
    std::size_t intended_head_ = 0;
    std::uint64_t in_flight_ = 0;  // messages sent or batched, not receipted
    std::int64_t steady_base_ns_ = 0;
    std::uint64_t realtime_base_ns_ = 0;
    // The receipts' clock: read once per socket read that brought receipts (conn_.reads()),
    // not once per receipt; a read's receipts arrived together.
    std::uint64_t receipt_clock_read_ = ~std::uint64_t{0};
    steady::time_point receipt_now_{};
};

struct consumer_config {
    std::string topic;
    std::string subscription;
    std::string name;
    std::int32_t sub_type = 0;
    std::int32_t initial_position = 0;
    std::uint32_t receiver_queue = 1000;
    ack_mode ack = ack_mode::individual;
    std::uint32_t ack_group_max = 1000;
    std::chrono::nanoseconds ack_group_interval{100'000'000};
    bool own_run_only = false;  // produce --consume: only this run's messages count
    bool defer_flow = false;    // open() sends no FLOW; start_flow() does
};

class consumer final : public frame_handler {
public:
    consumer(asio::io_context& ioc, perf_stats& stats, consumer_config config);
    ~consumer() override;

    asio::awaitable<result<void>> open(const endpoint& service);
    // With defer_flow: grants the first receiver_queue permits (after open()).
    void start_flow();
    // Sends grouped acks every ack_group_interval until close().
    asio::awaitable<void> ack_loop();
    void flush_acks();
    void close();

    [[nodiscard]] bool failed() const noexcept { return !error_.empty(); }
    [[nodiscard]] const std::string& error_text() const noexcept { return error_; }
    [[nodiscard]] std::uint64_t outstanding_acks() const noexcept { return outstanding_acks_; }
    [[nodiscard]] steady::time_point last_message() const noexcept { return last_message_; }

    void on_frame(const proto::frame_view& f) override;
    void on_lost(const std::string& why) override;
    void on_message_frame(const proto::message_frame& m) override;

private:
    void on_message(const proto::frame_view& f);
    // One delivered entry, from either decoding path; `md` null: unreadable (counted bad).
    void on_entry(const proto::message_id& id,
                  const proto::message_metadata_fields* md,
                  std::span<const std::byte> payload);
    // Refreshes the cached clocks once per socket read.
    void read_clocks();
    void count_payload(std::span<const std::byte> payload, std::uint64_t publish_ms);
    void fail(std::string why);

    perf_stats& stats_;
    consumer_config config_;
    connection conn_;
    asio::steady_timer timer_;
    bool closing_ = false;
    std::string error_;
    std::uint32_t permits_used_ = 0;
    std::vector<proto::message_id> ack_ids_;
    std::uint32_t unacked_messages_ = 0;  // messages covered by ack_ids_ / the cumulative id
    std::optional<proto::message_id> cumulative_;
    std::uint64_t next_ack_request_ = 1;
    std::uint64_t outstanding_acks_ = 0;
    steady::time_point last_message_{};
    std::uint64_t now_ns_ = 0;  // realtime at the current read (read_clocks())
    std::uint64_t clock_read_ = ~std::uint64_t{0};
    proto::batch_reader batch_;
};

}  // namespace nereus::app::perf
