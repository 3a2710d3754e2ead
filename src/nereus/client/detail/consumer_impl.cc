#include "nereus/client/detail/consumer_impl.h"

#include "nereus/client/detail/logger.h"
#include "nereus/client/detail/message_data.h"
#include "nereus/client/detail/producer_impl.h"
#include "nereus/client/detail/topic.h"
#include "nereus/client/errc.h"
#include "nereus/proto/compression.h"
#include "nereus/proto/pulsar_api.h"

#include <fmt/format.h>

#include <algorithm>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <charconv>
#include <random>
#include <utility>

namespace nereus::client::detail {

namespace {

constexpr auto tok = asio::as_tuple(asio::use_awaitable);
constexpr auto no_pos = static_cast<std::int64_t>(-1);

class topic_listener final : public consumer_listener {
public:
    topic_listener(std::weak_ptr<consumer_impl> c, std::size_t index)
        : c_(std::move(c)), index_(index) {}
    void on_message(const proto::frame_view& f) override {
        if (auto c = c_.lock()) {
            c->on_message(index_, f);
        }
    }
    void on_closed_by_broker() override {
        if (auto c = c_.lock()) {
            c->on_closed(index_, false);
        }
    }
    void on_connection_lost() override {
        if (auto c = c_.lock()) {
            c->on_closed(index_, true);
        }
    }

private:
    std::weak_ptr<consumer_impl> c_;
    std::size_t index_;
};

std::string random_name(std::string_view prefix) {
    static thread_local std::mt19937_64 rng{std::random_device{}()};
    return fmt::format("{}-{:010x}", prefix, rng() & 0xffffffffffULL);
}

// N of a "...-partition-N" name, -1 for any other topic.
std::int32_t partition_index(const std::string& topic) {
    const auto base = partitioned_topic_of(topic);
    if (base.size() == topic.size()) {
        return -1;
    }
    std::int32_t n = -1;
    const auto digits = std::string_view(topic).substr(base.size() + 11);  // "-partition-"
    std::from_chars(digits.data(), digits.data() + digits.size(), n);
    return n;
}

system_time from_ms(std::uint64_t ms) {
    return system_time(std::chrono::milliseconds(static_cast<std::int64_t>(ms)));
}

std::vector<std::int64_t> all_set(std::int32_t n) {
    std::vector<std::int64_t> bits(static_cast<std::size_t>((n + 63) / 64), 0);
    for (std::int32_t i = 0; i < n; ++i) {
        bits[static_cast<std::size_t>(i / 64)] |= std::int64_t{1} << (i % 64);
    }
    return bits;
}

void clear_bit(std::vector<std::int64_t>& bits, std::int32_t i) {
    const auto w = static_cast<std::size_t>(i / 64);
    if (w < bits.size()) {
        bits[w] &= ~(std::int64_t{1} << (i % 64));
    }
}

bool bit_set(std::span<const std::int64_t> bits, std::int32_t i) {
    const auto w = static_cast<std::size_t>(i / 64);
    return w < bits.size() && (bits[w] & (std::int64_t{1} << (i % 64))) != 0;
}

bool none_set(const std::vector<std::int64_t>& bits) {
    return std::all_of(bits.begin(), bits.end(), [](std::int64_t w) { return w == 0; });
}

asio::awaitable<result<message_id>> send_via(std::shared_ptr<producer_impl> p, outgoing_message m) {
    const auto& ex = p->client()->strand();
    // g++ 12 destroys a lambda temporary inside a co_await expression twice (its captured
    // shared_ptr loses a reference): the initiation is a named local, never a temporary.
    auto init = [&p, &m, &ex](auto h) {
        p->send(std::move(m), completion<message_id>(handler<message_id>(std::move(h)), ex));
    };
    auto co_result_ =
        co_await asio::async_initiate<const asio::use_awaitable_t<>&, void(result<message_id>)>(
            init, asio::use_awaitable);
    co_return co_result_;
}

}  // namespace

struct consumer_impl::topic_state {
    std::string topic;
    std::int32_t partition = -1;
    std::uint64_t consumer_id = 0;
    std::shared_ptr<connection> conn;
    std::shared_ptr<topic_listener> listener;
    bool connected = false;
    bool reconnecting = false;
    bool seeking = false;
    bool subscribing = false;
    // Pattern subscriptions: a topic found by listing the namespace (closed again when no longer
    // listed); `removed`: closed for good (its slot is kept so topic indexes stay stable).
    bool from_pattern = false;
    bool removed = false;
    std::uint32_t consumed = 0;  // messages consumed since the last FLOW
    // Reader: the last message handed out (resume point) and the start filter.
    std::optional<message_id> last_dequeued;
    std::optional<message_id> start_filter;  // drop messages at or before (inclusive: before)
    // `topic` and the last producer name seen, shared by the messages received (on_message).
    std::shared_ptr<const std::string> shared_name;
    std::shared_ptr<const std::string> last_producer;
    bool filter_inclusive = false;
    // Ack grouping (consumer.h): individual acks made while `acks_in_flight` > 0 wait here
    // (their ids, batch bits owned) and go out as one ACK when an answer comes. `ack_epoch`
    // changes when the connection goes, so a late answer of the old one touches nothing.
    struct waiting_ack {
        std::uint64_t ledger = 0;
        std::uint64_t entry = 0;
        std::vector<std::int64_t> bits;  // batch bits still unacked; empty: the whole entry
        std::int32_t batch_size = 0;
    };
    std::vector<waiting_ack> waiting_acks;
    std::vector<completion<void>> ack_waiters;
    std::uint32_t acks_in_flight = 0;
    std::uint64_t ack_epoch = 0;
};

consumer_impl::consumer_impl(std::shared_ptr<client_impl> client,
                             consumer_options options,
                             std::optional<reader_options> reader)
    : client_(std::move(client)), options_(std::move(options)), reader_(std::move(reader)) {}

consumer_impl::~consumer_impl() = default;

std::vector<std::string> consumer_impl::topic_names() const {
    std::lock_guard lock(active_mu_);
    return active_;
}

const std::string& consumer_impl::reader_topic() const noexcept {
    static const std::string none;
    return names_.empty() ? none : names_.front();
}

void consumer_impl::publish_names() {
    std::vector<std::string> now;
    for (const auto& ts : topics_) {
        if (!ts->removed)
            now.push_back(ts->topic);
    }
    std::lock_guard lock(active_mu_);
    active_ = std::move(now);
}

std::size_t consumer_impl::add_topic_state(const std::string& name,
                                           std::int32_t partition,
                                           bool from_pattern) {
    // A removed slot of the same topic that nothing uses any more is taken again, so a topic
    // that comes and goes does not grow the table.
    for (std::size_t i = 0; i < topics_.size(); ++i) {
        auto& ts = *topics_[i];
        if (ts.removed && ts.topic == name && !ts.reconnecting && !ts.subscribing && !ts.seeking) {
            ts.removed = false;
            ts.consumer_id = client_->next_consumer_id();
            ts.consumed = 0;
            ts.connected = false;
            ts.conn.reset();
            fail_waiting_acks(static_cast<std::uint32_t>(i), errc::disconnected);
            return i;
        }
    }
    const auto i = topics_.size();
    auto ts = std::make_unique<topic_state>();
    ts->topic = name;
    ts->partition = partition;
    ts->consumer_id = client_->next_consumer_id();
    ts->listener = std::make_shared<topic_listener>(weak_from_this(), i);
    ts->from_pattern = from_pattern;
    topics_.push_back(std::move(ts));
    names_.push_back(name);
    return i;
}

std::string consumer_impl::dlq_topic() const {
    if (options_.dead_letter && !options_.dead_letter->dead_letter_topic.empty()) {
        return options_.dead_letter->dead_letter_topic;
    }
    return fmt::format("{}-{}-DLQ", base_topic_name(names_.empty() ? "" : names_.front()),
                       options_.subscription);
}

std::string consumer_impl::retry_topic() const {
    if (options_.dead_letter && !options_.dead_letter->retry_letter_topic.empty()) {
        return options_.dead_letter->retry_letter_topic;
    }
    return fmt::format("{}-{}-RETRY", base_topic_name(names_.empty() ? "" : names_.front()),
                       options_.subscription);
}

asio::awaitable<result<void>> consumer_impl::open(std::shared_ptr<consumer_impl> self) {
    auto& c = *self->client_;
    std::vector<std::string> requested = self->options_.topics;
    if (self->reader_) {
        requested = {self->reader_->topic};
        self->options_.subscription = random_name("reader");
        self->options_.type = subscription_type::exclusive;
        self->options_.receiver_queue_size = self->reader_->receiver_queue_size;
        self->options_.consumer_name = self->reader_->reader_name;
    }
    const bool by_pattern = !self->reader_ && !self->options_.topics_pattern.empty();
    if ((requested.empty() && !by_pattern) || (by_pattern && !requested.empty()) ||
        self->options_.subscription.empty() || self->options_.receiver_queue_size == 0) {
        co_return error(errc::invalid_argument);
    }
    if (by_pattern) {
        // The retry-letter topic's default name comes from the (first) topic: a pattern
        // subscription names it explicitly.
        if (self->options_.retry_enable &&
            (!self->options_.dead_letter ||
             self->options_.dead_letter->retry_letter_topic.empty())) {
            co_return error(errc::invalid_argument);
        }
        auto p = topic_pattern::compile(self->options_.topics_pattern);
        if (!p) {
            co_return error(p.error());
        }
        self->pattern_ = std::move(*p);
        auto listed = co_await c.topics_of_namespace(self->pattern_->namespace_name());
        if (!listed) {
            co_return error(listed.error());
        }
        std::vector<std::string> matched;
        for (const auto& n : *listed) {
            if (self->pattern_->matches(n) &&
                std::find(matched.begin(), matched.end(), n) == matched.end()) {
                matched.push_back(n);
            }
        }
        for (const auto& n : matched) {
            (void)self->add_topic_state(n, partition_index(n), true);
        }
    }
    std::vector<std::string> full;
    for (const auto& t : requested) {
        auto f = full_topic_name(t);
        if (!f) {
            co_return error(f.error());
        }
        full.push_back(*f);
    }
    if (!self->reader_ && self->options_.retry_enable) {
        // The retry-letter topic is consumed by this consumer too (as Java's enableRetry).
        auto saved = std::move(self->names_);
        self->names_ = full;  // for retry_topic()'s default name
        auto rt = full_topic_name(self->retry_topic());
        self->names_ = std::move(saved);
        if (!rt) {
            co_return error(rt.error());
        }
        full.push_back(*rt);
    }
    for (const auto& t : full) {
        auto n = co_await c.partitions(t);
        if (!n) {
            co_return error(n.error());
        }
        if (*n == 0) {
            self->names_.push_back(t);
        } else {
            for (std::uint32_t i = 0; i < *n; ++i) {
                self->names_.push_back(partition_name(t, i));
            }
        }
        const auto parts = *n;
        const auto first = self->topics_.size();
        for (std::size_t i = first; i < self->names_.size(); ++i) {
            auto ts = std::make_unique<topic_state>();
            ts->topic = self->names_[i];
            ts->partition = parts == 0 ? -1 : static_cast<std::int32_t>(i - first);
            ts->consumer_id = c.next_consumer_id();
            ts->listener = std::make_shared<topic_listener>(self, i);
            if (self->reader_) {
                const auto& start = self->reader_->start_message_id;
                if (start != message_id::earliest() && start != message_id::latest()) {
                    ts->start_filter = start;
                    ts->filter_inclusive = self->reader_->start_inclusive;
                }
            }
            self->topics_.push_back(std::move(ts));
        }
    }
    if (self->options_.consumer_name.empty()) {
        self->options_.consumer_name = random_name("nereus");
    }
    self->publish_names();
    for (std::size_t i = 0; i < self->topics_.size(); ++i) {
        auto r = co_await subscribe_topic(self, i);
        if (!r) {
            self->closed_ = true;
            for (std::size_t j = 0; j < self->topics_.size(); ++j) {
                auto& ts = self->topics_[j];
                if (ts->conn && ts->connected) {
                    ts->conn->remove_consumer(ts->consumer_id);
                    const auto req = c.next_request_id();
                    const auto id = ts->consumer_id;
                    (void)co_await ts->conn->request(
                        req, [&](proto::frame_buffer& out, proto::command_writer& w) {
                            return w.close_consumer(out, id, req);
                        });
                }
            }
            co_return r;
        }
    }
    if (self->pattern_) {
        self->next_discovery_ = steady::now() + self->options_.pattern_auto_discovery_period;
    }
    c.add_entity(self);
    co_return result<void>{};
}

asio::awaitable<result<void>> consumer_impl::subscribe_topic(std::shared_ptr<consumer_impl> self,
                                                             std::size_t t) {
    auto& ts = *self->topics_[t];
    ts.subscribing = true;
    auto r = co_await subscribe_topic_once(self, t);
    ts.subscribing = false;
    co_return r;
}

asio::awaitable<result<void>> consumer_impl::subscribe_topic_once(
    std::shared_ptr<consumer_impl> self, std::size_t t) {
    auto& ts = *self->topics_[t];
    auto conn = co_await self->client_->connection_for(ts.topic);
    if (!conn) {
        co_return error(conn.error());
    }
    const auto req = self->client_->next_request_id();
    proto::subscribe_args a;
    a.topic = ts.topic;
    a.subscription = self->options_.subscription;
    a.sub_type = static_cast<std::int32_t>(self->options_.type);
    a.consumer_id = ts.consumer_id;
    a.request_id = req;
    a.consumer_name = self->options_.consumer_name;
    a.priority_level = self->options_.priority_level;
    a.initial_position = static_cast<std::int32_t>(self->options_.start);
    a.read_compacted =
        self->reader_ ? self->reader_->read_compacted : self->options_.read_compacted;
    std::vector<proto::key_value> md;
    for (const auto& [k, v] : self->options_.properties) {
        md.push_back({k, v});
    }
    a.metadata = md;
    if (self->reader_) {
        a.durable = false;
        message_id start = self->reader_->start_message_id;
        if (ts.last_dequeued) {
            start = *ts.last_dequeued;
            ts.start_filter = start;
            ts.filter_inclusive = false;
        }
        proto::message_id pid;
        pid.ledger_id = static_cast<std::uint64_t>(start.ledger);
        pid.entry_id = static_cast<std::uint64_t>(start.entry);
        pid.partition = ts.partition;
        pid.batch_index = start.batch_index;
        a.start_message_id = pid;
        if (start == message_id::earliest()) {
            a.initial_position = static_cast<std::int32_t>(initial_position::earliest);
        }
    }
    (*conn)->add_consumer(ts.consumer_id, ts.listener);
    auto resp = co_await (*conn)->request(
        req,
        [&](proto::frame_buffer& out, proto::command_writer& w) { return w.subscribe(out, a); });
    if (!resp) {
        (*conn)->remove_consumer(ts.consumer_id);
        co_return error(resp.error());
    }
    if (self->closed_ || ts.removed) {
        // Closed (or, for a pattern subscription, the topic dropped) while subscribing: the
        // broker's consumer must not keep messages this one will never receive.
        (*conn)->remove_consumer(ts.consumer_id);
        const auto creq = self->client_->next_request_id();
        const auto cid = ts.consumer_id;
        (void)co_await (*conn)->request(creq,
                                        [&](proto::frame_buffer& out, proto::command_writer& w) {
                                            return w.close_consumer(out, cid, creq);
                                        });
        co_return error(errc::closed);
    }
    ts.conn = *conn;
    ts.connected = true;
    ts.consumed = 0;
    const auto id = ts.consumer_id;
    const auto permits = self->options_.receiver_queue_size;
    (void)ts.conn->send([&](proto::frame_buffer& out, proto::command_writer& w) {
        return w.flow(out, id, permits);
    });
    co_return result<void>{};
}

void consumer_impl::on_closed(std::size_t t, bool connection_lost) {
    auto& ts = *topics_[t];
    ts.connected = false;
    if (ts.conn) {
        ts.conn->remove_consumer(ts.consumer_id);
        ts.conn.reset();
    }
    (void)connection_lost;
    fail_waiting_acks(static_cast<std::uint32_t>(t), errc::disconnected);
    // What was buffered will be redelivered by the broker (or is gone after a seek).
    drop_topic_state(static_cast<std::uint32_t>(t));
    if (closed_ || ts.removed || ts.reconnecting || ts.seeking) {
        return;
    }
    ts.reconnecting = true;
    asio::co_spawn(client_->strand(), resubscribe(shared_from_this(), t), asio::detached);
}

asio::awaitable<void> consumer_impl::resubscribe(std::shared_ptr<consumer_impl> self,
                                                 std::size_t t) {
    auto& ts = *self->topics_[t];
    auto delay = self->client_->options().reconnect_backoff.initial;
    asio::steady_timer timer(self->client_->strand());
    bool first = true;
    while (!self->closed_ && !ts.removed) {
        if (!first) {
            timer.expires_after(delay);
            (void)co_await timer.async_wait(tok);
            delay = std::min(delay * 2, self->client_->options().reconnect_backoff.max);
        }
        first = false;
        if (self->closed_ || ts.removed) {
            break;
        }
        auto r = co_await subscribe_topic(self, t);
        if (r) {
            NEREUS_LOG(client_log(), info, "consumer {} on {} re-subscribed",
                       self->options_.consumer_name, ts.topic);
            break;
        }
        NEREUS_LOG(client_log(), debug, "re-subscribe {} failed: {}", ts.topic,
                   r.error().message());
    }
    ts.reconnecting = false;
}

void consumer_impl::drop_topic_state(std::uint32_t t) {
    std::erase_if(queue_, [t](const message& m) { return m.data()->topic_index == t; });
    std::erase_if(entries_, [t](const auto& kv) { return kv.first.topic == t; });
    std::erase_if(nacks_, [t](const auto& kv) { return kv.first.topic == t; });
}

void consumer_impl::on_message(std::size_t t, const proto::frame_view& f) {
    auto& ts = *topics_[t];
    const auto ti = static_cast<std::uint32_t>(t);
    // The decoder's fast_message path (or its protobuf fallback) fills f.message and
    // f.consumer_metadata with the same values (tests/unit/proto/message_scan_test.cc).
    const auto& cmd = f.message;
    message_id base;
    base.ledger = static_cast<std::int64_t>(cmd.ledger_id);
    base.entry = static_cast<std::int64_t>(cmd.entry_id);
    base.partition = ts.partition;
    if (f.message_error || !f.consumer_metadata) {
        NEREUS_LOG(client_log(), warn, "consumer {}: dropping corrupt message {} on {}: {}",
                   options_.consumer_name, base.to_string(), ts.topic,
                   f.message_error ? f.message_error.message() : std::string("no metadata"));
        consumed(ti, 1);
        return;
    }
    const auto& md = *f.consumer_metadata;
    std::span<const std::byte> payload = f.payload;
    if (md.compression != proto::pb::NONE) {
        auto d = proto::decompress(static_cast<proto::compression>(md.compression), payload,
                                   md.uncompressed_size, scratch_);
        if (!d) {
            NEREUS_LOG(client_log(), warn, "consumer {}: cannot decompress {}: {}",
                       options_.consumer_name, base.to_string(), d.error().message());
            consumed(ti, md.has_num_messages_in_batch
                             ? static_cast<std::uint32_t>(md.num_messages_in_batch)
                             : 1);
            return;
        }
        payload = *d;
    }
    const auto redeliveries = cmd.redelivery_count;
    // A partly acknowledged batch comes with the indexes still to deliver in CommandMessage's
    // own ack_set (1 = not yet acknowledged), as Pulsar's broker sends it and its clients read
    // it (ConsumerImpl.messageReceived); MessageIdData.ack_set is the ACK direction's field.
    const std::span<const std::int64_t> ack_set = cmd.ack_set;
    const auto now = steady::now();
    // Strings shared between messages instead of copied into each: the topic's name, and the
    // producer name while consecutive messages come from one producer.
    if (!ts.shared_name) {
        ts.shared_name = std::make_shared<const std::string>(ts.topic);
    }
    if (!ts.last_producer || *ts.last_producer != md.producer_name) {
        ts.last_producer = std::make_shared<const std::string>(md.producer_name);
    }
    auto make = [&](std::int32_t index, std::int32_t size, std::span<const std::byte> bytes) {
        auto d = make_message_data(bytes);
        d->id = base;
        d->id.batch_index = index;
        d->id.batch_size = size;
        d->topic = ts.shared_name;
        d->publish_time = from_ms(md.publish_time);
        if (md.has_event_time && md.event_time > 0) {
            d->event_time = from_ms(md.event_time);
        }
        d->producer_name = ts.last_producer;
        d->sequence_id = md.sequence_id;
        d->redelivery_count = redeliveries;
        d->topic_index = ti;
        for (const auto& kv : md.properties) {
            d->properties.emplace_back(kv.key, kv.value);
        }
        if (md.has_partition_key) {
            d->has_key = true;
            d->key = md.partition_key;
        }
        if (md.has_ordering_key) {
            d->ordering_key = md.ordering_key;
        }
        return d;
    };
    auto filtered = [&](std::int32_t index) {
        if (!ts.start_filter) {
            return false;
        }
        const auto& s = *ts.start_filter;
        message_id id = base;
        id.batch_index = index;
        message_id sid = s;
        sid.partition = base.partition;
        if (id.ledger != sid.ledger || id.entry != sid.entry) {
            if (id > sid) {
                ts.start_filter.reset();
                return false;
            }
            return id < sid;
        }
        // The start entry: batch indexes before the start (or at it, when not inclusive).
        if (sid.batch_index < 0 || index < 0) {
            return !ts.filter_inclusive;
        }
        return ts.filter_inclusive ? index < sid.batch_index : index <= sid.batch_index;
    };
    const entry_key key{ti, base.ledger, base.entry};
    const bool to_dlq = !reader_ && options_.dead_letter &&
                        options_.dead_letter->max_redeliver_count > 0 &&
                        redeliveries >= options_.dead_letter->max_redeliver_count;
    if (md.has_num_messages_in_batch) {
        const auto n = md.num_messages_in_batch;
        batch_.reset(payload, n);
        auto& es = entries_[key];
        es.batch_size = n;
        es.unacked = ack_set.empty() ? all_set(n)
                                     : std::vector<std::int64_t>(ack_set.begin(), ack_set.end());
        if (options_.ack_timeout.count() > 0) {
            es.ack_deadline = now + options_.ack_timeout;
        }
        std::uint32_t skipped = 0;
        for (;;) {
            auto more = batch_.next();
            if (!more) {
                NEREUS_LOG(client_log(), warn, "consumer {}: bad batch {}: {}",
                           options_.consumer_name, base.to_string(), more.error().message());
                break;
            }
            if (!*more) {
                break;
            }
            const auto i = batch_.index();
            if ((!ack_set.empty() && !bit_set(ack_set, i)) || filtered(i)) {
                ++skipped;
                clear_bit(es.unacked, i);
                continue;
            }
            auto d = make(i, n, batch_.payload());
            const auto& sm = batch_.metadata();
            d->properties.clear();
            for (const auto& kv : sm.properties()) {
                d->properties.emplace_back(kv.key(), kv.value());
            }
            if (sm.has_partition_key()) {
                d->has_key = true;
                d->key = sm.partition_key();
            }
            if (sm.has_ordering_key()) {
                d->ordering_key = sm.ordering_key();
            }
            if (sm.has_event_time() && sm.event_time() > 0) {
                d->event_time = from_ms(sm.event_time());
            }
            if (sm.has_sequence_id()) {
                d->sequence_id = sm.sequence_id();
            }
            message m(std::move(d));
            if (to_dlq) {
                ++skipped;
                asio::co_spawn(client_->strand(), dead_letter(shared_from_this(), std::move(m)),
                               asio::detached);
                continue;
            }
            deliver(std::move(m));
        }
        if (none_set(es.unacked) && !to_dlq) {
            entries_.erase(key);
        }
        if (skipped > 0) {
            consumed(ti, skipped);
        }
        return;
    }
    if (filtered(-1)) {
        consumed(ti, 1);
        return;
    }
    message m(make(-1, 0, payload));
    // A whole entry is tracked only where something reads it back: the ack timeout, the
    // dead-letter hand-off, and topic_of() when the consumer has (or may get) more than one
    // topic. Otherwise an ack, nack or redelivery of it finds nothing to erase, as after its ack.
    if (options_.ack_timeout.count() > 0 || to_dlq || topics_.size() > 1 || pattern_) {
        auto& es = entries_[key];
        es.batch_size = 0;
        if (options_.ack_timeout.count() > 0) {
            es.ack_deadline = now + options_.ack_timeout;
        }
    }
    if (to_dlq) {
        consumed(ti, 1);
        asio::co_spawn(client_->strand(), dead_letter(shared_from_this(), std::move(m)),
                       asio::detached);
        return;
    }
    deliver(std::move(m));
}

void consumer_impl::deliver(message m) {
    if (!receivers_.empty()) {
        auto r = std::move(receivers_.front());
        receivers_.pop_front();
        const auto t = m.data()->topic_index;
        topics_[t]->last_dequeued = m.id();
        consumed(t, 1);
        r.dispatch(std::move(m));  // from the connection's read loop
        return;
    }
    queue_.push_back(std::move(m));
}

void consumer_impl::consumed(std::uint32_t t, std::uint32_t n) {
    auto& ts = *topics_[t];
    ts.consumed += n;
    const auto half = std::max<std::uint32_t>(1, options_.receiver_queue_size / 2);
    if (ts.consumed >= half && ts.connected && ts.conn) {
        const auto permits = ts.consumed;
        const auto id = ts.consumer_id;
        if (ts.conn->send([&](proto::frame_buffer& out, proto::command_writer& w) {
                return w.flow(out, id, permits);
            })) {
            ts.consumed = 0;
        }
    }
}

void consumer_impl::receive(completion<message> done) {
    if (closed_) {
        done(error(errc::closed));
        return;
    }
    if (!queue_.empty()) {
        auto m = std::move(queue_.front());
        queue_.pop_front();
        const auto t = m.data()->topic_index;
        topics_[t]->last_dequeued = m.id();
        consumed(t, 1);
        done.dispatch(std::move(m));  // posted here by receive(): not the caller's frame
        return;
    }
    receivers_.push_back(std::move(done));
}

std::optional<std::uint32_t> consumer_impl::topic_of(const message_id& id) const {
    if (topics_.size() == 1) {
        return 0;
    }
    for (const auto& [k, e] : entries_) {
        if (k.ledger == id.ledger && k.entry == id.entry &&
            topics_[k.topic]->partition == id.partition) {
            return k.topic;
        }
    }
    // Not tracked (already settled or redelivered): by partition index, when unambiguous.
    std::optional<std::uint32_t> found;
    for (std::uint32_t i = 0; i < topics_.size(); ++i) {
        if (topics_[i]->partition == id.partition) {
            if (found) {
                return std::nullopt;
            }
            found = i;
        }
    }
    return found;
}

void consumer_impl::ack(const message_id& id, bool cumulative, completion<void> done) {
    if (closed_) {
        done(error(errc::closed));
        return;
    }
    const auto t = topic_of(id);
    if (!t) {
        done(error(errc::unacked_id));
        return;
    }
    auto& ts = *topics_[*t];
    if (!ts.connected || !ts.conn) {
        done(error(errc::disconnected));
        return;
    }
    if (cumulative && (options_.type == subscription_type::shared ||
                       options_.type == subscription_type::key_shared)) {
        done(error(errc::invalid_argument));
        return;
    }
    proto::message_id pid;
    pid.ledger_id = static_cast<std::uint64_t>(id.ledger);
    pid.entry_id = static_cast<std::uint64_t>(id.entry);
    std::vector<std::int64_t> bits;
    const entry_key key{*t, id.ledger, id.entry};
    if (!cumulative) {
        if (id.batch_index >= 0) {
            auto it = entries_.find(key);
            if (it != entries_.end() && it->second.batch_size > 0) {
                clear_bit(it->second.unacked, id.batch_index);
                if (!none_set(it->second.unacked)) {
                    bits = it->second.unacked;
                } else {
                    entries_.erase(it);
                }
            } else if (id.batch_size > 0) {
                bits = all_set(id.batch_size);
                clear_bit(bits, id.batch_index);
                if (none_set(bits)) {
                    bits.clear();
                }
            }
        } else {
            entries_.erase(key);
        }
    } else {
        if (id.batch_index >= 0 && id.batch_size > 0 && id.batch_index < id.batch_size - 1) {
            // Cumulative up to inside a batch: the later indexes stay unacknowledged.
            bits.assign(static_cast<std::size_t>((id.batch_size + 63) / 64), 0);
            for (std::int32_t i = id.batch_index + 1; i < id.batch_size; ++i) {
                bits[static_cast<std::size_t>(i / 64)] |= std::int64_t{1} << (i % 64);
            }
        }
        std::erase_if(entries_, [&](const auto& kv) {
            return kv.first.topic == *t &&
                   (kv.first.ledger < id.ledger ||
                    (kv.first.ledger == id.ledger && kv.first.entry < id.entry) ||
                    (kv.first.ledger == id.ledger && kv.first.entry == id.entry && bits.empty()));
        });
    }
    std::erase_if(nacks_, [&](const auto& kv) { return kv.first == key; });
    if (!cumulative && options_.max_acks_per_request > 1 && ts.acks_in_flight > 0) {
        // Wait for the ACK in flight. Acks of one entry merge: the bits still unacked are the
        // intersection (an empty set, the whole entry, absorbs the other).
        auto& w = ts.waiting_acks;
        if (!w.empty() && w.back().ledger == pid.ledger_id && w.back().entry == pid.entry_id) {
            auto& prev = w.back().bits;
            if (bits.empty() || prev.empty()) {
                prev.clear();
            } else {
                prev.resize(std::min(prev.size(), bits.size()));
                for (std::size_t i = 0; i < prev.size(); ++i) {
                    prev[i] &= bits[i];
                }
                if (none_set(prev)) {
                    prev.clear();
                }
            }
            w.back().batch_size = prev.empty() ? 0 : id.batch_size;
        } else {
            w.push_back(topic_state::waiting_ack{pid.ledger_id, pid.entry_id, std::move(bits),
                                                 id.batch_size});
            if (w.back().bits.empty()) {
                w.back().batch_size = 0;
            }
        }
        ts.ack_waiters.push_back(std::move(done));
        if (w.size() >= options_.max_acks_per_request) {
            flush_acks(*t);
        }
        return;
    }
    pid.ack_set = bits;
    if (!bits.empty()) {
        pid.batch_size = id.batch_size;
    }
    std::vector<completion<void>> waiters;
    waiters.push_back(std::move(done));
    send_acks(*t, cumulative, std::span<const proto::message_id>(&pid, 1), std::move(waiters));
}

void consumer_impl::enqueue_ack(const message_id& id, bool cumulative, completion<void> done) {
    std::lock_guard lock(ack_mu_);
    ack_inbox_.push_back(queued_ack{id, cumulative, std::move(done)});
    if (!std::exchange(ack_drain_posted_, true)) {
        asio::post(client_->strand(), [self = shared_from_this()] { self->drain_acks(); });
    }
}

void consumer_impl::drain_acks() {
    std::vector<queued_ack> batch;
    {
        std::lock_guard lock(ack_mu_);
        ack_drain_posted_ = false;
        batch.swap(ack_inbox_);
        ack_inbox_.swap(ack_spare_);  // the inbox refills into the capacity drained last time
    }
    for (auto& a : batch) {
        ack(a.id, a.cumulative, std::move(a.done));
    }
    batch.clear();
    ack_spare_ = std::move(batch);
}

void consumer_impl::send_acks(std::uint32_t t,
                              bool cumulative,
                              std::span<const proto::message_id> ids,
                              std::vector<completion<void>> waiters) {
    auto& ts = *topics_[t];
    const auto req = client_->next_request_id();
    proto::ack_args a;
    a.consumer_id = ts.consumer_id;
    a.cumulative = cumulative;
    a.ids = ids;
    a.request_id = req;
    ++ts.acks_in_flight;
    ts.conn->request(
        req, [&](proto::frame_buffer& out, proto::command_writer& w) { return w.ack(out, a); },
        completion<command_ptr>(
            handler<command_ptr>([self = shared_from_this(), t, epoch = ts.ack_epoch,
                                  waiters = std::move(waiters)](result<command_ptr> r) mutable {
                result<void> outcome;
                if (!r) {
                    outcome = error(r.error());
                } else if (const auto& resp = (*r)->ackresponse(); resp.has_error()) {
                    outcome = error(make_broker_error(resp.error()));
                }
                auto& s = *self->topics_[t];
                if (s.ack_epoch == epoch) {
                    --s.acks_in_flight;
                    if (s.acks_in_flight == 0 && !s.waiting_acks.empty()) {
                        self->flush_acks(t);  // the next group goes before these complete
                    }
                }
                for (auto& w : waiters) {
                    w.dispatch(outcome);  // the ACK_RESPONSE: not an initiator's frame
                }
            }),
            client_->strand()));
}

void consumer_impl::flush_acks(std::uint32_t t) {
    auto& ts = *topics_[t];
    if (ts.waiting_acks.empty()) {
        return;
    }
    if (!ts.connected || !ts.conn) {
        fail_waiting_acks(t, errc::disconnected);
        return;
    }
    auto waiting = std::move(ts.waiting_acks);
    ts.waiting_acks.clear();
    std::vector<proto::message_id> ids(waiting.size());
    for (std::size_t i = 0; i < waiting.size(); ++i) {
        ids[i].ledger_id = waiting[i].ledger;
        ids[i].entry_id = waiting[i].entry;
        ids[i].ack_set = waiting[i].bits;
        ids[i].batch_size = waiting[i].batch_size;
    }
    auto waiters = std::move(ts.ack_waiters);
    ts.ack_waiters.clear();
    send_acks(t, false, ids, std::move(waiters));
}

void consumer_impl::fail_waiting_acks(std::uint32_t t, std::error_code ec) {
    auto& ts = *topics_[t];
    ++ts.ack_epoch;
    ts.acks_in_flight = 0;
    ts.waiting_acks.clear();
    auto waiters = std::move(ts.ack_waiters);
    ts.ack_waiters.clear();
    for (auto& w : waiters) {
        w(error(ec));
    }
}

void consumer_impl::nack(const message_id& id) {
    if (closed_) {
        return;
    }
    const auto t = topic_of(id);
    if (!t) {
        return;
    }
    nacks_[entry_key{*t, id.ledger, id.entry}] = steady::now() + options_.nack_redelivery_delay;
}

void consumer_impl::send_redeliver(std::uint32_t t, const std::vector<message_id>& ids) {
    auto& ts = *topics_[t];
    if (!ts.connected || !ts.conn) {
        return;
    }
    std::vector<proto::message_id> pids;
    for (const auto& id : ids) {
        proto::message_id p;
        p.ledger_id = static_cast<std::uint64_t>(id.ledger);
        p.entry_id = static_cast<std::uint64_t>(id.entry);
        pids.push_back(p);
    }
    const auto cid = ts.consumer_id;
    (void)ts.conn->send([&](proto::frame_buffer& out, proto::command_writer& w) {
        return w.redeliver_unacknowledged(out, cid, pids);
    });
}

asio::awaitable<result<void>> consumer_impl::redeliver(std::shared_ptr<consumer_impl> self,
                                                       message_id id) {
    if (self->closed_) {
        co_return error(errc::closed);
    }
    const auto t = self->topic_of(id);
    if (!t) {
        co_return error(errc::unacked_id);
    }
    auto& ts = *self->topics_[*t];
    if (!ts.connected || !ts.conn) {
        co_return error(errc::disconnected);
    }
    const entry_key key{*t, id.ledger, id.entry};
    self->entries_.erase(key);
    self->nacks_.erase(key);
    // Anything of this entry still buffered will come again.
    std::erase_if(self->queue_, [&](const message& m) {
        return m.data()->topic_index == *t && m.id().ledger == id.ledger &&
               m.id().entry == id.entry;
    });
    self->send_redeliver(*t, {id});
    auto conn = ts.conn;
    const auto cid = ts.consumer_id;
    const auto req = self->client_->next_request_id();
    auto r = co_await conn->request(req, [&](proto::frame_buffer& o, proto::command_writer& w) {
        return w.get_last_message_id(o, cid, req);
    });
    if (!r) {
        co_return error(r.error());
    }
    co_return result<void>{};
}

void consumer_impl::redeliver_unacknowledged() {
    for (std::uint32_t t = 0; t < topics_.size(); ++t) {
        auto& ts = *topics_[t];
        drop_topic_state(t);
        if (ts.connected && ts.conn) {
            const auto cid = ts.consumer_id;
            (void)ts.conn->send([&](proto::frame_buffer& out, proto::command_writer& w) {
                return w.redeliver_unacknowledged(out, cid, {});
            });
        }
    }
}

void consumer_impl::tick(steady::time_point now) {
    if (closed_) {
        return;
    }
    if (pattern_ && !discovering_ && now >= next_discovery_) {
        discovering_ = true;
        asio::co_spawn(client_->strand(), rediscover(shared_from_this()), asio::detached);
    }
    std::map<std::uint32_t, std::vector<message_id>> due;
    for (auto it = nacks_.begin(); it != nacks_.end();) {
        if (it->second <= now) {
            due[it->first.topic].push_back(message_id{it->first.ledger, it->first.entry});
            entries_.erase(it->first);
            it = nacks_.erase(it);
        } else {
            ++it;
        }
    }
    if (options_.ack_timeout.count() > 0) {
        for (auto it = entries_.begin(); it != entries_.end();) {
            if (it->second.ack_deadline <= now) {
                due[it->first.topic].push_back(message_id{it->first.ledger, it->first.entry});
                it = entries_.erase(it);
            } else {
                ++it;
            }
        }
    }
    for (auto& [t, ids] : due) {
        // Anything of these entries still buffered will come again.
        std::erase_if(queue_, [&, t = t](const message& m) {
            if (m.data()->topic_index != t) {
                return false;
            }
            return std::any_of(ids.begin(), ids.end(), [&](const message_id& id) {
                return id.ledger == m.id().ledger && id.entry == m.id().entry;
            });
        });
        send_redeliver(t, ids);
    }
}

asio::awaitable<void> consumer_impl::rediscover(std::shared_ptr<consumer_impl> self) {
    auto listed = co_await self->client_->topics_of_namespace(self->pattern_->namespace_name());
    if (!listed) {
        // Nothing is concluded from a failed listing: the topics stay as they are.
        NEREUS_LOG(client_log(), debug, "consumer {}: listing {} failed: {}",
                   self->options_.consumer_name, self->pattern_->namespace_name(),
                   listed.error().message());
    } else if (!self->closed_) {
        std::vector<std::string> want;
        for (const auto& n : *listed) {
            if (self->pattern_->matches(n) &&
                std::find(want.begin(), want.end(), n) == want.end()) {
                want.push_back(n);
            }
        }
        // By index throughout: the table only grows here, and nothing else adds to it.
        for (std::size_t t = 0; t < self->topics_.size() && !self->closed_; ++t) {
            const auto& ts = *self->topics_[t];
            if (ts.from_pattern && !ts.removed &&
                std::find(want.begin(), want.end(), ts.topic) == want.end()) {
                co_await remove_topic(self, t);
            }
        }
        for (const auto& n : want) {
            if (self->closed_) {
                break;
            }
            const bool known =
                std::any_of(self->topics_.begin(), self->topics_.end(),
                            [&](const auto& ts) { return !ts->removed && ts->topic == n; });
            if (known) {
                continue;
            }
            const auto t = self->add_topic_state(n, partition_index(n), true);
            self->publish_names();
            auto r = co_await subscribe_topic(self, t);
            if (r) {
                NEREUS_LOG(client_log(), info, "consumer {}: pattern {} now also reads {}",
                           self->options_.consumer_name, self->pattern_->pattern(), n);
            } else {
                // Tried again at the next listing.
                self->topics_[t]->removed = true;
                self->drop_topic_state(static_cast<std::uint32_t>(t));
                NEREUS_LOG(client_log(), warn, "consumer {}: subscribing new topic {} failed: {}",
                           self->options_.consumer_name, n, r.error().message());
            }
        }
        self->publish_names();
    }
    self->next_discovery_ = steady::now() + self->options_.pattern_auto_discovery_period;
    self->discovering_ = false;
}

asio::awaitable<void> consumer_impl::remove_topic(std::shared_ptr<consumer_impl> self,
                                                  std::size_t t) {
    auto& ts = *self->topics_[t];
    ts.removed = true;
    self->flush_acks(static_cast<std::uint32_t>(t));
    // What was buffered goes back to the broker with the consumer's close.
    self->drop_topic_state(static_cast<std::uint32_t>(t));
    auto conn = std::move(ts.conn);
    const bool was_connected = ts.connected;
    ts.connected = false;
    self->publish_names();
    if (conn) {
        conn->remove_consumer(ts.consumer_id);
        if (was_connected) {
            const auto req = self->client_->next_request_id();
            const auto cid = ts.consumer_id;
            (void)co_await conn->request(req,
                                         [&](proto::frame_buffer& o, proto::command_writer& w) {
                                             return w.close_consumer(o, cid, req);
                                         });
        }
    }
    NEREUS_LOG(client_log(), info, "consumer {}: topic {} no longer matches/listed; closed",
               self->options_.consumer_name, ts.topic);
}

asio::awaitable<result<std::shared_ptr<producer_impl>>> consumer_impl::side_producer(
    std::shared_ptr<consumer_impl> self, bool retry) {
    auto& slot = retry ? self->retry_producer_ : self->dlq_producer_;
    if (slot) {
        co_return slot;
    }
    auto name = full_topic_name(retry ? self->retry_topic() : self->dlq_topic());
    if (!name) {
        co_return error(name.error());
    }
    producer_options po;
    po.topic = *name;
    po.batching = false;
    auto p = std::make_shared<producer_impl>(self->client_, po, *name);
    auto r = co_await producer_impl::open(p);
    if (!r) {
        co_return error(r.error());
    }
    if (slot) {  // another coroutine won the race
        (void)co_await producer_impl::close(p);
        co_return slot;
    }
    slot = p;
    co_return p;
}

asio::awaitable<void> consumer_impl::dead_letter(std::shared_ptr<consumer_impl> self, message m) {
    auto p = co_await side_producer(self, false);
    if (p) {
        outgoing_message om;
        om.payload.assign(m.payload().begin(), m.payload().end());
        om.properties = m.properties();
        if (!m.property_value("REAL_TOPIC")) {
            om.properties.emplace_back("REAL_TOPIC", m.topic());
        }
        if (!m.property_value("ORIGIN_MESSAGE_ID")) {
            om.properties.emplace_back("ORIGIN_MESSAGE_ID", m.id().to_string());
        }
        if (m.has_key()) {
            om.key = m.key();
        }
        auto sent = co_await send_via(*p, std::move(om));
        if (sent) {
            // g++ 12 destroys a lambda temporary inside a co_await expression twice (its captured
            // shared_ptr loses a reference): the initiation is a named local, never a temporary.
            const auto id = m.id();
            auto init = [&self, id](auto h) {
                self->ack(id, false,
                          completion<void>(handler<void>(std::move(h)), self->client_->strand()));
            };
            auto acked =
                co_await asio::async_initiate<const asio::use_awaitable_t<>&, void(result<void>)>(
                    init, asio::use_awaitable);
            if (acked) {
                NEREUS_LOG(client_log(), info, "consumer {}: {} moved to dead-letter topic {}",
                           self->options_.consumer_name, m.id().to_string(), (*p)->topic());
                co_return;
            }
        }
    }
    NEREUS_LOG(client_log(), warn, "consumer {}: dead-lettering {} failed; it will be redelivered",
               self->options_.consumer_name, m.id().to_string());
    self->nack(m.id());
}

asio::awaitable<result<void>> consumer_impl::reconsume_later(std::shared_ptr<consumer_impl> self,
                                                             message m,
                                                             std::chrono::milliseconds delay) {
    if (!self->options_.retry_enable) {
        co_return error(errc::invalid_argument);
    }
    std::uint32_t times = 0;
    if (auto v = m.property_value("RECONSUMETIMES")) {
        std::from_chars(v->data(), v->data() + v->size(), times);
    }
    ++times;
    const std::uint32_t max = self->options_.dead_letter
                                  ? self->options_.dead_letter->max_redeliver_count
                                  : 16;  // Java's default for enableRetry without a policy
    const bool to_dlq = max > 0 && times > max;
    auto p = co_await side_producer(self, !to_dlq);
    if (!p) {
        co_return error(p.error());
    }
    outgoing_message om;
    om.payload.assign(m.payload().begin(), m.payload().end());
    for (const auto& kv : m.properties()) {
        if (kv.first != "RECONSUMETIMES" && kv.first != "DELAY_TIME") {
            om.properties.push_back(kv);
        }
    }
    if (!m.property_value("REAL_TOPIC")) {
        om.properties.emplace_back("REAL_TOPIC", m.topic());
    }
    if (!m.property_value("ORIGIN_MESSAGE_ID")) {
        om.properties.emplace_back("ORIGIN_MESSAGE_ID", m.id().to_string());
    }
    om.properties.emplace_back("RECONSUMETIMES", std::to_string(times));
    if (!to_dlq) {
        om.properties.emplace_back("DELAY_TIME", std::to_string(delay.count()));
        om.deliver_at = std::chrono::system_clock::now() + delay;
    }
    if (m.has_key()) {
        om.key = m.key();
    }
    auto sent = co_await send_via(*p, std::move(om));
    if (!sent) {
        co_return error(sent.error());
    }
    // g++ 12 destroys a lambda temporary inside a co_await expression twice (its captured
    // shared_ptr loses a reference): the initiation is a named local, never a temporary.
    const auto id = m.id();
    auto init = [&self, id](auto h) {
        self->ack(id, false,
                  completion<void>(handler<void>(std::move(h)), self->client_->strand()));
    };
    auto co_result_ =
        co_await asio::async_initiate<const asio::use_awaitable_t<>&, void(result<void>)>(
            init, asio::use_awaitable);
    co_return co_result_;
}

asio::awaitable<result<void>> consumer_impl::seek(std::shared_ptr<consumer_impl> self,
                                                  std::variant<message_id, system_time> where) {
    if (self->closed_) {
        co_return error(errc::closed);
    }
    const auto* by_id = std::get_if<message_id>(&where);
    if (by_id && self->topics_.size() > 1 && *by_id != message_id::earliest() &&
        *by_id != message_id::latest()) {
        co_return error(errc::invalid_argument);
    }
    result<void> out;
    for (std::size_t t = 0; t < self->topics_.size(); ++t) {
        auto& ts = *self->topics_[t];
        if (ts.removed) {
            continue;
        }
        if (!ts.connected || !ts.conn) {
            co_return error(errc::disconnected);
        }
        self->flush_acks(static_cast<std::uint32_t>(t));  // acks made before the seek go first
        auto conn = ts.conn;
        const auto req = self->client_->next_request_id();
        const auto cid = ts.consumer_id;
        ts.seeking = true;
        auto r = co_await conn->request(req, [&](proto::frame_buffer& o, proto::command_writer& w) {
            if (by_id) {
                proto::message_id pid;
                pid.ledger_id = static_cast<std::uint64_t>(by_id->ledger);
                pid.entry_id = static_cast<std::uint64_t>(by_id->entry);
                return w.seek(o, cid, req, pid);
            }
            const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                                std::get<system_time>(where).time_since_epoch())
                                .count();
            return w.seek_by_time(o, cid, req, static_cast<std::uint64_t>(ms));
        });
        ts.seeking = false;
        // Deliveries buffered before the seek are discarded.
        self->drop_topic_state(static_cast<std::uint32_t>(t));
        ts.last_dequeued.reset();
        ts.start_filter.reset();
        if (self->reader_ && by_id && *by_id != message_id::earliest() &&
            *by_id != message_id::latest()) {
            ts.start_filter = *by_id;
            ts.filter_inclusive = true;
        }
        if (!r) {
            out = error(r.error());
        }
        if (!ts.connected && !ts.reconnecting && !self->closed_) {
            // The broker closed our consumer for the seek (as Pulsar does): subscribe again.
            ts.reconnecting = true;
            co_await resubscribe(self, t);
        }
    }
    co_return out;
}

