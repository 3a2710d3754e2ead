#include "apps/nereus/perf/client.h"

#include "nereus/proto/protocol_version.h"
#include "nereus/proto/pulsar_api.h"
#include "nereus/proto/server_error.h"

#include <fmt/format.h>

#include <algorithm>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/connect.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <cstring>
#include <exception>

namespace nereus::app::perf {

namespace {

constexpr auto tok = asio::as_tuple(asio::use_awaitable);
constexpr std::size_t initial_rbuf = 256 * 1024;
constexpr int max_lookup_hops = 20;

std::error_code protocol_error() {
    return std::make_error_code(std::errc::protocol_error);
}

std::int64_t steady_ns(steady::time_point t) {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

std::string server_error_text(std::int32_t code, const std::string& message) {
    return fmt::format("{} ({})", proto::to_string(static_cast<proto::server_error>(code)),
                       message);
}

// Logs what escaped a coroutine (nothing should: errors are values).
auto log_exception(std::string what) {
    return [what = std::move(what)](const std::exception_ptr& e) {
        if (!e) {
            return;
        }
        try {
            std::rethrow_exception(e);
        } catch (const std::exception& ex) {
            std::fprintf(stderr, "perf: %s failed: %s\n", what.c_str(), ex.what());
        }
    };
}

}  // namespace

// ------------------------------------------------------------------------------------------
// connection

connection::connection(asio::io_context& ioc)
    : ioc_(ioc), socket_(ioc), wake_(ioc), rbuf_(initial_rbuf) {
    writer_.set_peer_protocol_version(proto::nereus_protocol_version);
}

connection::~connection() = default;

result<void> connection::fail(std::string why) {
    if (error_.empty()) {
        error_ = std::move(why);
    }
    return error(protocol_error());
}

asio::awaitable<result<void>> connection::connect_to(const endpoint& ep) {
    boost::system::error_code ignored;
    socket_.close(ignored);
    begin_ = end_ = frame_size_ = 0;
    pending_.clear();
    asio::ip::tcp::resolver resolver(ioc_);
    auto [rec, results] = co_await resolver.async_resolve(ep.host, std::to_string(ep.port), tok);
    if (rec) {
        co_return fail(fmt::format("resolve {}: {}", ep.host, rec.message()));
    }
    auto [cec, connected_ep] = co_await asio::async_connect(socket_, results, tok);
    if (cec) {
        co_return fail(fmt::format("connect {}:{}: {}", ep.host, ep.port, cec.message()));
    }
    socket_.set_option(asio::ip::tcp::no_delay(true), ignored);
    peer_ = ep;

    proto::connect_args a;
    a.client_version = "Nereus-perf";
    a.protocol_version = proto::nereus_protocol_version;
    if (auto w = writer_.connect(pending_, a); !w) {
        co_return fail(fmt::format("encode CONNECT: {}", w.error().message()));
    }
    NEREUS_CO_TRY(co_await write_now());
    for (;;) {
        auto f = co_await next_frame();
        if (!f) {
            co_return error(f.error());
        }
        const auto t = (*f)->type();
        if (t == proto::command_type::connected) {
            const auto& c = (*f)->command().connected();
            protocol_version_ = c.protocol_version();
            writer_.set_peer_protocol_version(protocol_version_);
            if (c.has_max_message_size() && c.max_message_size() > 0) {
                const auto limit =
                    static_cast<std::uint32_t>(c.max_message_size()) + proto::frame_padding;
                writer_.options().max_frame_size = limit;
                decoder_.set_max_frame_size(limit);
            }
            co_return result<void>{};
        }
        if (t == proto::command_type::error) {
            const auto& e = (*f)->command().error();
            co_return fail("CONNECT refused: " + server_error_text(e.error(), e.message()));
        }
        // Anything else before CONNECTED is ignored (PING is answered in next_frame()).
    }
}

asio::awaitable<result<void>> connection::open(const endpoint& service, std::string_view topic) {
    endpoint ep = service;
    bool authoritative = false;
    NEREUS_CO_TRY(co_await connect_to(ep));
    for (int hop = 0; hop < max_lookup_hops; ++hop) {
        const std::uint64_t req = static_cast<std::uint64_t>(hop) + 1;
        if (auto w = writer_.lookup(pending_, topic, req, authoritative); !w) {
            co_return fail(fmt::format("encode LOOKUP: {}", w.error().message()));
        }
        auto f = co_await request(proto::command_type::lookup_response, req);
        if (!f) {
            co_return error(f.error());
        }
        const auto& r = (*f)->command().lookuptopicresponse();
        if (!r.has_response() || r.response() == proto::pb::CommandLookupTopicResponse::Failed) {
            co_return fail(fmt::format("LOOKUP {} failed: {}", topic,
                                       server_error_text(r.error(), r.message())));
        }
        auto target = parse_service_url(r.brokerserviceurl());
        if (!target) {
            co_return fail(
                fmt::format("LOOKUP {}: unusable broker URL '{}'", topic, r.brokerserviceurl()));
        }
        if (r.response() == proto::pb::CommandLookupTopicResponse::Connect) {
            if (*target != peer_) {
                NEREUS_CO_TRY(co_await connect_to(*target));
            }
            co_return result<void>{};
        }
        // Redirect: ask the named broker, carrying its authoritative flag.
        authoritative = r.authoritative();
        ep = *target;
        NEREUS_CO_TRY(co_await connect_to(ep));
    }
    co_return fail(fmt::format("LOOKUP {}: more than {} redirects", topic, max_lookup_hops));
}

asio::awaitable<result<void>> connection::write_now() {
    auto [ec, n] = co_await asio::async_write(socket_, asio::buffer(pending_), tok);
    pending_.clear();
    if (ec) {
        co_return fail(fmt::format("write: {}", ec.message()));
    }
    co_return result<void>{};
}

void connection::consume_frame() noexcept {
    begin_ += frame_size_;
    frame_size_ = 0;
    if (begin_ == end_) {
        begin_ = end_ = 0;
    }
}

void connection::compact(std::size_t need) {
    // Make room for `need` bytes counted from begin_ (a frame larger than the buffer grows it).
    if (begin_ > 0 && (rbuf_.size() - end_ < 16 * 1024 || begin_ + need > rbuf_.size())) {
        std::memmove(rbuf_.data(), rbuf_.data() + begin_, end_ - begin_);
        end_ -= begin_;
        begin_ = 0;
    }
    if (need > rbuf_.size() - begin_) {
        rbuf_.resize(begin_ + need);
    }
}

asio::awaitable<result<const proto::frame_view*>> connection::next_frame() {
    consume_frame();
    for (;;) {
        auto step =
            decoder_.decode(std::span<const std::byte>(rbuf_.data() + begin_, end_ - begin_));
        if (!step) {
            co_return error(
                fail(fmt::format("bad frame from broker: {}", step.error().message())).error());
        }
        if (step->complete) {
            frame_ = step->frame;
            frame_size_ = frame_.size;
            if (frame_.type() == proto::command_type::ping) {
                consume_frame();
                if (auto w = writer_.pong(pending_); !w) {
                    co_return error(w.error());
                }
                NEREUS_CO_TRY(co_await write_now());
                continue;
            }
            co_return &frame_;
        }
        compact(step->bytes_needed);
        auto [ec, n] = co_await socket_.async_read_some(
            asio::buffer(rbuf_.data() + end_, rbuf_.size() - end_), tok);
        if (ec) {
            co_return error(fail(fmt::format("read: {}", ec.message())).error());
        }
        end_ += n;
    }
}

asio::awaitable<result<const proto::frame_view*>> connection::request(proto::command_type want,
                                                                      std::uint64_t request_id) {
    NEREUS_CO_TRY(co_await write_now());
    for (;;) {
        auto f = co_await next_frame();
        if (!f) {
            co_return f;
        }
        const auto t = (*f)->type();
        const auto& c = (*f)->command();
        if (t == proto::command_type::error && c.error().request_id() == request_id) {
            co_return error(
                fail(server_error_text(c.error().error(), c.error().message())).error());
        }
        if (t == want) {
            co_return f;
        }
        // Other frames during setup (e.g. ACTIVE_CONSUMER_CHANGE) are not needed.
    }
}

void connection::start(frame_handler& h) {
    handler_ = &h;
    started_ = true;
    consume_frame();
    // From here on receipts are read by the direct scanner (frame_view::receipt; no protobuf
    // objects per receipt). Setup frames above needed command().
    auto o = decoder_.options();
    o.fast_send_receipt = true;
    decoder_ = proto::frame_decoder(o);
    asio::co_spawn(ioc_, read_loop(), log_exception("read loop"));
    asio::co_spawn(ioc_, write_loop(), log_exception("writer"));
}

void connection::flush() {
    if (!pending_.empty()) {
        wake_.cancel();
    }
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
}

void connection::lost(std::string why) {
    if (closed_) {
        return;
    }
    (void)fail(why);
    close();
    if (handler_ != nullptr) {
        handler_->on_lost(why);
    }
}

asio::awaitable<void> connection::read_loop() {
    while (!closed_) {
        // Every complete frame in the buffer, then one read.
        for (;;) {
            const std::span<const std::byte> unread(rbuf_.data() + begin_, end_ - begin_);
            if (scan_messages_) {
                if (const auto m =
                        proto::scan_message_frame(unread, decoder_.options().max_frame_size)) {
                    frame_size_ = m->size;
                    handler_->on_message_frame(*m);
                    consume_frame();
                    if (closed_) {
                        co_return;
                    }
                    continue;
                }
            }
            auto step = decoder_.decode(unread);
            if (!step) {
                lost(fmt::format("bad frame from broker: {}", step.error().message()));
                co_return;
            }
            if (!step->complete) {
                compact(step->bytes_needed);
                break;
            }
            const auto& f = step->frame;
            frame_size_ = f.size;
            if (f.type() == proto::command_type::ping) {
                if (auto w = writer_.pong(pending_); w) {
                    flush();
                }
            } else {
                handler_->on_frame(f);
            }
            consume_frame();
            if (closed_) {
                co_return;
            }
        }
        auto [ec, n] = co_await socket_.async_read_some(
            asio::buffer(rbuf_.data() + end_, rbuf_.size() - end_), tok);
        if (ec) {
            lost(ec == asio::error::eof ? std::string("broker closed the connection")
                                        : fmt::format("read: {}", ec.message()));
            co_return;
        }
        end_ += n;
        ++reads_;
    }
}

asio::awaitable<void> connection::write_loop() {
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
            lost(fmt::format("write: {}", ec.message()));
            co_return;
        }
    }
}

