#include "nereus/client/detail/producer_impl.h"

#include "nereus/client/detail/logger.h"
#include "nereus/client/detail/topic.h"
#include "nereus/client/errc.h"
#include "nereus/proto/batch_codec.h"
#include "nereus/proto/compression.h"
#include "nereus/proto/errc.h"
#include "nereus/proto/pulsar_api.h"
#include "nereus/proto/send_encoder.h"

#include <algorithm>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <random>

namespace nereus::client::detail {

namespace {

constexpr auto tok = asio::as_tuple(asio::use_awaitable);

std::uint64_t now_ms() {
    return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                          std::chrono::system_clock::now().time_since_epoch())
                                          .count());
}

std::uint64_t to_ms(system_time t) {
    return static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count());
}

// Forwards a connection's callbacks for one partition to the producer, if it still exists.
class partition_listener final : public producer_listener {
public:
    partition_listener(std::weak_ptr<producer_impl> p, std::size_t index)
        : p_(std::move(p)), index_(index) {}
    void on_send_receipt(const proto::pb::BaseCommand& cmd) override {
        if (auto p = p_.lock()) {
            p->on_send_receipt(index_, cmd);
        }
    }
    void on_send_error(const proto::pb::BaseCommand& cmd) override {
        if (auto p = p_.lock()) {
            p->on_send_error(index_, cmd);
        }
    }
    void on_closed_by_broker() override { on_connection_lost(); }
    void on_connection_lost() override {
        if (auto p = p_.lock()) {
            p->on_lost(index_);
        }
    }

private:
    std::weak_ptr<producer_impl> p_;
    std::size_t index_;
};

}  // namespace

struct producer_impl::partition_state {
    std::string topic;
    std::int32_t partition = -1;
    std::uint64_t producer_id = 0;
    std::string name;
    proto::send_encoder encoder;  // SEND frames of plain messages, carrying `name`
    std::shared_ptr<connection> conn;
    std::shared_ptr<partition_listener> listener;
    bool connected = false;
    bool reconnecting = false;
    std::uint64_t next_sequence_id = 0;
    std::deque<send_op> ops;  // sent (or waiting for a connection), awaiting receipts
    // The batch being built.
    std::vector<std::byte> batch_payload;
    std::vector<completion<message_id>> batch_callbacks;
    std::uint64_t batch_first_seq = 0;
    std::uint64_t batch_last_seq = 0;
    std::optional<std::string> batch_key;
    steady::time_point batch_deadline;
    std::uint64_t batch_generation = 0;
    std::unique_ptr<asio::steady_timer> timer;
};

producer_impl::producer_impl(std::shared_ptr<client_impl> client,
                             producer_options options,
                             std::string topic)
    : client_(std::move(client)),
      options_(std::move(options)),
      topic_(std::move(topic)),
      metadata_(std::make_unique<proto::pb::MessageMetadata>()),
      single_(std::make_unique<proto::pb::SingleMessageMetadata>()) {}

producer_impl::~producer_impl() = default;

asio::awaitable<result<void>> producer_impl::open(std::shared_ptr<producer_impl> self) {
    auto& c = *self->client_;
    auto n = co_await c.partitions(self->topic_);
    if (!n) {
        co_return error(n.error());
    }
    const std::uint32_t count = *n == 0 ? 1 : *n;
    for (std::uint32_t i = 0; i < count; ++i) {
        auto ps = std::make_unique<partition_state>();
        ps->topic = *n == 0 ? self->topic_ : partition_name(self->topic_, i);
        ps->partition = *n == 0 ? -1 : static_cast<std::int32_t>(i);
        ps->producer_id = c.next_producer_id();
        ps->listener = std::make_shared<partition_listener>(self, i);
        ps->timer = std::make_unique<asio::steady_timer>(c.strand());
        self->partitions_.push_back(std::move(ps));
    }
    if (self->options_.routing == routing_mode::single_partition) {
        std::random_device rd;
        self->round_robin_ = rd() % count;
    }
    for (std::size_t i = 0; i < self->partitions_.size(); ++i) {
        auto r = co_await connect_partition(self, i);
        if (!r) {
            for (auto& p : self->partitions_) {
                if (p->conn) {
                    p->conn->remove_producer(p->producer_id);
                }
            }
            self->closed_ = true;
            co_return r;
        }
    }
    self->name_ = self->partitions_.front()->name;
    c.add_entity(self);
    co_return result<void>{};
}

