// PRODUCER, SEND (receipts in order, once durable), CLOSE_PRODUCER (connection handlers).

#include "nereus/base/wake_batch.h"
#include "nereus/broker/connection.h"
#include "nereus/broker/logger.h"
#include "nereus/broker/topic_name.h"
#include "nereus/proto/errc.h"
#include "nereus/proto/protocol_version.h"
#include "nereus/proto/pulsar_api.h"

#include <boost/asio/post.hpp>

namespace nereus::broker {

namespace asio = boost::asio;
using asio::awaitable;

awaitable<void> connection::handle_producer(const proto::frame_view& f) {
    const auto& p = f.command().producer();
    const auto req = p.request_id();
    const auto id = p.producer_id();
    if (auto it = producers_.find(id); it != producers_.end()) {
        if (it->second->ready && !it->second->closing) {
            const auto name = it->second->name;
            write_frame([&](proto::frame_buffer& b) {
                return writer_.producer_success(b,
                                                {req, name, -1, std::nullopt, std::nullopt, true});
            });
        } else {
            error_reply(req, proto::error_kind::unavailable, "producer is not ready yet");
        }
        co_return;
    }
    auto name = parse_topic_name(p.topic());
    if (!name) {
        error_reply(req, name.error(), "invalid topic name: " + p.topic());
        co_return;
    }
    // Topic recovery may block: on the pool (the read loop waits, so this connection's
    // commands keep their order; other connections are served meanwhile).
    std::optional<result<std::shared_ptr<topic>>> opened;
    co_await offload([&] { opened.emplace(ctx_.topics.open(*name, true)); });
    if (!opened) {
        error_reply(req, proto::error_kind::unavailable, "cannot open topic");
        co_return;
    }
    auto& t = *opened;
    if (!t) {
        error_reply(req, t.error(), "cannot open topic: " + t.error().message());
        co_return;
    }
    const auto mode = static_cast<access_mode>(p.producer_access_mode());
    auto st = std::make_shared<producer_state>();
    st->id = id;
    st->t = *t;
    st->conn = weak_from_this();
    std::optional<std::string> wanted;
    if (p.has_producer_name() && !p.producer_name().empty()) {
        wanted = p.producer_name();
    }
    std::weak_ptr<connection> weak = weak_from_this();
    // Closed by the broker (topic lost or force-deleted): CLOSE_PRODUCER from this strand; the
    // producer is forgotten once its in-flight sends were answered (flush_receipts).
    auto on_closed = [weak, st] {
        auto self = weak.lock();
        if (!self) {
            return;
        }
        asio::post(self->strand_, [self, st] {
            auto it = self->producers_.find(st->id);
            if (it == self->producers_.end() || it->second != st || st->closing) {
                return;
            }
            st->closing = true;
            st->t->remove_producer(st->token);
            self->write_frame(
                [&](proto::frame_buffer& b) { return self->writer_.close_producer(b, st->id); });
            self->flush_receipts(st);
        });
    };
    auto grant = (*t)->add_producer(
        wanted, mode,
        [weak, st, req] {
            auto self = weak.lock();
            if (!self) {
                return;
            }
            asio::post(self->strand_, [self, st, req] {
                auto it = self->producers_.find(st->id);
                if (it == self->producers_.end() || it->second != st || st->closing) {
                    return;
                }
                st->ready = true;
                self->write_frame([&](proto::frame_buffer& b) {
                    return self->writer_.producer_success(
                        b, {req, st->name, -1, std::nullopt, std::nullopt, true});
                });
            });
        },
        on_closed);
    if (!grant) {
        error_reply(req, grant.error(),
                    grant.error() == make_error_code(proto::error_kind::producer_busy)
                        ? "producer busy (name in use or exclusive producer present)"
                        : grant.error().message());
        co_return;
    }
    st->token = grant->token;
    st->name = grant->name;
    st->ready = grant->ready;
    producers_[id] = st;
    attach_producer(st);
    recently_closed_producers_.erase(id);
    if (st->ready) {
        write_frame([&](proto::frame_buffer& b) {
            return writer_.producer_success(b,
                                            {req, st->name, -1, std::nullopt, std::nullopt, true});
        });
    } else if (peer_partial_producer_) {
        write_frame([&](proto::frame_buffer& b) {
            return writer_.producer_success(b,
                                            {req, st->name, -1, std::nullopt, std::nullopt, false});
        });
    }
    NEREUS_LOG(broker_log(), debug, "producer created topic={} name={} ready={} peer={}",
               (*t)->full_name(), st->name, st->ready, peer_);
}

bool connection::handle_send(const proto::frame_view& f) {
    const auto& s = f.send;  // the fast_send scanners or the generic parse (frame_decoder.h)
    auto it = producers_.find(s.producer_id);
    if (it == producers_.end() || !it->second->ready) {
        if (recently_closed_producers_.contains(s.producer_id) ||
            (it != producers_.end() && it->second->closing)) {
            return true;  // a SEND racing the close: dropped, as Java does
        }
        NEREUS_LOG(broker_log(), info, "closing connection peer={}: SEND for unknown producer {}",
                   peer_, s.producer_id);
        return false;
    }
    // A reference, not a copy (no reference count per SEND): the paths below that may erase
    // the producer (flush_receipts) hold their own copy.
    const std::shared_ptr<producer_state>& p = it->second;
    if (p->closing) {
        return true;
    }
    pending_send ps;
    ps.sequence_id = s.sequence_id;
    ps.received_at = last_received_;
    ps.highest_sequence_id = s.has_highest_sequence_id && s.highest_sequence_id > 0
                                 ? s.highest_sequence_id
                                 : s.sequence_id;
    const std::uint64_t serial = p->front_serial + p->pending.size();
    if (f.message_error) {
        if (f.message_error == make_error_code(proto::errc::checksum_mismatch)) {
            ps.error_code = proto::server_error::checksum_error;
            ps.error_message = "checksum mismatch";
            ps.outcome = nereus::error(f.message_error);
            p->pending.push_back(std::move(ps));
            flush_receipts(std::shared_ptr<producer_state>(p));
            return true;
        }
        NEREUS_LOG(broker_log(), info, "closing connection peer={}: bad SEND payload: {}", peer_,
                   f.message_error.message());
        return false;
    }
    if (f.payload.size() > ctx_.options.max_message_size) {
        // Within the frame padding but over the advertised limit (Java: NotAllowed).
        ps.error_code = proto::server_error::not_allowed_error;
        ps.error_message = "message of " + std::to_string(f.payload.size()) +
                           " bytes exceeds max_message_size " +
                           std::to_string(ctx_.options.max_message_size);
        ps.outcome = nereus::error(proto::error_kind::not_allowed);
        p->pending.push_back(std::move(ps));
        flush_receipts(std::shared_ptr<producer_state>(p));
        return true;
    }
    append_info info;
    if (const auto& md = f.metadata_values) {
        info.publish_time = static_cast<std::int64_t>(md->publish_time);
        if (md->has_num_messages_in_batch && md->num_messages_in_batch > 0) {
            info.batch_size = static_cast<std::uint32_t>(md->num_messages_in_batch);
        }
    }
    // The verified checksum covers the entry's tail (metadataSize .. frame end): the store
    // combines it instead of reading those bytes again.
    if (f.checksum == proto::checksum_state::valid &&
        f.checksummed.data() + f.checksummed.size() ==
            f.headers_and_payload.data() + f.headers_and_payload.size() &&
        f.checksummed.size() <= f.headers_and_payload.size()) {
        info.tail_crc = f.checksum_value;
        info.tail_len = static_cast<std::uint32_t>(f.checksummed.size());
    }
    p->pending.push_back(std::move(ps));
    // The producer (its hand-over queue, and through it the connection) is all the completion
    // holds, as a plain pointer: the producer keeps itself until this append was handed over
    // (producer_state::keep), so no reference count is taken per SEND.
    ++p->appends_issued;
    auto finish = [p = p.get(), serial](result<position> r) {
        queue_append_done(p, serial, std::move(r));
    };
    static_assert(broker::append_done::fits_inline<decltype(finish)>);  // no allocation per SEND
    // A pointer and an integer: relocatable by copying its bytes (base/completion.h), so the
    // layers below move the whole chain without an indirect call per layer.
    p->t->append(f.headers_and_payload, info,
                 broker::append_done(relocatable_if{true}, std::move(finish)));
    return true;
}

void connection::queue_append_done(producer_state* p, std::uint64_t serial, result<position> r) {
    if (wake_batch::active()) {
        // In the storage committer's group: staged on this thread, handed over once per run of
        // one producer's appends (at the scope's end, or when another producer's run starts).
        auto& s = staged_done();
        if (s.p.get() != p) {
            if (s.p) {
                flush_staged_done(nullptr);
            }
            s.p = p->shared_from_this();  // one reference count per run, not per append
            // Registered before the topic's notify (registered after `done` returns), so at the
            // scope's end the receipts' drain is posted first, as before.
            (void)wake_batch::defer(std::shared_ptr<void>(), &flush_staged_done);
        }
        s.items.push_back({serial, std::move(r)});
        return;
    }
    thread_local std::vector<append_done> one;
    one.push_back({serial, std::move(r)});
    hand_over_done(p->shared_from_this(), one);
}

connection::done_staging& connection::staged_done() {
    thread_local done_staging s;
    return s;
}

void connection::flush_staged_done(void* /*unused*/) {
    auto& s = staged_done();
    if (!s.p) {
        return;  // already handed over (another producer's run followed)
    }
    const auto p = std::move(s.p);
    s.p.reset();
    hand_over_done(p, s.items);
}

void connection::hand_over_done(const std::shared_ptr<producer_state>& p,
                                std::vector<append_done>& items) {
    bool post = false;
    std::shared_ptr<producer_state> released;  // destroyed after unlocking (`p` still holds it)
    {
        const std::lock_guard lock(p->done_mu);
        p->appends_handed_over += items.size();
        if (p->done_queue.empty()) {
            p->done_queue.swap(items);  // O(1); the capacities rotate, none is freed
        } else {
            for (auto& d : items) {
                p->done_queue.push_back(std::move(d));
            }
        }
        post = !std::exchange(p->done_posted, true);
        released = release_if_drained_locked(*p);
    }
    items.clear();
    if (post) {
        // In the storage committer's group (base/wake_batch.h): one post per group, after its
        // last completion, instead of one each time the strand has drained the queue. From
        // flush_staged_done at the scope's end, there is no scope left: posted now.
        auto wake = [](void* ps) {
            post_drain(*static_cast<producer_state*>(ps));
        };
        if (!wake_batch::defer(p, wake)) {
            post_drain(*p);
        }
    }
}

void connection::attach_producer(const std::shared_ptr<producer_state>& p) {
    const std::lock_guard lock(p->done_mu);
    p->keep = p;
}

void connection::detach_producer(producer_state& p) {
    std::shared_ptr<producer_state> released;  // destroyed after unlocking
    {
        const std::lock_guard lock(p.done_mu);
        p.detached = true;
        released = release_if_drained_locked(p);
    }
}

std::shared_ptr<connection::producer_state> connection::release_if_drained_locked(
    producer_state& p) {
    if (!p.detached || p.appends_handed_over != p.appends_issued) {
        return nullptr;
    }
    return std::move(p.keep);
}

void connection::post_drain(producer_state& p) {
    auto self = p.conn.lock();
    if (!self) {
        return;  // the connection is gone: nobody to answer (its producers were detached)
    }
    auto& strand = self->strand_;
    asio::post(strand, [self = std::move(self), ps = p.shared_from_this()] {
        self->drain_append_done(ps);
    });
}

void connection::drain_append_done(const std::shared_ptr<producer_state>& p) {
    {
        const std::lock_guard lock(p->done_mu);
        p->done_work.swap(p->done_queue);
        p->done_posted = false;  // an append finishing from here on posts a new drain
    }
    for (auto& d : p->done_work) {
        on_append_done(*p, d.serial, std::move(d.r));
    }
    p->done_work.clear();
    flush_receipts(p);  // once for the batch: receipts leave in SEND order
}

void connection::on_append_done(producer_state& p, std::uint64_t serial, result<position> r) {
    if (serial < p.front_serial || serial - p.front_serial >= p.pending.size()) {
        return;
    }
    auto& ps = p.pending[serial - p.front_serial];
    if (!r) {
        ps.error_code = proto::to_server_error(r.error());
        ps.error_message = "append failed: " + r.error().message();
        NEREUS_LOG(broker_log(), warn, "append failed topic={} producer={} error={}",
                   p.t->full_name(), p.name, r.error().message());
    }
    ps.outcome = std::move(r);
}

void connection::flush_receipts(const std::shared_ptr<producer_state>& p) {
    // Receipts leave in SEND order: a later append that finished first waits for the earlier.
    std::chrono::steady_clock::time_point now{};  // read once per flush, for publish_latency_
    // Tallied here and added once per flush: three atomic adds per receipt were half of this
    // function's own time.
    latency_histogram::counts latencies;
    while (!p->pending.empty() && p->pending.front().outcome) {
        auto& ps = p->pending.front();
        if (*ps.outcome) {
            if (publish_latency_ != nullptr) {
                if (now == std::chrono::steady_clock::time_point{}) {
                    now = std::chrono::steady_clock::now();
                }
                latencies.record(now - ps.received_at);
            }
            proto::message_id id;
            id.ledger_id = (*ps.outcome)->ledger_id;
            id.entry_id = (*ps.outcome)->entry_id;
            if (p->t->name().partition) {
                id.partition = static_cast<std::int32_t>(*p->t->name().partition);
            }
            write_frame([&](proto::frame_buffer& b) {
                return writer_.send_receipt(b, p->id, ps.sequence_id, ps.highest_sequence_id, id);
            });
        } else {
            write_frame([&](proto::frame_buffer& b) {
                return writer_.send_error(b, p->id, ps.sequence_id, ps.error_code,
                                          ps.error_message);
            });
            if (p->t->lost() && !p->closing) {
                // The topic moved to another broker (doc/ownership.md): close the producer so
                // the client looks the topic up again and reconnects to the new owner.
                p->closing = true;
                p->t->remove_producer(p->token);
                write_frame(
                    [&](proto::frame_buffer& b) { return writer_.close_producer(b, p->id); });
            }
        }
        p->pending.pop_front();
        ++p->front_serial;
    }
    if (latencies.count != 0) {
        publish_latency_->add(latencies);
    }
    if (p->pending.empty() && p->closing && !p->close_request_id && p->t->lost()) {
        // Closed by the broker (topic lost): the client may reuse the id with the new owner.
        const auto keep = p;
        if (auto it = producers_.find(p->id); it != producers_.end() && it->second == p) {
            producers_.erase(it);
            detach_producer(*p);
        }
        return;
    }
    if (p->pending.empty() && p->close_request_id) {
        const auto req = *p->close_request_id;
        p->close_request_id.reset();
        write_frame([&](proto::frame_buffer& b) { return writer_.success(b, req); });
        if (auto it = producers_.find(p->id); it != producers_.end() && it->second == p) {
            producers_.erase(it);
            detach_producer(*p);
            recently_closed_producers_.insert(p->id);
        }
    }
}

void connection::handle_close_producer(const proto::frame_view& f) {
    const auto& c = f.command().close_producer();
    const auto req = c.request_id();
    auto it = producers_.find(c.producer_id());
    if (it == producers_.end()) {
        write_frame([&](proto::frame_buffer& b) { return writer_.success(b, req); });
        return;
    }
    auto p = it->second;
    if (!p->closing) {
        p->closing = true;
        p->t->remove_producer(p->token);
    }
    // SUCCESS once the in-flight appends were answered.
    p->close_request_id = req;
    flush_receipts(p);
    if (recently_closed_producers_.size() > 1024) {
        recently_closed_producers_.clear();
    }
}

}  // namespace nereus::broker