// ------------------------------------------------------------------------------------------
// producer

producer::producer(asio::io_context& ioc, perf_stats& stats, producer_config config)
    : stats_(stats),
      config_(std::move(config)),
      conn_(ioc),
      timer_(ioc),
      single_(std::make_unique<proto::pb::SingleMessageMetadata>()),
      payload_(config_.size, std::byte{0x5a}),
      sends_(std::max<std::uint32_t>(config_.max_pending, 1)),
      intended_(std::max<std::uint32_t>(config_.max_pending, 1)),
      sent_at_(intended_.size()) {
    if (config_.batch_max > 1) {
        batch_.reserve(static_cast<std::size_t>(config_.batch_max) * (config_.size + 16));
    }
}

producer::~producer() = default;

asio::awaitable<result<void>> producer::open(const endpoint& service) {
    if (auto r = co_await conn_.open(service, config_.topic); !r) {
        fail(conn_.error_text());
        co_return r;
    }
    proto::producer_args a;
    a.topic = config_.topic;
    a.producer_id = 0;
    a.request_id = 100;
    if (auto w = conn_.writer().producer(conn_.out(), a); !w) {
        fail(fmt::format("encode PRODUCER: {}", w.error().message()));
        co_return error(w.error());
    }
    auto f = co_await conn_.request(proto::command_type::producer_success, a.request_id);
    if (!f) {
        fail(fmt::format("PRODUCER {}: {}", config_.topic, conn_.error_text()));
        co_return error(f.error());
    }
    const auto& ps = (*f)->command().producer_success();
    if (ps.has_producer_ready() && !ps.producer_ready()) {
        fail("PRODUCER: broker queued the producer (producer_ready=false)");
        co_return error(protocol_error());
    }
    name_ = ps.producer_name();
    next_seq_ = static_cast<std::uint64_t>(ps.last_sequence_id() + 1);
    encoder_.set_producer_name(name_);
    conn_.start(*this);
    co_return result<void>{};
}