asio::awaitable<result<bool>> consumer_impl::has_message_available(
    std::shared_ptr<consumer_impl> self) {
    if (self->closed_) {
        co_return error(errc::closed);
    }
    if (!self->queue_.empty()) {
        co_return true;
    }
    auto& ts = *self->topics_.front();
    if (!ts.connected || !ts.conn) {
        co_return error(errc::disconnected);
    }
    const auto req = self->client_->next_request_id();
    const auto cid = ts.consumer_id;
    auto r = co_await ts.conn->request(req, [&](proto::frame_buffer& o, proto::command_writer& w) {
        return w.get_last_message_id(o, cid, req);
    });
    if (!r) {
        co_return error(r.error());
    }
    const auto& last = (*r)->getlastmessageidresponse().last_message_id();
    if (last.entryid() == proto::no_position || last.ledgerid() == proto::no_position) {
        co_return false;
    }
    message_id l;
    l.ledger = static_cast<std::int64_t>(last.ledgerid());
    l.entry = static_cast<std::int64_t>(last.entryid());
    l.batch_index = last.has_batch_index() ? last.batch_index() : -1;
    l.partition = ts.partition;
    if (ts.last_dequeued) {
        co_return l > *ts.last_dequeued;
    }
    if (self->reader_) {
        const auto& s = self->reader_->start_message_id;
        if (s == message_id::earliest()) {
            co_return true;
        }
        if (s == message_id::latest()) {
            co_return false;
        }
        co_return self->reader_->start_inclusive ? l >= s : l > s;
    }
    co_return true;
}

