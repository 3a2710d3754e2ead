#include "nereus/broker/connection.h"

#include "nereus/base/flush_batch.h"
#include "nereus/broker/blocking_pool.h"
#include "nereus/broker/logger.h"
#include "nereus/broker/topic_name.h"
#include "nereus/proto/errc.h"
#include "nereus/proto/protocol_version.h"
#include "nereus/proto/pulsar_api.h"

#include <algorithm>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

namespace nereus::broker {

namespace asio = boost::asio;
using asio::awaitable;
using asio::use_awaitable;
using asio::experimental::awaitable_operators::operator||;
constexpr auto tok = asio::as_tuple(use_awaitable);

namespace {

constexpr std::size_t initial_rbuf = 64 * 1024;

void log_exception(std::exception_ptr e, const std::string& peer) {
    if (!e) {
        return;
    }
    try {
        std::rethrow_exception(e);
    } catch (const std::exception& ex) {
        NEREUS_LOG(broker_log(), err, "connection coroutine failed peer={} what={}", peer,
                   ex.what());
    }
}

}  // namespace

connection::connection(strand_type strand,
                       asio::ip::tcp::socket socket,
                       broker_context& ctx,
                       latency_histogram* publish_latency)
    : strand_(std::move(strand)),
      socket_(std::move(socket)),
      ctx_(ctx),
      read_timer_(strand_),
      keepalive_timer_(strand_),
      decoder_(proto::decoder_options{ctx.options.max_message_size + proto::frame_padding, true,
                                      true,
                                      /*fast_send=*/true}),
      rbuf_(initial_rbuf) {
    publish_latency_ = publish_latency;
    boost::system::error_code ec;
    const auto ep = socket_.remote_endpoint(ec);
    peer_ = ec ? std::string("?") : ep.address().to_string() + ":" + std::to_string(ep.port());
    accepted_at_ = std::chrono::steady_clock::now();
    last_received_ = accepted_at_;
    writer_.options().max_frame_size = ctx.options.max_message_size + proto::frame_padding;
}

connection::~connection() {
    // Destroyed without detach_all (its coroutines were dropped with a stopped io_context):
    // the producers still let themselves go once their appends were handed over.
    for (auto& [id, p] : producers_) {
        (void)id;
        detach_producer(*p);
    }
}

void connection::start() {
    auto self = shared_from_this();
    asio::co_spawn(strand_, run(), [self](std::exception_ptr e) { log_exception(e, self->peer_); });
}

void connection::stop() {
    asio::post(strand_, [self = shared_from_this()] {
        if (self->stop_requested_ || self->closed_) {
            return;
        }
        self->stop_requested_ = true;
        self->read_timer_.cancel();
    });
}

std::chrono::steady_clock::time_point connection::read_deadline() const {
    auto d = connected_ ? last_received_ + 2 * ctx_.options.keepalive_interval
                        : accepted_at_ + ctx_.options.handshake_timeout;
    if (rbuf_end_ > rbuf_begin_) {
        // Part of a frame is buffered: it must keep coming.
        d = std::min(d, last_received_ + ctx_.options.frame_stall_timeout);
    }
    return d;
}

awaitable<void> connection::run() {
    auto self = shared_from_this();
    NEREUS_LOG(broker_log(), debug, "connection accepted peer={}", peer_);
    asio::co_spawn(strand_, keepalive(),
                   [self](std::exception_ptr e) { log_exception(e, self->peer_); });
    bool graceful = true;
    for (;;) {
        // Decode every complete frame in the buffer. Work the frames defer to the end of the
        // batch (base/flush_batch.h: the store's leader commit) runs when `batch` is reset,
        // always before this coroutine suspends.
        bool keep_reading = true;
        std::optional<flush_batch> batch;
        batch.emplace();
        while (keep_reading && !closed_) {
            auto step = decoder_.decode(
                std::span<const std::byte>(rbuf_.data() + rbuf_begin_, rbuf_end_ - rbuf_begin_));
            if (!step) {
                NEREUS_LOG(broker_log(), info, "closing connection peer={} malformed frame: {}",
                           peer_, step.error().message());
                if (connected_) {
                    error_reply(proto::broker_initiated_request_id, step.error(),
                                "malformed frame: " + step.error().message());
                }
                keep_reading = false;
                break;
            }
            if (!step->complete) {
                if (step->bytes_needed > rbuf_.size()) {
                    // Bounded: the decoder already refused frames above the limit.
                    std::vector<std::byte> bigger(step->bytes_needed);
                    std::copy(rbuf_.begin() + static_cast<std::ptrdiff_t>(rbuf_begin_),
                              rbuf_.begin() + static_cast<std::ptrdiff_t>(rbuf_end_),
                              bigger.begin());
                    rbuf_end_ -= rbuf_begin_;
                    rbuf_begin_ = 0;
                    rbuf_ = std::move(bigger);
                }
                break;
            }
            keep_reading = handle(step->frame);
            if (deferred_) {
                // Blocking work on the pool: the frame (in rbuf_) stays valid, and no later
                // frame of this connection is handled before it is done.
                deferred_ = false;
                batch.reset();
                co_await handle_blocking(step->frame);
                batch.emplace();
                // Our own wait does not count against the peer's liveness.
                last_received_ = std::chrono::steady_clock::now();
            }
            rbuf_begin_ += step->frame.size;
        }
        batch.reset();
        if (!keep_reading || closed_ || stop_requested_) {
            break;
        }
        // Compact, and give a large buffer back once it is empty.
        if (rbuf_begin_ == rbuf_end_) {
            rbuf_begin_ = rbuf_end_ = 0;
            if (rbuf_.size() > initial_rbuf) {
                rbuf_.assign(initial_rbuf, std::byte{0});
                rbuf_.shrink_to_fit();
            }
        } else if (rbuf_begin_ > 0 && rbuf_end_ == rbuf_.size()) {
            std::copy(rbuf_.begin() + static_cast<std::ptrdiff_t>(rbuf_begin_),
                      rbuf_.begin() + static_cast<std::ptrdiff_t>(rbuf_end_), rbuf_.begin());
            rbuf_end_ -= rbuf_begin_;
            rbuf_begin_ = 0;
        }

        read_timer_.expires_at(read_deadline());
        auto r =
            co_await (socket_.async_read_some(
                          asio::buffer(rbuf_.data() + rbuf_end_, rbuf_.size() - rbuf_end_), tok) ||
                      read_timer_.async_wait(tok));
        if (r.index() == 0) {
            auto [ec, n] = std::get<0>(r);
            if (ec) {
                if (ec != asio::error::eof && ec != asio::error::operation_aborted) {
                    NEREUS_LOG(broker_log(), debug, "read failed peer={} error={}", peer_,
                               ec.message());
                }
                graceful = false;
                break;
            }
            rbuf_end_ += n;
            last_received_ = std::chrono::steady_clock::now();
        } else {
            auto [ec] = std::get<1>(r);
            if (stop_requested_) {
                break;
            }
            if (!ec || std::chrono::steady_clock::now() >= read_deadline()) {
                NEREUS_LOG(broker_log(), info, "closing connection peer={}: {} timeout", peer_,
                           rbuf_end_ > rbuf_begin_ ? "stalled frame"
                           : connected_            ? "keep-alive"
                                                   : "handshake");
                graceful = false;
                break;
            }
        }
    }
    co_await finish(graceful);
}

awaitable<void> connection::finish(bool graceful) {
    auto self = shared_from_this();
    if (graceful && !closed_) {
        // Finish in-flight appends (receipts) and queued writes, bounded by stop_timeout.
        const auto until = std::chrono::steady_clock::now() + ctx_.options.stop_timeout;
        asio::steady_timer t(strand_);
        for (;;) {
            bool appends = false;
            for (auto& [id, p] : producers_) {
                (void)id;
                appends = appends || !p->pending.empty();
            }
            if ((!appends && queue_.empty() && !writing_) || closed_ ||
                std::chrono::steady_clock::now() >= until) {
                break;
            }
            t.expires_after(std::chrono::milliseconds(2));
            co_await t.async_wait(tok);
        }
    }
    detach_all();
    if (!closed_) {
        boost::system::error_code ec;
        socket_.shutdown(asio::ip::tcp::socket::shutdown_both, ec);
        close_now();
    }
    finished_.store(true);
    NEREUS_LOG(broker_log(), debug, "connection closed peer={}", peer_);
}

awaitable<void> connection::keepalive() {
    auto self = shared_from_this();
    while (!closed_) {
        keepalive_timer_.expires_after(ctx_.options.keepalive_interval);
        auto [ec] = co_await keepalive_timer_.async_wait(tok);
        if (ec || closed_) {
            break;
        }
        if (connected_ && proto::peer_knows(proto::command_type::ping, peer_version_)) {
            write_frame([&](proto::frame_buffer& b) { return writer_.ping(b); });
        }
    }
}

void connection::close_now() {
    if (closed_) {
        return;
    }
    closed_ = true;
    boost::system::error_code ec;
    socket_.close(ec);
    read_timer_.cancel();
    keepalive_timer_.cancel();
}

void connection::enqueue(proto::frame_buffer&& frame) {
    if (closed_) {
        return;
    }
    note_queued(frame.size());
    if (closed_) {
        return;
    }
    queue_.push_back(std::move(frame));
    if (!writing_) {
        writing_ = true;
        auto self = shared_from_this();
        asio::co_spawn(strand_, writer(),
                       [self](std::exception_ptr e) { log_exception(e, self->peer_); });
    }
}

void connection::note_queued(std::size_t n) {
    queued_bytes_ += n;
    if (queued_bytes_ > ctx_.options.max_write_queue_bytes) {
        NEREUS_LOG(broker_log(), warn, "closing connection peer={}: write queue over {} bytes",
                   peer_, ctx_.options.max_write_queue_bytes);
        close_now();
    }
}

proto::frame_buffer connection::take_buffer() {
    if (spare_.empty()) {
        return {};
    }
    proto::frame_buffer b = std::move(spare_.back());
    spare_.pop_back();
    return b;
}

void connection::recycle(proto::frame_buffer&& b) {
    if (spare_.size() < kMaxSpareBuffers && b.capacity() <= kMaxSpareCapacity) {
        b.clear();
        spare_.push_back(std::move(b));
    }
}

awaitable<void> connection::writer() {
    auto self = shared_from_this();
    auto& batch = write_batch_;
    auto& bufs = write_bufs_;
    while (!queue_.empty() && !closed_) {
        batch.clear();
        bufs.clear();
        std::size_t bytes = 0;
        while (!queue_.empty() && batch.size() < 64) {
            bytes += queue_.front().size();
            batch.push_back(std::move(queue_.front()));
            queue_.pop_front();
        }
        for (auto& b : batch) {
            bufs.emplace_back(b.data(), b.size());
        }
        auto [ec, n] = co_await asio::async_write(socket_, bufs, tok);
        queued_bytes_ -= bytes;
        for (auto& b : batch) {
            recycle(std::move(b));
        }
        if (ec) {
            NEREUS_LOG(broker_log(), debug, "write failed peer={} error={}", peer_, ec.message());
            close_now();
            break;
        }
    }
    writing_ = false;
}

void connection::error_reply(std::uint64_t request_id, std::error_code ec, std::string_view msg) {
    const auto se = proto::to_server_error(ec);
    write_frame([&](proto::frame_buffer& b) {
        return writer_.error_response(b, request_id, se, msg.empty() ? ec.message() : msg);
    });
}

// ---------------------------------------------------------------------------------------------
// Dispatch of one frame

bool connection::handle(const proto::frame_view& f) {
    using proto::command_type;
    if (!f.known_type) {
        if (!connected_) {
            error_reply(proto::broker_initiated_request_id, proto::error_kind::not_allowed,
                        "CONNECT must be the first command");
            return false;
        }
        NEREUS_LOG(broker_log(), info, "unsupported command type={} peer={}", f.raw_type, peer_);
        error_reply(proto::broker_initiated_request_id, proto::error_kind::not_allowed,
                    "unsupported command type " + std::to_string(f.raw_type));
        return true;
    }
    const auto t = f.type();
    if (!connected_ && t != command_type::connect) {
        NEREUS_LOG(broker_log(), info, "command before CONNECT type={} peer={}",
                   proto::to_string(t), peer_);
        error_reply(proto::broker_initiated_request_id, proto::error_kind::not_allowed,
                    "CONNECT must be the first command");
        return false;
    }
    switch (t) {
        case command_type::connect:
            if (connected_) {
                error_reply(proto::broker_initiated_request_id, proto::error_kind::not_allowed,
                            "already connected");
                return true;
            }
            handle_connect(f);
            return true;
        case command_type::ping:
            write_frame([&](proto::frame_buffer& b) { return writer_.pong(b); });
            return true;
        case command_type::pong:
            return true;
        case command_type::lookup:
            handle_lookup(f);
            return true;
        case command_type::partitioned_metadata:
            handle_partitioned_metadata(f);
            return true;
        case command_type::producer:
        case command_type::subscribe:
        case command_type::unsubscribe:
        case command_type::seek:
            deferred_ = true;
            return true;
        case command_type::send:
            return handle_send(f);
        case command_type::close_producer:
            handle_close_producer(f);
            return true;
        case command_type::flow:
            handle_flow(f);
            return true;
        case command_type::ack:
            handle_ack(f);
            return true;
        case command_type::redeliver_unacknowledged_messages:
            handle_redeliver(f);
            return true;
        case command_type::close_consumer:
            handle_close_consumer(f);
            return true;
        case command_type::get_last_message_id:
            handle_get_last_message_id(f);
            return true;
        case command_type::consumer_stats:
            handle_consumer_stats(f);
            return true;
        case command_type::get_topics_of_namespace:
            handle_get_topics_of_namespace(f);
            return true;
        case command_type::get_schema: {
            const auto req = f.command().getschema().request_id();
            write_frame(
                [&](proto::frame_buffer& b) { return writer_.get_schema_response_error(b, req); });
            return true;
        }
        case command_type::get_or_create_schema: {
            const auto req = f.command().getorcreateschema().request_id();
            write_frame([&](proto::frame_buffer& b) {
                return writer_.get_or_create_schema_response(b, req, {});
            });
            return true;
        }
        case command_type::tc_client_connect_request: {
            const auto req = f.command().tcclientconnectrequest().request_id();
            write_frame([&](proto::frame_buffer& b) {
                return writer_.tc_client_connect_response(b, req,
                                                          proto::server_error::not_allowed_error,
                                                          "transactions are not supported");
            });
            return true;
        }
        case command_type::auth_response:
            return true;  // we never send AUTH_CHALLENGE
        default:
            // A broker→client command sent to us.
            NEREUS_LOG(broker_log(), info, "unexpected command type={} peer={}",
                       proto::to_string(t), peer_);
            error_reply(proto::broker_initiated_request_id, proto::error_kind::not_allowed,
                        std::string("unexpected command ") + std::string(proto::to_string(t)));
            return true;
    }
}

awaitable<void> connection::handle_blocking(const proto::frame_view& f) {
    switch (f.type()) {
        case proto::command_type::producer:
            co_await handle_producer(f);
            break;
        case proto::command_type::subscribe:
            co_await handle_subscribe(f);
            break;
        case proto::command_type::unsubscribe:
            co_await handle_unsubscribe(f);
            break;
        case proto::command_type::seek:
            co_await handle_seek(f);
            break;
        case proto::command_type::get_last_message_id:
            co_await handle_get_last_message_id_compacted(f);
            break;
        default:
            break;
    }
}

awaitable<void> connection::offload(std::function<void()> work) {
    if (ctx_.pool == nullptr) {
        work();
        co_return;
    }
    auto* pool = ctx_.pool;
    co_await asio::async_initiate<const asio::use_awaitable_t<>&, void()>(
        [pool, &work](auto handler) {
            pool->post([h = std::move(handler), &work]() mutable {
                try {
                    work();
                } catch (const std::exception& ex) {
                    NEREUS_LOG(broker_log(), err, "blocking job failed what={}", ex.what());
                }
                auto ex = asio::get_associated_executor(h);
                asio::post(ex, std::move(h));
            });
        },
        use_awaitable);
}

void connection::detach_all() {
    for (auto& [id, p] : producers_) {
        (void)id;
        if (!p->closing) {
            p->closing = true;
            p->t->remove_producer(p->token);
        }
    }
    for (auto& [id, p] : producers_) {
        (void)id;
        detach_producer(*p);
    }
    producers_.clear();
    std::vector<std::uint64_t> ids;
    for (auto& [id, c] : consumers_) {
        (void)c;
        ids.push_back(id);
    }
    for (auto id : ids) {
        detach_consumer(id);
    }
}

// ---------------------------------------------------------------------------------------------
// consumer_sink

void connection::deliver(std::uint64_t consumer_id,
                         const dispatch_entry& e,
                         std::uint32_t redelivery_count) {
    auto send = [this, consumer_id, redelivery_count](const dispatch_entry& d) {
        auto it = consumers_.find(consumer_id);
        if (it == consumers_.end()) {
            return;  // closed meanwhile: the subscription already took the entry back
        }
        proto::message_id id;
        id.ledger_id = d.pos.ledger_id;
        id.entry_id = d.pos.entry_id;
        if (it->second.t->name().partition) {
            id.partition = static_cast<std::int32_t>(*it->second.t->name().partition);
        }
        write_frame([&](proto::frame_buffer& b) {
            return writer_.message(b, consumer_id, id, redelivery_count, d.remaining, d.bytes);
        });
    };
    if (strand_.running_in_this_thread()) {
        send(e);
        return;
    }
    asio::post(strand_, [self = shared_from_this(), send, e] { send(e); });
}

void connection::deliver_batch(std::uint64_t consumer_id, std::vector<delivery>&& batch) {
    // One strand hand-off for the whole round; the frames are written back to back (coalesced
    // into the queued write buffers by write_frame).
    auto send = [this, consumer_id](const std::vector<delivery>& b) {
        auto it = consumers_.find(consumer_id);
        if (it == consumers_.end()) {
            return;  // closed meanwhile: the subscription already took the entries back
        }
        proto::message_id id;
        if (it->second.t->name().partition) {
            id.partition = static_cast<std::int32_t>(*it->second.t->name().partition);
        }
        for (const auto& d : b) {
            id.ledger_id = d.entry.pos.ledger_id;
            id.entry_id = d.entry.pos.entry_id;
            write_frame([&](proto::frame_buffer& buf) {
                return writer_.message(buf, consumer_id, id, d.redelivery_count, d.entry.remaining,
                                       d.entry.bytes);
            });
        }
    };
    if (strand_.running_in_this_thread()) {
        send(batch);
        return;
    }
    asio::post(strand_, [self = shared_from_this(), send, b = std::move(batch)] { send(b); });
}

void connection::close_consumer_by_broker(std::uint64_t consumer_id) {
    auto run = [this, consumer_id] {
        auto it = consumers_.find(consumer_id);
        if (it == consumers_.end()) {
            return;
        }
        // The subscription already dropped the consumer; only forget it here.
        consumers_.erase(it);
        if (proto::peer_accepts_broker_close(peer_version_)) {
            write_frame(
                [&](proto::frame_buffer& b) { return writer_.close_consumer(b, consumer_id); });
        } else {
            close_now();
        }
    };
    if (strand_.running_in_this_thread()) {
        run();
        return;
    }
    asio::post(strand_, [self = shared_from_this(), run] { run(); });
}

void connection::active_consumer_change(std::uint64_t consumer_id, bool active) {
    // Always posted: a change decided during SUBSCRIBE goes out after its SUCCESS.
    asio::post(strand_, [self = shared_from_this(), consumer_id, active] {
        if (!self->consumers_.contains(consumer_id)) {
            return;
        }
        self->write_frame([&](proto::frame_buffer& b) {
            return self->writer_.active_consumer_change(b, consumer_id, active);
        });
    });
}

}  // namespace nereus::broker