void producer::fail(std::string why) {
    if (error_.empty()) {
        error_ = std::move(why);
    }
    conn_.close();
    wake();
}

void producer::wake() {
    if (waiting_) {
        timer_.cancel();
    }
}

void producer::stop() {
    stop_ = true;
    wake();
}

void producer::on_lost(const std::string& why) {
    fail(fmt::format("producer {}: {}", config_.topic, why));
}

asio::awaitable<void> producer::wait_until(steady::time_point t) {
    waiting_ = true;
    timer_.expires_at(t);
    (void)co_await timer_.async_wait(tok);
    waiting_ = false;
}

void producer::add_message(std::uint64_t i, steady::time_point intended, steady::time_point now) {
    const std::int64_t intended_ns = steady_ns(intended);
    const std::uint64_t seq = next_seq_++;
    // The intended time on the realtime clock, from the steady one (no clock read per message):
    // the payload header's send time and, in ms, the metadata's publish_time.
    const std::uint64_t intended_realtime_ns =
        realtime_base_ns_ + static_cast<std::uint64_t>(intended_ns - steady_base_ns_);
    write_payload_header(payload_, payload_header{
                                       stats_.run_id,
                                       intended_realtime_ns,
                                       config_.index,
                                       static_cast<std::uint32_t>(i),
                                   });
    intended_[(intended_head_ + in_flight_) % intended_.size()] = intended_ns;
    ++in_flight_;
    ++stats_.sent;
    if (config_.batch_max <= 1) {
        // One SEND per message, encoded directly (byte for byte the protobuf path's frame).
        proto::send_args s;
        s.producer_id = 0;
        s.sequence_id = seq;
        s.num_messages = 1;
        const proto::send_metadata md{.sequence_id = seq,
                                      .publish_time_ms = intended_realtime_ns / 1'000'000};
        if (auto w = encoder_.append(conn_.out(), s, md, payload_, conn_.writer().options()); !w) {
            fail(fmt::format("encode SEND: {}", w.error().message()));
            return;
        }
        mark_sent(1, now);
        sends_[(sends_head_ + sends_size_) % sends_.size()] = pending_send{seq, 1};
        ++sends_size_;
        return;
    }
    if (batch_count_ == 0) {
        batch_first_seq_ = seq;
        batch_deadline_ = now + config_.batch_delay;
        batch_.clear();
    }
    single_->Clear();
    single_->set_sequence_id(seq);
    if (auto r = proto::batch_builder(batch_).add(*single_, payload_); !r) {
        fail(fmt::format("batch: {}", r.error().message()));
        return;
    }
    ++batch_count_;
}