void consumer_impl::fail_receivers(std::error_code ec) {
    auto rs = std::move(receivers_);
    receivers_.clear();
    for (auto& r : rs) {
        r(error(ec));
    }
}

asio::awaitable<result<void>> consumer_impl::unsubscribe(std::shared_ptr<consumer_impl> self) {
    if (self->closed_) {
        co_return error(errc::closed);
    }
    result<void> out;
    // By index: a pattern subscription's discovery may add topics while this awaits.
    for (std::size_t t = 0; t < self->topics_.size(); ++t) {
        auto& ts = self->topics_[t];
        if (ts->removed) {
            continue;
        }
        if (!ts->connected || !ts->conn) {
            out = error(errc::disconnected);
            continue;
        }
        self->flush_acks(static_cast<std::uint32_t>(t));
        const auto req = self->client_->next_request_id();
        const auto cid = ts->consumer_id;
        auto r =
            co_await ts->conn->request(req, [&](proto::frame_buffer& o, proto::command_writer& w) {
                return w.unsubscribe(o, cid, req);
            });
        if (!r && out) {
            out = error(r.error());
        }
    }
    if (!out) {
        co_return out;
    }
    auto co_result_ = co_await close(self);
    co_return co_result_;
}

asio::awaitable<result<void>> consumer_impl::close(std::shared_ptr<consumer_impl> self) {
    if (self->closed_) {
        co_return result<void>{};
    }
    self->closed_ = true;
    self->fail_receivers(errc::closed);
    self->queue_.clear();
    result<void> out;
    for (std::size_t t = 0; t < self->topics_.size(); ++t) {
        auto& ts = self->topics_[t];
        self->flush_acks(static_cast<std::uint32_t>(t));  // acks made before close() go first
        if (!ts->conn) {
            continue;
        }
        auto conn = ts->conn;
        conn->remove_consumer(ts->consumer_id);
        if (ts->connected) {
            const auto req = self->client_->next_request_id();
            const auto cid = ts->consumer_id;
            auto r =
                co_await conn->request(req, [&](proto::frame_buffer& o, proto::command_writer& w) {
                    return w.close_consumer(o, cid, req);
                });
            if (!r && out && !(r.error() == make_error_code(errc::disconnected))) {
                out = error(r.error());
            }
        }
        ts->connected = false;
        ts->conn.reset();
    }
    for (auto* p : {&self->dlq_producer_, &self->retry_producer_}) {
        if (*p) {
            (void)co_await producer_impl::close(*p);
            p->reset();
        }
    }
    self->client_->remove_entity(self.get());
    co_return out;
}

asio::awaitable<result<void>> consumer_impl::close_from_client() {
    auto co_result_ = co_await close(shared_from_this());
    co_return co_result_;
}

}  // namespace nereus::client::detail