asio::awaitable<result<void>> producer_impl::connect_partition(std::shared_ptr<producer_impl> self,
                                                               std::size_t p) {
    auto& ps = *self->partitions_[p];
    auto conn = co_await self->client_->connection_for(ps.topic);
    if (!conn) {
        co_return error(conn.error());
    }
    const auto req = self->client_->next_request_id();
    proto::producer_args a;
    a.topic = ps.topic;
    a.producer_id = ps.producer_id;
    a.request_id = req;
    std::string name = !ps.name.empty() ? ps.name : self->options_.producer_name.value_or("");
    if (!name.empty()) {
        a.producer_name = name;
    }
    std::vector<proto::key_value> md;
    for (const auto& [k, v] : self->options_.properties) {
        md.push_back({k, v});
    }
    a.metadata = md;
    (*conn)->add_producer(ps.producer_id, ps.listener);
    auto resp = co_await (*conn)->request(
        req,
        [&](proto::frame_buffer& out, proto::command_writer& w) { return w.producer(out, a); });
    if (!resp) {
        (*conn)->remove_producer(ps.producer_id);
        co_return error(resp.error());
    }
    if (self->closed_) {
        (*conn)->remove_producer(ps.producer_id);
        co_return error(errc::closed);
    }
    const auto& s = (*resp)->producer_success();
    const bool first = ps.name.empty();
    ps.name = s.producer_name();
    ps.encoder.set_producer_name(ps.name);
    if (first) {
        if (self->options_.initial_sequence_id) {
            ps.next_sequence_id = *self->options_.initial_sequence_id;
        } else if (s.has_last_sequence_id() && s.last_sequence_id() >= 0) {
            ps.next_sequence_id = static_cast<std::uint64_t>(s.last_sequence_id()) + 1;
        }
    }
    ps.conn = *conn;
    ps.connected = true;
    self->writer_.options().max_frame_size = (*conn)->writer().options().max_frame_size;
    // Re-send what awaits a receipt, in order, with the same sequence ids.
    for (const auto& op : ps.ops) {
        ps.conn->send_raw(op.frame);
    }
    co_return result<void>{};
}

asio::awaitable<void> producer_impl::reconnect(std::shared_ptr<producer_impl> self, std::size_t p) {
    auto& ps = *self->partitions_[p];
    auto delay = self->client_->options().reconnect_backoff.initial;
    asio::steady_timer timer(self->client_->strand());
    while (!self->closed_) {
        timer.expires_after(delay);
        (void)co_await timer.async_wait(tok);
        if (self->closed_) {
            break;
        }
        auto r = co_await connect_partition(self, p);
        if (r) {
            NEREUS_LOG(client_log(), info, "producer {} on {} reconnected; {} sends re-sent",
                       ps.name, ps.topic, ps.ops.size());
            break;
        }
        NEREUS_LOG(client_log(), debug, "producer reconnect {} failed: {}", ps.topic,
                   r.error().message());
        delay = std::min(delay * 2, self->client_->options().reconnect_backoff.max);
    }
    ps.reconnecting = false;
}

void producer_impl::on_lost(std::size_t p) {
    auto& ps = *partitions_[p];
    ps.connected = false;
    if (ps.conn) {
        ps.conn->remove_producer(ps.producer_id);
        ps.conn.reset();
    }
    if (closed_ || ps.reconnecting) {
        return;
    }
    ps.reconnecting = true;
    asio::co_spawn(client_->strand(), reconnect(shared_from_this(), p), asio::detached);
}

steady::time_point producer_impl::send_deadline(steady::time_point now) const {
    return options_.send_timeout.count() > 0 ? now + options_.send_timeout
                                             : steady::time_point::max();
}