void producer::mark_sent(std::uint32_t n, steady::time_point at) {
    // The last n messages added (in_flight_ counts them already) go out in this SEND.
    const std::int64_t now = steady_ns(at);
    for (std::uint64_t k = in_flight_ - n; k < in_flight_; ++k) {
        sent_at_[(intended_head_ + k) % sent_at_.size()] = now;
    }
}

void producer::flush_batch() {
    if (batch_count_ == 0 || failed()) {
        return;
    }
    const auto now = steady::now();
    proto::send_args s;
    s.producer_id = 0;
    s.sequence_id = batch_first_seq_;
    s.num_messages = static_cast<std::int32_t>(batch_count_);
    s.highest_sequence_id = batch_first_seq_ + batch_count_ - 1;
    const proto::send_metadata md{
        .sequence_id = batch_first_seq_,
        .publish_time_ms =
            (realtime_base_ns_ + static_cast<std::uint64_t>(steady_ns(now) - steady_base_ns_)) /
            1'000'000,
        .num_messages_in_batch = static_cast<std::int32_t>(batch_count_),
        .highest_sequence_id = batch_first_seq_ + batch_count_ - 1,
    };
    if (auto w = encoder_.append(conn_.out(), s, md, batch_, conn_.writer().options()); !w) {
        fail(fmt::format("encode SEND: {}", w.error().message()));
        return;
    }
    mark_sent(batch_count_, now);
    sends_[(sends_head_ + sends_size_) % sends_.size()] =
        pending_send{batch_first_seq_, batch_count_};
    ++sends_size_;
    batch_count_ = 0;
    conn_.flush();
}

