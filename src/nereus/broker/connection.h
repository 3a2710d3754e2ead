#pragma once

// One client connection speaking the Pulsar binary protocol.
//
// A read loop coroutine (frames decoded in place from one bounded receive buffer, every read
// with a deadline: the handshake timeout before CONNECT, two keep-alive intervals after it), a
// keep-alive coroutine (PING every interval) and an on-demand writer coroutine draining a
// bounded queue of encoded frames. All three and every handler run on the connection's strand,
// so the connection's state needs no locks. Handlers are synchronous, except PRODUCER,
// SUBSCRIBE, UNSUBSCRIBE and SEEK: their blocking storage calls run on the blocking pool and the
// read loop awaits them (resuming on the strand) before it decodes the next frame, so the
// connection's commands keep their order while the io thread serves other connections.
// Completions from the storage side (append durable, ack durable) and deliveries from
// subscriptions are posted onto the strand.
//
// Replies follow protocol.md: SEND_RECEIPT only once the append is durable and in SEND order
// per producer; SEND_ERROR{ChecksumError} keeps the connection; malformed frames, frames over
// the limit, commands before CONNECT and SENDs for unknown producers close it (after an ERROR
// where a reply is possible); unknown or unsupported commands get a typed ERROR.
//
// Ownership: shared_ptr, kept alive by its coroutines and pending completions; registered
//   weakly with the server. Owns its socket, producers and consumer attachments.
// Thread-safety: strand-confined, except stop(), queue_append_done() (storage thread; each
//   producer's done_mu guards its hand-over queue) and the consumer_sink calls (any thread;
//   they post onto the strand, or run at once when already on it).
// Durability: never confirms an append or an ack before the backend reported it durable.

#include "nereus/base/latency_histogram.h"
#include "nereus/broker/logger.h"
#include "nereus/broker/options.h"
#include "nereus/broker/subscription.h"
#include "nereus/broker/topic.h"
#include "nereus/proto/commands.h"
#include "nereus/proto/frame_decoder.h"

#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <chrono>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>

namespace nereus::broker {

class blocking_pool;

// What connections share (owned by the server, outlives every connection).
struct broker_context {
    const broker_options& options;
    topic_registry& topics;
    std::string service_url;  // pulsar://host:port for LOOKUP answers
    // Where blocking storage / metadata calls run (nullptr: inline, for tests without one).
    blocking_pool* pool = nullptr;
};

class connection : public std::enable_shared_from_this<connection>, public consumer_sink {
public:
    using strand_type = boost::asio::strand<boost::asio::io_context::executor_type>;

    // `publish_latency` (may be null; owned by the server, outlives the connection, written
    // only from this connection's io thread and the others pinned to it) receives each
    // successful SEND's time from the socket read that brought it to its receipt's queueing.
    connection(strand_type strand,
               boost::asio::ip::tcp::socket socket,
               broker_context& ctx,
               latency_histogram* publish_latency = nullptr);
    connection(const connection&) = delete;
    connection& operator=(const connection&) = delete;
    ~connection() override;

    // Spawns the coroutines on the strand.
    void start();
    // Graceful stop (any thread): stop reading, finish in-flight appends and queued writes
    // (bounded by stop_timeout), detach producers/consumers, close the socket.
    void stop();
    // True once the socket is closed and everything is detached.
    bool finished() const { return finished_.load(); }

    // consumer_sink
    void deliver(std::uint64_t consumer_id,
                 const dispatch_entry& e,
                 std::uint32_t redelivery_count) override;
    void deliver_batch(std::uint64_t consumer_id, std::vector<delivery>&& batch) override;
    void close_consumer_by_broker(std::uint64_t consumer_id) override;
    void active_consumer_change(std::uint64_t consumer_id, bool active) override;

private:
    struct pending_send {
        std::uint64_t sequence_id = 0;
        std::uint64_t highest_sequence_id = 0;
        std::chrono::steady_clock::time_point received_at{};  // its socket read's time
        std::optional<result<position>> outcome;
        proto::server_error error_code = proto::server_error::unknown_error;  // when !outcome
        std::string error_message;
    };
    // The producer's SENDs awaiting receipts, in SEND order: a FIFO over one vector whose
    // capacity is reused (a std::deque allocates and frees a 512-byte chunk every few
    // messages). pop_front() advances a head index; the consumed prefix is erased (moved down,
    // no allocation) once it is at least half the vector.
    class send_queue {
    public:
        bool empty() const { return head_ == v_.size(); }
        std::size_t size() const { return v_.size() - head_; }
        pending_send& front() { return v_[head_]; }
        pending_send& operator[](std::size_t i) { return v_[head_ + i]; }
        void push_back(pending_send&& s) { v_.push_back(std::move(s)); }
        void pop_front() {
            v_[head_] = pending_send{};
            if (++head_ == v_.size()) {
                v_.clear();
                head_ = 0;
            } else if (head_ >= 64 && head_ * 2 >= v_.size()) {
                v_.erase(v_.begin(), v_.begin() + static_cast<std::ptrdiff_t>(head_));
                head_ = 0;
            }
        }