void producer_impl::send(outgoing_message m, completion<message_id> done) {
    if (closed_) {
        done(error(errc::closed));
        return;
    }
    if (pending_ >= options_.max_pending_messages || !blocked_.empty()) {
        if (options_.queue_full == queue_full_policy::fail) {
            done(error(errc::producer_queue_full));
            return;
        }
        blocked_.push_back({std::move(m), std::move(done), send_deadline(steady::now())});
        return;
    }
    admit(std::move(m), std::move(done));
}

void producer_impl::admit(outgoing_message m, completion<message_id> done) {
    ++pending_;
    const auto p = route(m);
    add_to_partition(p, std::move(m), std::move(done));
}

std::size_t producer_impl::route(const outgoing_message& m) {
    const auto n = partitions_.size();
    if (n == 1) {
        return 0;
    }
    const auto& key = m.ordering_key ? m.ordering_key : m.key;
    if (m.key) {
        return murmur3_32(*m.key) % n;
    }
    (void)key;
    if (options_.routing == routing_mode::single_partition) {
        return round_robin_ % n;
    }
    return round_robin_++ % n;
}

void producer_impl::add_to_partition(std::size_t p,
                                     outgoing_message m,
                                     completion<message_id> done) {
    auto& ps = *partitions_[p];
    const std::uint64_t seq = m.sequence_id.value_or(ps.next_sequence_id);
    ps.next_sequence_id = seq + 1;
    const auto now = steady::now();
    const bool batchable = options_.batching && !m.deliver_at;
    const auto codec = static_cast<proto::compression>(options_.compression);
    if (!batchable) {
        flush_batch(p);
        // A plain message (no key, properties, times, delay or compression) has its SEND encoded
        // directly, byte for byte the protobuf path's frame.
        const bool plain = !m.key && !m.ordering_key && m.properties.empty() && !m.event_time &&
                           !m.deliver_at && codec == proto::compression::none;
        const std::uint64_t publish_ms = now_ms();
        auto& md = *metadata_;
        std::span<const std::byte> payload = m.payload;
        if (!plain) {
            md.Clear();
            md.set_producer_name(ps.name);
            md.set_sequence_id(seq);
            md.set_publish_time(publish_ms);
            if (m.key) {
                md.set_partition_key(*m.key);
            }
            if (m.ordering_key) {
                md.set_ordering_key(*m.ordering_key);
            }
            for (const auto& [k, v] : m.properties) {
                auto* kv = md.add_properties();
                kv->set_key(k);
                kv->set_value(v);
            }
            if (m.event_time) {
                md.set_event_time(to_ms(*m.event_time));
            }
            if (m.deliver_at) {
                md.set_deliver_at_time(static_cast<std::int64_t>(to_ms(*m.deliver_at)));
            }
            if (codec != proto::compression::none) {
                auto c = proto::compress(codec, m.payload, compress_scratch_);
                if (!c) {
                    released(1);
                    done(error(c.error()));
                    return;
                }
                payload = *c;
                md.set_compression(static_cast<proto::pb::CompressionType>(options_.compression));
                md.set_uncompressed_size(static_cast<std::uint32_t>(m.payload.size()));
            }
        }
        // As Pulsar's clients: a payload (after compression) over the broker's max message size
        // is refused here, before the broker would refuse it.
        if (ps.conn && payload.size() > ps.conn->max_message_size()) {
            released(1);
            done(error(errc::message_too_big));
            return;
        }
        send_op op;
        op.sequence_id = seq;
        op.highest_sequence_id = seq;
        op.num_messages = 1;
        op.deadline = send_deadline(now);
        proto::send_args a;
        a.producer_id = ps.producer_id;
        a.sequence_id = seq;
        a.num_messages = 1;
        auto w = plain ? ps.encoder.append(op.frame, a,
                                           proto::send_metadata{.sequence_id = seq,
                                                                .publish_time_ms = publish_ms},
                                           payload, writer_.options())
                       : writer_.send(op.frame, a, md, payload);
        if (!w) {
            released(1);
            done(error(w.error() == make_error_code(proto::errc::frame_too_large)
                           ? make_error_code(errc::message_too_big)
                           : w.error()));
            return;
        }
        op.callbacks.push_back(std::move(done));
        enqueue(p, std::move(op));
        return;
    }
    // Batches hold one key (so Key_Shared dispatch by the entry's key stays right).
    if (!ps.batch_callbacks.empty() &&
        (ps.batch_key != m.key ||
         ps.batch_payload.size() + m.payload.size() > options_.batch_max_bytes)) {
        flush_batch(p);
    }
    auto& sm = *single_;
    sm.Clear();
    if (m.key) {
        sm.set_partition_key(*m.key);
    }
    if (m.ordering_key) {
        sm.set_ordering_key(*m.ordering_key);
    }
    for (const auto& [k, v] : m.properties) {
        auto* kv = sm.add_properties();
        kv->set_key(k);
        kv->set_value(v);
    }
    if (m.event_time) {
        sm.set_event_time(to_ms(*m.event_time));
    }
    sm.set_sequence_id(seq);
    proto::batch_builder b(ps.batch_payload);
    if (auto r = b.add(sm, m.payload); !r) {
        released(1);
        done(error(r.error()));
        return;
    }
    if (ps.batch_callbacks.empty()) {
        ps.batch_first_seq = seq;
        ps.batch_key = m.key;
        ps.batch_deadline = send_deadline(now);
        ++ps.batch_generation;
        if (options_.batch_max_delay.count() > 0 && options_.batch_max_messages > 1) {
            asio::co_spawn(client_->strand(),
                           batch_timer(shared_from_this(), p, ps.batch_generation), asio::detached);
        }
    }
    ps.batch_last_seq = seq;
    ps.batch_callbacks.push_back(std::move(done));
    if (ps.batch_callbacks.size() >= options_.batch_max_messages ||
        ps.batch_payload.size() >= options_.batch_max_bytes) {
        flush_batch(p);
    }
}