asio::awaitable<void> producer::run(steady::time_point start,
                                    steady::time_point stop_at,
                                    std::chrono::nanoseconds drain) {
    steady_base_ns_ = steady_ns(start);
    realtime_base_ns_ =
        realtime_ns() - static_cast<std::uint64_t>(steady_ns(steady::now()) - steady_base_ns_);
    const bool paced = config_.rate > 0;
    const double interval_ns = paced ? 1e9 / config_.rate : 0;
    const bool batching = config_.batch_max > 1;
    std::uint64_t i = 0;
    std::uint32_t since_yield = 0;
    // Unbatched at max rate, one clock read per burst: the messages added between two
    // suspensions (at most 64, a few microseconds) leave in one write (conn_.flush() before
    // each suspension), so they share its intended (= send) time. Cleared after every
    // co_await below.
    bool burst_clock = false;
    steady::time_point burst_now;
    while (!failed() && !stop_ && (config_.messages == 0 || i < config_.messages)) {
        // The in-flight window (batched messages count): wait for receipts. A partial batch
        // waits for its delay unless nothing else is in flight.
        if (in_flight_ >= config_.max_pending) {
            if (batch_count_ > 0 &&
                (in_flight_ == batch_count_ || steady::now() >= batch_deadline_)) {
                flush_batch();
                continue;
            }
            conn_.flush();
            co_await wait_until(batch_count_ > 0 ? batch_deadline_ : steady::time_point::max());
            burst_clock = false;
            continue;
        }
        steady::time_point intended;
        steady::time_point now;  // this turn's clock read (max rate: == intended, per burst)
        if (paced) {
            intended = start + std::chrono::nanoseconds(
                                   static_cast<std::int64_t>(static_cast<double>(i) * interval_ns));
            if (intended >= stop_at) {
                break;
            }
            now = steady::now();
            if (now < intended) {
                if (batch_count_ > 0 && batch_deadline_ <= intended) {
                    if (now >= batch_deadline_) {
                        flush_batch();
                    } else {
                        co_await wait_until(batch_deadline_);
                    }
                    continue;
                }
                conn_.flush();
                co_await wait_until(intended);
                continue;
            }
        } else if (!batching) {
            if (!burst_clock) {
                burst_now = steady::now();
                burst_clock = true;
            }
            intended = burst_now;
            now = intended;
            if (intended >= stop_at) {
                break;
            }
        } else {
            intended = steady::now();
            now = intended;
            if (intended >= stop_at) {
                break;
            }
        }
        if (batching && batch_count_ > 0 &&
            batch_.size() + config_.size + 64 > config_.batch_max_bytes) {
            flush_batch();
        }
        add_message(i, intended, now);
        ++i;
        if (batching) {
            if (batch_count_ >= config_.batch_max || now >= batch_deadline_) {
                flush_batch();
            }
        } else if (paced) {
            conn_.flush();
        }
        // At max rate nothing else would run until the window is full: let the writer and the
        // read loop in now and then.
        if (++since_yield >= 64) {
            since_yield = 0;
            conn_.flush();
            co_await asio::post(timer_.get_executor(), asio::use_awaitable);
            burst_clock = false;
        }
    }
    flush_batch();
    conn_.flush();
    // Drain: every receipt of what was sent, bounded.
    const auto until = steady::now() + drain;
    while (!failed() && in_flight_ > 0 && steady::now() < until) {
        co_await wait_until(until);
    }
    if (!failed() && in_flight_ > 0) {
        fail(fmt::format("producer {}: {} messages without a receipt after the drain timeout",
                         config_.topic, in_flight_));
    }
}

