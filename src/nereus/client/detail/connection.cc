#include "nereus/client/detail/connection.h"

#include "nereus/client/detail/logger.h"
#include "nereus/client/errc.h"
#include "nereus/proto/errc.h"
#include "nereus/proto/protocol_version.h"
#include "nereus/proto/pulsar_api.h"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/connect.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <charconv>
#include <cstring>

namespace nereus::client::detail {

namespace {

constexpr auto tok = asio::as_tuple(asio::use_awaitable);
constexpr std::size_t initial_rbuf = 64 * 1024;

// MESSAGE frames are read by the direct scanners (protobuf for other shapes): a consumer's
// receive path parses no protobuf message for the broker's common frames.
proto::decoder_options receive_options() {
    proto::decoder_options o;
    o.fast_message = true;
    return o;
}

void log_escape(const std::exception_ptr& e) {
    if (!e) {
        return;
    }
    try {
        std::rethrow_exception(e);
    } catch (const std::exception& ex) {
        NEREUS_LOG(client_log(), err, "connection task failed: {}", ex.what());
    }
}

}  // namespace

result<endpoint> parse_service_url(std::string_view url) {
    constexpr std::string_view scheme = "pulsar://";
    if (url.substr(0, scheme.size()) != scheme) {
        return error(errc::invalid_argument);
    }
    auto rest = url.substr(scheme.size());
    while (!rest.empty() && rest.back() == '/') {
        rest.remove_suffix(1);
    }
    endpoint ep;
    const auto colon = rest.rfind(':');
    if (colon == std::string_view::npos) {
        ep.host = std::string(rest);
    } else {
        ep.host = std::string(rest.substr(0, colon));
        const auto port = rest.substr(colon + 1);
        unsigned v = 0;
        auto [p, ec] = std::from_chars(port.data(), port.data() + port.size(), v);
        if (ec != std::errc{} || p != port.data() + port.size() || v == 0 || v > 65535) {
            return error(errc::invalid_argument);
        }
        ep.port = static_cast<std::uint16_t>(v);
    }
    if (ep.host.empty() || ep.host.find(',') != std::string::npos) {
        return error(errc::invalid_argument);
    }
    return ep;
}

connection::connection(strand_type ex, const client_options& options, endpoint ep)
    : ex_(std::move(ex)),
      options_(options),
      peer_(std::move(ep)),
      socket_(ex_),
      wake_(ex_),
      decoder_(receive_options()),
      rbuf_(initial_rbuf) {
    writer_.set_peer_protocol_version(proto::nereus_protocol_version);
}

connection::~connection() = default;

asio::awaitable<result<proto::frame_view>> connection::read_frame() {
    for (;;) {
        auto step =
            decoder_.decode(std::span<const std::byte>(rbuf_.data() + begin_, end_ - begin_));
        if (!step) {
            co_return error(errc::protocol_error);
        }
        if (step->complete) {
            begin_ += step->frame.size;
            co_return step->frame;
        }
        // Make room for bytes_needed counted from begin_.
        const std::size_t need = step->bytes_needed;
        if (begin_ > 0 && (rbuf_.size() - end_ < 16 * 1024 || begin_ + need > rbuf_.size())) {
            std::memmove(rbuf_.data(), rbuf_.data() + begin_, end_ - begin_);
            end_ -= begin_;
            begin_ = 0;
        }
        if (need > rbuf_.size() - begin_) {
            rbuf_.resize(begin_ + need);
        }
        auto [ec, n] = co_await socket_.async_read_some(
            asio::buffer(rbuf_.data() + end_, rbuf_.size() - end_), tok);
        if (ec) {
            co_return error(errc::disconnected);
        }
        end_ += n;
        last_received_ = steady::now();
        ping_outstanding_ = false;
    }
}

asio::awaitable<result<void>> connection::handshake() {
    asio::ip::tcp::resolver resolver(ex_);
    auto [rec, results] =
        co_await resolver.async_resolve(peer_.host, std::to_string(peer_.port), tok);
    if (rec) {
        co_return error(errc::connect_failed);
    }
    auto [cec, connected_ep] = co_await asio::async_connect(socket_, results, tok);
    if (cec) {
        co_return error(errc::connect_failed);
    }
    boost::system::error_code ignored;
    socket_.set_option(asio::ip::tcp::no_delay(true), ignored);
    proto::connect_args a;
    a.client_version = options_.client_version;
    a.protocol_version = proto::nereus_protocol_version;
    proto::frame_buffer out;
    if (auto w = writer_.connect(out, a); !w) {
        co_return error(w.error());
    }
    auto [wec, wn] = co_await asio::async_write(socket_, asio::buffer(out), tok);
    if (wec) {
        co_return error(errc::connect_failed);
    }
    for (;;) {
        auto f = co_await read_frame();
        if (!f) {
            co_return error(errc::connect_failed);
        }
        if (f->type() == proto::command_type::connected) {
            const auto& c = f->command().connected();
            protocol_version_ = c.protocol_version();
            writer_.set_peer_protocol_version(protocol_version_);
            if (c.has_max_message_size() && c.max_message_size() > 0) {
                max_message_size_ = static_cast<std::uint32_t>(c.max_message_size());
                announced_ = true;
                const auto limit = max_message_size_ + proto::frame_padding;
                writer_.options().max_frame_size = limit;
                decoder_.set_max_frame_size(limit);
            }
            co_return result<void>{};
        }
        if (f->type() == proto::command_type::error) {
            co_return error(make_broker_error(f->command().error().error()));
        }
    }
}

asio::awaitable<result<void>> connection::open() {
    using namespace asio::experimental::awaitable_operators;
    asio::steady_timer deadline(ex_);
    deadline.expires_after(options_.connection_timeout);
    auto r = co_await (handshake() || deadline.async_wait(asio::use_awaitable));
    if (r.index() == 1) {
        close();
        co_return error(errc::timeout);
    }
    auto hr = std::get<0>(std::move(r));
    if (!hr) {
        NEREUS_LOG(client_log(), warn, "connect {} failed: {}", peer_.key(), hr.error().message());
        close();
        co_return hr;
    }
    ready_ = true;
    last_received_ = steady::now();
    auto self = shared_from_this();
    asio::co_spawn(
        ex_, [self]() { return self->read_loop(); }, log_escape);
    asio::co_spawn(
        ex_, [self]() { return self->write_loop(); }, log_escape);
    NEREUS_LOG(client_log(), info, "connected to {} (protocol v{})", peer_.key(),
               protocol_version_);
    co_return result<void>{};
}

asio::awaitable<void> connection::read_loop() {
    auto self = shared_from_this();
    while (!closed_) {
        auto f = co_await read_frame();
        if (!f) {
            lost(f.error());
            co_return;
        }
        dispatch(*f);
    }
}

asio::awaitable<void> connection::write_loop() {
    auto self = shared_from_this();
    while (!closed_) {
        if (pending_.empty()) {
            wake_.expires_at(steady::time_point::max());
            (void)co_await wake_.async_wait(tok);
            continue;
        }
        std::swap(pending_, inflight_);
        auto [ec, n] = co_await asio::async_write(socket_, asio::buffer(inflight_), tok);
        inflight_.clear();
        if (ec) {
            lost(errc::disconnected);
            co_return;
        }
    }
}

void connection::flush() {
    if (!pending_.empty()) {
        wake_.cancel();
    }
}

void connection::dispatch(const proto::frame_view& f) {
    if (!f.known_type) {
        return;
    }
    using ct = proto::command_type;
    if (f.type() == ct::message) {
        // f.message is set on either decoder path (fast_message), command() only on one.
        auto it = consumers_.find(f.message.consumer_id);
        if (it == consumers_.end()) {
            return;
        }
        if (auto l = it->second.lock()) {
            l->on_message(f);
        }
        return;
    }
    const auto& c = f.command();
    auto respond = [&](std::uint64_t request_id) {
        auto it = waiters_.find(request_id);
        if (it == waiters_.end()) {
            return;
        }
        auto done = std::move(it->second.done);
        waiters_.erase(it);
        if (f.type() == proto::command_type::error) {
            done(error(make_broker_error(c.error().error())));
            return;
        }
        done(command_ptr(std::make_shared<proto::pb::BaseCommand>(c)));
    };
    switch (f.type()) {
        case ct::ping:
            if (auto w = writer_.pong(pending_); w) {
                flush();
            }
            return;
        case ct::pong:
            return;
        case ct::success:
            respond(c.success().request_id());
            return;
        case ct::error:
            respond(c.error().request_id());
            return;
        case ct::producer_success:
            respond(c.producer_success().request_id());
            return;
        case ct::lookup_response:
            respond(c.lookuptopicresponse().request_id());
            return;
        case ct::partitioned_metadata_response:
            respond(c.partitionmetadataresponse().request_id());
            return;
        case ct::ack_response:
            respond(c.ackresponse().request_id());
            return;
        case ct::get_last_message_id_response:
            respond(c.getlastmessageidresponse().request_id());
            return;
        case ct::get_topics_of_namespace_response:
            respond(c.gettopicsofnamespaceresponse().request_id());
            return;
        case ct::send_receipt:
        case ct::send_error:
        case ct::close_producer: {
            const auto id = f.type() == ct::send_receipt ? c.send_receipt().producer_id()
                            : f.type() == ct::send_error ? c.send_error().producer_id()
                                                         : c.close_producer().producer_id();
            auto it = producers_.find(id);
            if (it == producers_.end()) {
                return;
            }
            auto l = it->second.lock();
            if (!l) {
                return;
            }
            if (f.type() == ct::send_receipt) {
                l->on_send_receipt(c);
            } else if (f.type() == ct::send_error) {
                l->on_send_error(c);
            } else {
                producers_.erase(id);
                l->on_closed_by_broker();
            }
            return;
        }
        case ct::close_consumer: {
            const auto id = c.close_consumer().consumer_id();
            auto it = consumers_.find(id);
            if (it == consumers_.end()) {
                return;
            }
            auto l = it->second.lock();
            if (!l) {
                return;
            }
            consumers_.erase(id);
            l->on_closed_by_broker();
            return;
        }
        default:
            return;  // ACTIVE_CONSUMER_CHANGE, REACHED_END_OF_TOPIC, ...: not needed
    }
}

void connection::request(std::uint64_t request_id,
                         const build_fn& build,
                         completion<command_ptr> done) {
    if (closed_ || !ready_) {
        done(error(errc::disconnected));
        return;
    }
    if (auto w = build(pending_, writer_); !w) {
        done(error(w.error() == make_error_code(proto::errc::frame_too_large)
                       ? make_error_code(errc::message_too_big)
                       : w.error()));
        return;
    }
    waiters_.emplace(request_id,
                     waiter{std::move(done), steady::now() + options_.operation_timeout});
    flush();
}

asio::awaitable<result<command_ptr>> connection::request(std::uint64_t request_id, build_fn build) {
    auto self = shared_from_this();
    // g++ 12 destroys a lambda temporary inside a co_await expression twice (its captured
    // shared_ptr loses a reference): the initiation is a named local, never a temporary.
    auto init = [this, request_id, &build](auto h) {
        request(request_id, build,
                completion<command_ptr>(handler<command_ptr>(std::move(h)), ex_));
    };
    auto co_result_ =
        co_await asio::async_initiate<const asio::use_awaitable_t<>&, void(result<command_ptr>)>(
            init, asio::use_awaitable);
    co_return co_result_;
}

result<void> connection::send(const build_fn& build) {
    if (closed_ || !ready_) {
        return error(errc::disconnected);
    }
    if (auto w = build(pending_, writer_); !w) {
        return error(w.error());
    }
    flush();
    return {};
}

void connection::send_raw(std::span<const std::byte> frame) {
    if (closed_ || !ready_) {
        return;
    }
    pending_.insert(pending_.end(), frame.begin(), frame.end());
    flush();
}

void connection::add_producer(std::uint64_t id, std::weak_ptr<producer_listener> l) {
    producers_[id] = std::move(l);
}
void connection::remove_producer(std::uint64_t id) {
    producers_.erase(id);
}
void connection::add_consumer(std::uint64_t id, std::weak_ptr<consumer_listener> l) {
    consumers_[id] = std::move(l);
}
void connection::remove_consumer(std::uint64_t id) {
    consumers_.erase(id);
}

void connection::tick(steady::time_point now) {
    if (closed_ || !ready_) {
        return;
    }
    std::vector<std::uint64_t> expired;
    for (auto& [id, w] : waiters_) {
        if (w.deadline <= now) {
            expired.push_back(id);
        }
    }
    for (auto id : expired) {
        auto it = waiters_.find(id);
        auto done = std::move(it->second.done);
        waiters_.erase(it);
        done(error(errc::timeout));
    }
    const auto silence = now - last_received_;
    if (silence >= 2 * options_.keep_alive_interval) {
        NEREUS_LOG(client_log(), warn, "broker {} silent for {} ms: dropping the connection",
                   peer_.key(),
                   std::chrono::duration_cast<std::chrono::milliseconds>(silence).count());
        lost(errc::timeout);
        return;
    }
    if (silence >= options_.keep_alive_interval && !ping_outstanding_) {
        if (auto w = writer_.ping(pending_); w) {
            ping_outstanding_ = true;
            flush();
        }
    }
}

void connection::lost(std::error_code why) {
    if (closed_) {
        return;
    }
    NEREUS_LOG(client_log(), info, "connection to {} lost: {}", peer_.key(), why.message());
    close();
}

void connection::close() {
    if (closed_) {
        return;
    }
    closed_ = true;
    boost::system::error_code ignored;
    socket_.shutdown(asio::ip::tcp::socket::shutdown_both, ignored);
    socket_.close(ignored);
    wake_.cancel();
    auto waiters = std::move(waiters_);
    waiters_.clear();
    for (auto& [id, w] : waiters) {
        w.done(error(errc::disconnected));
    }
    auto producers = std::move(producers_);
    producers_.clear();
    auto consumers = std::move(consumers_);
    consumers_.clear();
    if (on_gone) {
        auto g = std::move(on_gone);
        on_gone = nullptr;
        g(this);
    }
    for (auto& [id, w] : producers) {
        if (auto l = w.lock()) {
            l->on_connection_lost();
        }
    }
    for (auto& [id, w] : consumers) {
        if (auto l = w.lock()) {
            l->on_connection_lost();
        }
    }
}

}  // namespace nereus::client::detail