asio::awaitable<void> producer_impl::batch_timer(std::shared_ptr<producer_impl> self,
                                                 std::size_t p,
                                                 std::uint64_t generation) {
    asio::steady_timer t(self->client_->strand());
    t.expires_after(self->options_.batch_max_delay);
    (void)co_await t.async_wait(tok);
    auto& ps = *self->partitions_[p];
    if (ps.batch_generation == generation && !ps.batch_callbacks.empty()) {
        self->flush_batch(p);
    }
}

void producer_impl::flush_batch(std::size_t p) {
    auto& ps = *partitions_[p];
    if (ps.batch_callbacks.empty()) {
        return;
    }
    ++ps.batch_generation;  // the pending timer (if any) now does nothing
    const auto n = static_cast<std::int32_t>(ps.batch_callbacks.size());
    auto& md = *metadata_;
    md.Clear();
    md.set_producer_name(ps.name);
    md.set_sequence_id(ps.batch_first_seq);
    md.set_publish_time(now_ms());
    md.set_num_messages_in_batch(n);
    if (ps.batch_key) {
        md.set_partition_key(*ps.batch_key);
    }
    if (n > 1) {
        md.set_highest_sequence_id(ps.batch_last_seq);
    }
    std::span<const std::byte> payload = ps.batch_payload;
    const auto codec = static_cast<proto::compression>(options_.compression);
    send_op op;
    op.sequence_id = ps.batch_first_seq;
    op.highest_sequence_id = ps.batch_last_seq;
    op.num_messages = n;
    op.batched = true;
    op.deadline = ps.batch_deadline;
    op.callbacks = std::move(ps.batch_callbacks);
    ps.batch_callbacks.clear();
    std::error_code failed;
    if (codec != proto::compression::none) {
        auto c = proto::compress(codec, ps.batch_payload, compress_scratch_);
        if (!c) {
            failed = c.error();
        } else {
            payload = *c;
            md.set_compression(static_cast<proto::pb::CompressionType>(options_.compression));
            md.set_uncompressed_size(static_cast<std::uint32_t>(ps.batch_payload.size()));
        }
    }
    if (!failed) {
        proto::send_args a;
        a.producer_id = ps.producer_id;
        a.sequence_id = op.sequence_id;
        a.num_messages = n;
        if (n > 1) {
            a.highest_sequence_id = op.highest_sequence_id;
        }
        // Without a key or compression the metadata has only the direct encoder's fields.
        auto w =
            !ps.batch_key && codec == proto::compression::none
                ? ps.encoder.append(op.frame, a,
                                    proto::send_metadata{
                                        .sequence_id = ps.batch_first_seq,
                                        .publish_time_ms = md.publish_time(),
                                        .num_messages_in_batch = n,
                                        .highest_sequence_id =
                                            n > 1 ? std::optional<std::uint64_t>(ps.batch_last_seq)
                                                  : std::nullopt},
                                    payload, writer_.options())
                : writer_.send(op.frame, a, md, payload);
        if (!w) {
            failed = w.error() == make_error_code(proto::errc::frame_too_large)
                         ? make_error_code(errc::message_too_big)
                         : w.error();
        }
    }
    ps.batch_payload.clear();
    ps.batch_key.reset();
    if (failed) {
        for (auto& cb : op.callbacks) {
            cb(error(failed));
        }
        released(static_cast<std::uint32_t>(n));
        return;
    }
    enqueue(p, std::move(op));
}