void producer::on_frame(const proto::frame_view& f) {
    switch (f.type()) {
        case proto::command_type::send_receipt: {
            const auto& r = f.receipt;  // the direct scanner's or the generic parse's fields
            if (sends_size_ == 0 || r.sequence_id != sends_[sends_head_].sequence_id) {
                fail(fmt::format(
                    "producer {}: receipt for sequence id {} out of order (expected {})",
                    config_.topic, r.sequence_id,
                    sends_size_ == 0 ? std::string("none")
                                     : std::to_string(sends_[sends_head_].sequence_id)));
                return;
            }
            const auto n = sends_[sends_head_].messages;
            sends_head_ = (sends_head_ + 1) % sends_.size();
            --sends_size_;
            // One clock read per socket read that brought receipts (as the consumer's
            // read_clocks()): a read's receipts arrived together, microseconds apart at most.
            if (receipt_clock_read_ != conn_.reads()) {
                receipt_clock_read_ = conn_.reads();
                receipt_now_ = steady::now();
            }
            const auto now_tp = receipt_now_;
            const std::int64_t now = steady_ns(now_tp);
            for (std::uint32_t k = 0; k < n; ++k) {
                const std::int64_t intended = intended_[intended_head_];
                const std::int64_t sent = sent_at_[intended_head_];
                const auto lat =
                    static_cast<std::uint64_t>(std::max<std::int64_t>(0, now - intended));
                intended_head_ = (intended_head_ + 1) % intended_.size();
                stats_.publish_total.record(lat);
                stats_.send_lag.record(
                    static_cast<std::uint64_t>(std::max<std::int64_t>(0, sent - intended)));
                stats_.publish_from_send.record(
                    static_cast<std::uint64_t>(std::max<std::int64_t>(0, now - sent)));
                stats_.publish_interval.record(lat);
            }
            in_flight_ -= n;
            stats_.last_receipt = now_tp;
            stats_.receipted += n;
            stats_.receipted_bytes += static_cast<std::uint64_t>(n) * config_.size;
            wake();
            return;
        }
        case proto::command_type::send_error: {
            const auto& e = f.command().send_error();
            const auto n = sends_size_ > 0 ? sends_[sends_head_].messages : 1;
            stats_.send_errors += n;
            fail(fmt::format("producer {}: SEND_ERROR for sequence id {}: {}", config_.topic,
                             e.sequence_id(), server_error_text(e.error(), e.message())));
            return;
        }
        case proto::command_type::close_producer:
            fail(fmt::format("producer {}: closed by the broker", config_.topic));
            return;
        case proto::command_type::error:
            fail(fmt::format(
                "producer {}: ERROR {}", config_.topic,
                server_error_text(f.command().error().error(), f.command().error().message())));
            return;
        default:
            return;  // PONG, SUCCESS, ... need nothing
    }
}

// ------------------------------------------------------------------------------------------
// consumer

consumer::consumer(asio::io_context& ioc, perf_stats& stats, consumer_config config)
    : stats_(stats), config_(std::move(config)), conn_(ioc), timer_(ioc) {
    ack_ids_.reserve(config_.ack_group_max);
}

consumer::~consumer() = default;

void consumer::fail(std::string why) {
    if (error_.empty()) {
        error_ = std::move(why);
    }
    close();
}

void consumer::on_lost(const std::string& why) {
    if (!closing_) {
        fail(fmt::format("consumer {}: {}", config_.topic, why));
    }
}

void consumer::close() {
    closing_ = true;
    conn_.close();
    timer_.cancel();
}