    private:
        std::vector<pending_send> v_;
        std::size_t head_ = 0;
    };
    // A finished append, handed from the storage thread to the strand (queue_append_done).
    struct append_done {
        std::uint64_t serial = 0;
        result<position> r;
    };
    struct producer_state : std::enable_shared_from_this<producer_state> {
        std::uint64_t id = 0;
        std::shared_ptr<topic> t;
        std::uint64_t token = 0;
        std::string name;
        bool ready = false;
        bool closing = false;
        std::optional<std::uint64_t> close_request_id;
        std::uint64_t front_serial = 0;
        send_queue pending;
        // The hand-over from the storage thread: per producer, so that a finished append
        // touches only its producer (no connection reference count per message); one drain is
        // posted per burst (a storage group), through `conn`.
        std::weak_ptr<connection> conn;
        std::mutex done_mu;
        std::vector<append_done> done_queue;  // guarded by done_mu
        bool done_posted = false;             // guarded by done_mu: a drain is posted, not started
        std::vector<append_done> done_work;   // strand: the batch being drained (capacity reused)
        // Lifetime without a reference count per SEND (each would be taken on the strand and
        // released on the storage thread, moving its cache line between cores per message):
        // the producer holds itself (`keep`) from the time it is attached until it is detached
        // (no more SENDs) and every append it issued has been handed over (release_if_drained).
        // A completion holds a plain pointer. appends_issued is written on the strand only,
        // before detached is set under done_mu, and read under done_mu only after that.
        std::uint64_t appends_issued = 0;
        std::uint64_t appends_handed_over = 0;  // guarded by done_mu
        bool detached = false;                  // guarded by done_mu
        std::shared_ptr<producer_state> keep;   // guarded by done_mu once attached
    };
    struct consumer_state {
        std::shared_ptr<topic> t;
        std::shared_ptr<subscription> sub;
        std::shared_ptr<consumer> c;
    };

    boost::asio::awaitable<void> run();
    boost::asio::awaitable<void> keepalive();
    boost::asio::awaitable<void> writer();
    boost::asio::awaitable<void> finish(bool graceful);

    // Returns false when the connection must stop reading (close after flushing). Sets
    // deferred_ instead of handling a command with blocking work (handle_blocking does it).
    bool handle(const proto::frame_view& f);
    boost::asio::awaitable<void> handle_blocking(const proto::frame_view& f);
    // Runs `work` on the blocking pool (inline without one); resumes on the strand.
    boost::asio::awaitable<void> offload(std::function<void()> work);
    void handle_connect(const proto::frame_view& f);
    void handle_lookup(const proto::frame_view& f);
    void handle_partitioned_metadata(const proto::frame_view& f);
    boost::asio::awaitable<void> handle_producer(const proto::frame_view& f);
    bool handle_send(const proto::frame_view& f);
    void handle_close_producer(const proto::frame_view& f);
    boost::asio::awaitable<void> handle_subscribe(const proto::frame_view& f);
    void handle_flow(const proto::frame_view& f);
    void handle_ack(const proto::frame_view& f);
    void handle_redeliver(const proto::frame_view& f);
    void handle_close_consumer(const proto::frame_view& f);
    boost::asio::awaitable<void> handle_unsubscribe(const proto::frame_view& f);
    boost::asio::awaitable<void> handle_seek(const proto::frame_view& f);
    void handle_get_last_message_id(const proto::frame_view& f);
    boost::asio::awaitable<void> handle_get_last_message_id_compacted(const proto::frame_view& f);
    void reply_last_message_id(std::uint64_t req,
                               const consumer_state& st,
                               const compacted_view* view);
    void handle_consumer_stats(const proto::frame_view& f);
    void handle_get_topics_of_namespace(const proto::frame_view& f);