void producer_impl::enqueue(std::size_t p, send_op op) {
    auto& ps = *partitions_[p];
    if (ps.connected && ps.conn) {
        ps.conn->send_raw(op.frame);
    }
    ps.ops.push_back(std::move(op));
}

void producer_impl::on_send_receipt(std::size_t p, const proto::pb::BaseCommand& cmd) {
    auto& ps = *partitions_[p];
    const auto& r = cmd.send_receipt();
    const auto seq = r.sequence_id();
    while (!ps.ops.empty()) {
        auto& op = ps.ops.front();
        if (seq < op.sequence_id) {
            return;  // a duplicate receipt of something already completed
        }
        if (seq > op.sequence_id) {
            // A receipt for a later message: the broker lost ours. Resync by reconnecting
            // (everything pending is re-sent).
            NEREUS_LOG(client_log(), warn,
                       "producer {} on {}: receipt for seq {} while {} is pending; reconnecting",
                       ps.name, ps.topic, seq, op.sequence_id);
            if (ps.conn) {
                ps.conn->close();
            }
            return;
        }
        message_id id;
        id.ledger = static_cast<std::int64_t>(r.message_id().ledgerid());
        id.entry = static_cast<std::int64_t>(r.message_id().entryid());
        id.partition = ps.partition;
        auto done = std::move(op);
        ps.ops.pop_front();
        last_sequence_id_ = std::max<std::int64_t>(
            last_sequence_id_, static_cast<std::int64_t>(done.highest_sequence_id));
        complete_op(done, id);
        return;
    }
}

void producer_impl::complete_op(send_op& op, const result<message_id>& first) {
    const auto n = static_cast<std::int32_t>(op.callbacks.size());
    for (std::int32_t i = 0; i < n; ++i) {
        if (!first) {
            op.callbacks[static_cast<std::size_t>(i)](error(first.error()));
            continue;
        }
        message_id id = *first;
        if (op.batched) {
            id.batch_index = i;
            id.batch_size = n;
        }
        op.callbacks[static_cast<std::size_t>(i)](id);
    }
    released(static_cast<std::uint32_t>(n));
}

void producer_impl::on_send_error(std::size_t p, const proto::pb::BaseCommand& cmd) {
    auto& ps = *partitions_[p];
    const auto& e = cmd.send_error();
    NEREUS_LOG(client_log(), warn, "producer {} on {}: SEND_ERROR seq {}: {} {}", ps.name, ps.topic,
               e.sequence_id(), static_cast<int>(e.error()), e.message());
    for (auto it = ps.ops.begin(); it != ps.ops.end(); ++it) {
        if (it->sequence_id == e.sequence_id()) {
            auto op = std::move(*it);
            ps.ops.erase(it);
            complete_op(op, error(make_broker_error(e.error())));
            return;
        }
    }
}

void producer_impl::released(std::uint32_t n) {
    pending_ -= std::min(pending_, n);
    while (!blocked_.empty() && pending_ < options_.max_pending_messages && !closed_) {
        auto b = std::move(blocked_.front());
        blocked_.pop_front();
        admit(std::move(b.m), std::move(b.done));
    }
    check_flush_waiters();
}