asio::awaitable<result<void>> consumer::open(const endpoint& service) {
    if (auto r = co_await conn_.open(service, config_.topic); !r) {
        fail(conn_.error_text());
        co_return r;
    }
    proto::subscribe_args a;
    a.topic = config_.topic;
    a.subscription = config_.subscription;
    a.sub_type = config_.sub_type;
    a.consumer_id = 0;
    a.request_id = 100;
    a.consumer_name = config_.name;
    a.initial_position = config_.initial_position;
    if (auto w = conn_.writer().subscribe(conn_.out(), a); !w) {
        fail(fmt::format("encode SUBSCRIBE: {}", w.error().message()));
        co_return error(w.error());
    }
    auto f = co_await conn_.request(proto::command_type::success, a.request_id);
    if (!f) {
        fail(fmt::format("SUBSCRIBE {} {}: {}", config_.topic, config_.subscription,
                         conn_.error_text()));
        co_return error(f.error());
    }
    conn_.scan_messages(true);
    conn_.start(*this);
    if (!config_.defer_flow) {
        start_flow();
        if (failed()) {
            co_return error(protocol_error());
        }
    }
    co_return result<void>{};
}

void consumer::start_flow() {
    if (auto w = conn_.writer().flow(conn_.out(), 0, config_.receiver_queue); !w) {
        fail(fmt::format("encode FLOW: {}", w.error().message()));
        return;
    }
    conn_.flush();
}

void consumer::read_clocks() {
    if (clock_read_ != conn_.reads()) {
        clock_read_ = conn_.reads();
        now_ns_ = realtime_ns();
        last_message_ = steady::now();
    }
}

void consumer::count_payload(std::span<const std::byte> payload, std::uint64_t publish_ms) {
    const auto now_ns = now_ns_;
    const auto h = read_payload_header(payload);
    if (config_.own_run_only) {
        if (!h || h->run_id != stats_.run_id) {
            ++stats_.foreign;
            return;
        }
        if (stats_.track) {
            if (h->producer >= stats_.quota.size() || h->index >= stats_.quota[h->producer]) {
                ++stats_.foreign;
                return;
            }
            auto& flag = stats_.seen[stats_.first_index[h->producer] + h->index];
            if (flag != 0) {
                ++stats_.duplicates;
                return;
            }
            flag = 1;
        }
        ++stats_.distinct;
    }
    const std::uint64_t sent_ns = h ? h->send_ns : publish_ms * 1'000'000;
    const std::uint64_t lat = now_ns > sent_ns ? now_ns - sent_ns : 0;
    stats_.e2e_total.record(lat);
    stats_.e2e_interval.record(lat);
}

void consumer::on_message(const proto::frame_view& f) {
    const auto& m = f.command().message();
    proto::message_id id;
    id.ledger_id = m.message_id().ledgerid();
    id.entry_id = m.message_id().entryid();
    id.partition = m.message_id().has_partition() ? m.message_id().partition() : -1;
    const auto* md = f.metadata();
    if (f.message_error || md == nullptr) {
        on_entry(id, nullptr, f.payload);
        return;
    }
    const proto::message_metadata_fields values{md->publish_time(), md->num_messages_in_batch(),
                                                md->has_num_messages_in_batch(), md->compression()};
    on_entry(id, &values, f.payload);
}

void consumer::on_message_frame(const proto::message_frame& m) {
    proto::message_id id;
    id.ledger_id = m.message.ledger_id;
    id.entry_id = m.message.entry_id;
    id.partition = m.message.partition;
    on_entry(id, &m.metadata, m.payload);
}