    // Strand: records the outcome of the SEND with `serial` (receipts follow in flush_receipts).
    void on_append_done(producer_state& p, std::uint64_t serial, result<position> r);
    // Called on the storage thread for each finished append: queues it on its producer and
    // posts one drain to the strand per burst (a group commit finishes up to a window of
    // appends back to back; base/wake_batch.h).
    // `p` is alive: it keeps itself until its issued appends were all handed over.
    static void queue_append_done(producer_state* p, std::uint64_t serial, result<position> r);
    // The calling thread's run of finished appends of one producer, staged inside a
    // wake_batch scope (a storage group's completions) and handed to the producer's queue under
    // one done_mu lock per run instead of one per append (flush_staged_done).
    struct done_staging {
        std::shared_ptr<producer_state> p;  // null: nothing staged
        std::vector<append_done> items;
    };
    static done_staging& staged_done();  // thread-local
    // Hands this thread's staged run to its producer (the argument is unused: a
    // wake_batch::defer function).
    static void flush_staged_done(void* unused);
    // Queues `items` on `p` under one lock; posts a drain (deferred to the enclosing
    // wake_batch scope, if any) unless one is posted.
    static void hand_over_done(const std::shared_ptr<producer_state>& p,
                               std::vector<append_done>& items);
    static void post_drain(producer_state& p);  // any thread: drain_append_done(p) on the strand
    // Strand: `p` now takes SENDs (holds itself). detach_producer: it takes no more (removed
    // from producers_); it lets itself go once its issued appends were handed over.
    static void attach_producer(const std::shared_ptr<producer_state>& p);
    static void detach_producer(producer_state& p);
    // done_mu held: the self-reference, once `p` is detached and every issued append was handed
    // over (destroy it after unlocking); null otherwise.
    static std::shared_ptr<producer_state> release_if_drained_locked(producer_state& p);
    void drain_append_done(const std::shared_ptr<producer_state>& p);  // strand
    void flush_receipts(const std::shared_ptr<producer_state>& p);
    void detach_consumer(std::uint64_t consumer_id);
    void detach_all();

    template <class F>
    void write_frame(F&& build);
    void enqueue(proto::frame_buffer&& frame);
    // Counts n more queued bytes; closes the connection over max_write_queue_bytes.
    void note_queued(std::size_t n);
    void error_reply(std::uint64_t request_id, std::error_code ec, std::string_view message);
    void close_now();
    std::chrono::steady_clock::time_point read_deadline() const;

    strand_type strand_;
    boost::asio::ip::tcp::socket socket_;
    broker_context& ctx_;
    boost::asio::steady_timer read_timer_;
    boost::asio::steady_timer keepalive_timer_;
    std::string peer_;

    proto::frame_decoder decoder_;
    proto::command_writer writer_;
    std::vector<std::byte> rbuf_;  // bounded by max frame size
    std::size_t rbuf_begin_ = 0;
    std::size_t rbuf_end_ = 0;

    std::deque<proto::frame_buffer> queue_;
    // write_frame() appends to the last queued buffer while it is smaller than this.
    static constexpr std::size_t kCoalesceBytes = std::size_t{16} << 10;
    std::size_t queued_bytes_ = 0;
    bool writing_ = false;
    // The writer's gather lists (members so a write round allocates nothing).
    std::vector<proto::frame_buffer> write_batch_;
    std::vector<boost::asio::const_buffer> write_bufs_;
    // Written frames' buffers, cleared and kept for the next frames (capacity reused, so a
    // steady stream of frames allocates nothing). Bounded: kMaxSpareBuffers buffers of at most
    // kMaxSpareCapacity bytes each; larger buffers are freed.
    static constexpr std::size_t kMaxSpareBuffers = 128;
    static constexpr std::size_t kMaxSpareCapacity = std::size_t{256} << 10;
    std::vector<proto::frame_buffer> spare_;
    proto::frame_buffer take_buffer();
    void recycle(proto::frame_buffer&& b);

    bool connected_ = false;
    bool deferred_ = false;  // the frame being handled needs handle_blocking
    bool stop_requested_ = false;
    bool closed_ = false;
    std::atomic<bool> finished_{false};
    std::int32_t peer_version_ = 0;
    bool peer_partial_producer_ = false;
    std::chrono::steady_clock::time_point accepted_at_;
    std::chrono::steady_clock::time_point last_received_;
    latency_histogram* publish_latency_ = nullptr;

    std::map<std::uint64_t, std::shared_ptr<producer_state>> producers_;
    std::set<std::uint64_t> recently_closed_producers_;
    std::map<std::uint64_t, consumer_state> consumers_;
};

// Encodes one frame with the connection's writer and queues it. Strand-confined.
template <class F>
void connection::write_frame(F&& build) {
    if (closed_) {
        return;
    }
    if (!queue_.empty() && queue_.back().size() < kCoalesceBytes) {
        // Not yet taken by the writer: append this frame to the last queued buffer, so a
        // burst of small replies (a group's SEND_RECEIPTs) costs no buffer per frame and
        // leaves in one write.
        proto::frame_buffer& last = queue_.back();
        const std::size_t before = last.size();
        auto r = build(last);
        if (!r) {
            last.resize(before);
            NEREUS_LOG(broker_log(), debug, "frame not sent peer={} error={}", peer_,
                       r.error().message());
            return;
        }
        note_queued(last.size() - before);
        return;
    }
    proto::frame_buffer b = take_buffer();
    auto r = build(b);
    if (!r) {
        // Strict sending refused it (e.g. the peer's version does not know the command).
        NEREUS_LOG(broker_log(), debug, "frame not sent peer={} error={}", peer_,
                   r.error().message());
        recycle(std::move(b));
        return;
    }
    enqueue(std::move(b));
}

}  // namespace nereus::broker