void producer_impl::check_flush_waiters() {
    std::erase_if(flush_waiters_, [this](flush_waiter& w) {
        for (std::size_t p = 0; p < partitions_.size(); ++p) {
            const auto& ops = partitions_[p]->ops;
            if (w.last[p] && !ops.empty() && ops.front().sequence_id <= *w.last[p]) {
                return false;
            }
        }
        w.done(result<void>{});
        return true;
    });
}

void producer_impl::flush(completion<void> done) {
    flush_waiter w;
    for (std::size_t p = 0; p < partitions_.size(); ++p) {
        flush_batch(p);
        const auto& ops = partitions_[p]->ops;
        w.last.push_back(ops.empty() ? std::nullopt
                                     : std::optional<std::uint64_t>(ops.back().sequence_id));
    }
    w.done = std::move(done);
    flush_waiters_.push_back(std::move(w));
    check_flush_waiters();
}

void producer_impl::fail_all(std::error_code ec) {
    auto blocked = std::move(blocked_);
    blocked_.clear();
    for (auto& b : blocked) {
        b.done(error(ec));
    }
    for (std::size_t p = 0; p < partitions_.size(); ++p) {
        auto& ps = *partitions_[p];
        auto ops = std::move(ps.ops);
        ps.ops.clear();
        for (auto& op : ops) {
            complete_op(op, error(ec));
        }
        auto cbs = std::move(ps.batch_callbacks);
        ps.batch_callbacks.clear();
        ps.batch_payload.clear();
        for (auto& cb : cbs) {
            cb(error(ec));
        }
        released(static_cast<std::uint32_t>(cbs.size()));
    }
}

void producer_impl::tick(steady::time_point now) {
    if (closed_) {
        return;
    }
    bool expired = false;
    for (auto& ps : partitions_) {
        if ((!ps->ops.empty() && ps->ops.front().deadline <= now) ||
            (!ps->batch_callbacks.empty() && ps->batch_deadline <= now)) {
            expired = true;
        }
    }
    if (expired) {
        // As Pulsar's clients do: a send timeout fails every pending message.
        NEREUS_LOG(client_log(), warn, "producer {} on {}: send timeout, failing {} pending", name_,
                   topic_, pending_);
        fail_all(errc::timeout);
        return;
    }
    while (!blocked_.empty() && blocked_.front().deadline <= now) {
        auto b = std::move(blocked_.front());
        blocked_.pop_front();
        b.done(error(errc::timeout));
    }
}

asio::awaitable<result<void>> producer_impl::close(std::shared_ptr<producer_impl> self) {
    if (self->closed_) {
        co_return result<void>{};
    }
    // Flush, then wait (bounded) for the receipts of everything pending.
    for (std::size_t p = 0; p < self->partitions_.size(); ++p) {
        self->flush_batch(p);
    }
    const auto until = steady::now() + self->client_->options().operation_timeout;
    asio::steady_timer t(self->client_->strand());
    while (steady::now() < until) {
        bool empty = self->blocked_.empty();
        for (auto& ps : self->partitions_) {
            empty = empty && ps->ops.empty();
        }
        if (empty) {
            break;
        }
        t.expires_after(std::chrono::milliseconds(5));
        (void)co_await t.async_wait(tok);
    }
    self->closed_ = true;
    self->fail_all(errc::closed);
    result<void> out;
    for (auto& ps : self->partitions_) {
        if (!ps->conn || !ps->connected) {
            continue;
        }
        auto conn = ps->conn;
        conn->remove_producer(ps->producer_id);
        const auto req = self->client_->next_request_id();
        const auto id = ps->producer_id;
        auto r = co_await conn->request(
            req, [&](proto::frame_buffer& out_buf, proto::command_writer& w) {
                return w.close_producer(out_buf, id, req);
            });
        if (!r && out) {
            out = error(r.error());
        }
        ps->connected = false;
        ps->conn.reset();
    }
    self->client_->remove_entity(self.get());
    co_return out;
}

asio::awaitable<result<void>> producer_impl::close_from_client() {
    auto co_result_ = co_await close(shared_from_this());
    co_return co_result_;
}

}  // namespace nereus::client::detail