void consumer::on_entry(const proto::message_id& id,
                        const proto::message_metadata_fields* md,
                        std::span<const std::byte> payload) {
    // Latency is measured at the socket read that brought the frame (one clock reading per
    // read: the messages of one read arrived together).
    read_clocks();
    if (stats_.consumed == 0) {
        stats_.first_message = last_message_;
    }
    stats_.last_message = last_message_;
    std::uint32_t n = 1;
    if (md == nullptr) {
        ++stats_.bad_messages;
    } else {
        n = md->has_num_messages_in_batch
                ? static_cast<std::uint32_t>(std::max(md->num_messages_in_batch, 1))
                : 1;
        if (md->compression != proto::pb::NONE) {
            ++stats_.bad_messages;  // the perf tool never compresses: not opened
        } else if (md->has_num_messages_in_batch) {
            batch_.reset(payload, md->num_messages_in_batch);
            for (;;) {
                auto next = batch_.next();
                if (!next) {
                    ++stats_.bad_messages;
                    break;
                }
                if (!*next) {
                    break;
                }
                count_payload(batch_.payload(), md->publish_time);
                stats_.consumed_bytes += batch_.payload().size();
            }
        } else {
            count_payload(payload, md->publish_time);
            stats_.consumed_bytes += payload.size();
        }
    }
    stats_.consumed += n;

    // Whole entries are acked: every message of a batch is processed right here.
    unacked_messages_ += n;
    if (config_.ack == ack_mode::cumulative) {
        cumulative_ = id;
        if (unacked_messages_ >= config_.ack_group_max) {
            flush_acks();
        }
    } else {
        ack_ids_.push_back(id);
        if (ack_ids_.size() >= config_.ack_group_max) {
            flush_acks();
        }
    }

    permits_used_ += n;
    if (permits_used_ >= std::max<std::uint32_t>(config_.receiver_queue / 2, 1)) {
        if (auto w = conn_.writer().flow(conn_.out(), 0, permits_used_); w) {
            permits_used_ = 0;
        }
        conn_.flush();
    }
}

void consumer::flush_acks() {
    if (conn_.closed() || (ack_ids_.empty() && !cumulative_)) {
        return;
    }
    proto::ack_args a;
    a.consumer_id = 0;
    a.cumulative = config_.ack == ack_mode::cumulative;
    if (a.cumulative) {
        a.ids = std::span(&*cumulative_, 1);
    } else {
        a.ids = ack_ids_;
    }
    const bool receipts = proto::peer_supports_ack_receipt(conn_.protocol_version());
    if (receipts) {
        a.request_id = next_ack_request_;
    }
    if (!a.cumulative && !proto::peer_supports_multi_message_ack(conn_.protocol_version())) {
        // Below v12: one id per ACK.
        for (const auto& id : ack_ids_) {
            proto::ack_args one = a;
            one.ids = std::span(&id, 1);
            one.request_id.reset();
            if (auto w = conn_.writer().ack(conn_.out(), one); !w) {
                fail(fmt::format("encode ACK: {}", w.error().message()));
                return;
            }
        }
    } else if (auto w = conn_.writer().ack(conn_.out(), a); !w) {
        fail(fmt::format("encode ACK: {}", w.error().message()));
        return;
    } else if (receipts) {
        ++next_ack_request_;
        ++outstanding_acks_;
        ++stats_.ack_requests;
    }
    stats_.acked += unacked_messages_;
    unacked_messages_ = 0;
    ack_ids_.clear();
    cumulative_.reset();
    conn_.flush();
}

asio::awaitable<void> consumer::ack_loop() {
    while (!closing_) {
        timer_.expires_after(config_.ack_group_interval);
        (void)co_await timer_.async_wait(tok);
        flush_acks();
    }
}

void consumer::on_frame(const proto::frame_view& f) {
    const auto& c = f.command();
    switch (f.type()) {
        case proto::command_type::message:
            on_message(f);
            return;
        case proto::command_type::ack_response: {
            const auto& r = c.ackresponse();
            if (outstanding_acks_ > 0) {
                --outstanding_acks_;
            }
            ++stats_.ack_responses;
            if (r.has_error()) {
                ++stats_.ack_errors;
                std::fprintf(stderr, "perf: consumer %s: ACK_RESPONSE error %s\n",
                             config_.topic.c_str(),
                             server_error_text(r.error(), r.message()).c_str());
            }
            return;
        }
        case proto::command_type::close_consumer:
            fail(fmt::format("consumer {}: closed by the broker", config_.topic));
            return;
        case proto::command_type::error:
            fail(fmt::format("consumer {}: ERROR {}", config_.topic,
                             server_error_text(c.error().error(), c.error().message())));
            return;
        default:
            return;  // ACTIVE_CONSUMER_CHANGE, PONG, SUCCESS: nothing to do
    }
}

}  // namespace nereus::app::perf
