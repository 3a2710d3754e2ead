// SUBSCRIBE, FLOW, ACK, REDELIVER, CLOSE_CONSUMER, UNSUBSCRIBE, SEEK, GET_LAST_MESSAGE_ID,
// CONSUMER_STATS (connection handlers).

#include "nereus/broker/connection.h"
#include "nereus/broker/logger.h"
#include "nereus/broker/topic_name.h"
#include "nereus/proto/errc.h"
#include "nereus/proto/protocol_version.h"
#include "nereus/proto/pulsar_api.h"

#include <algorithm>
#include <boost/asio/post.hpp>
#include <optional>

namespace nereus::broker {

namespace asio = boost::asio;
using asio::awaitable;

namespace {

// Finds or creates the subscription SUBSCRIBE names (blocking: runs on the blocking pool).
// view_from: for a read_compacted SUBSCRIBE on a topic with a compaction, where the
// subscription's first compacted read starts in the view (subscription::read_view_from) —
// entry 0 when this SUBSCRIBE creates the subscription (or opens a reader) at earliest, as
// Pulsar's first read from earliest; a reader resuming at an entry the log no longer holds
// (trimmed, retention) starts the cursor at the log's first readable entry and the view at
// that entry, so it goes on through the view where it stopped.
result<std::shared_ptr<subscription>> subscribe_on(topic& t,
                                                   const proto::pb::CommandSubscribe& s,
                                                   std::optional<std::uint64_t>& view_from) {
    const bool durable = !s.has_durable() || s.durable();
    const bool compacted = s.read_compacted() && t.compaction() != nullptr;
    bool created = compacted;
    if (compacted) {
        for (const auto& o : t.open_subscriptions()) {
            if (o->name() == s.subscription()) {
                created = false;  // a parked reader (after a seek) or a durable one in use
            }
        }
        if (created && durable) {
            const auto names = t.store().subscription_names();
            created = std::find(names.begin(), names.end(), s.subscription()) == names.end();
        }
    }
    subscription_start start;
    start.where = s.initialposition() == 1 ? subscription_start::kind::earliest
                                           : subscription_start::kind::latest;
    if (!durable && s.has_start_message_id()) {
        // Readers: delivery starts WITH the entry holding start_message_id, as Pulsar's broker
        // does; the client drops the start message itself unless startMessageIdInclusive
        // (a client-side option, not on the wire). A start id inside a batch marks the
        // indexes below it acked, so the batch goes out with an ack_set that skips them.
        const auto& m = s.start_message_id();
        const auto latest = static_cast<std::uint64_t>(INT64_MAX);
        const auto ledger = t.store().ledger_id();
        if (m.ledgerid() == proto::no_position || m.entryid() == proto::no_position) {
            start.where = subscription_start::kind::earliest;  // MessageId.earliest
        } else if (m.ledgerid() == latest && m.entryid() == latest) {
            start.where = subscription_start::kind::latest;  // MessageId.latest
        } else if (m.ledgerid() < ledger) {
            start.where = subscription_start::kind::earliest;  // an older incarnation
        } else if (m.ledgerid() > ledger) {
            start.where = subscription_start::kind::latest;
        } else {
            start.where = subscription_start::kind::at_entry;
            start.entry_id = m.entryid();
            if (m.has_batch_index() && m.batch_index() > 0) {
                start.batch_index = m.batch_index();
            }
            if (created && m.entryid() < t.store().details().first_entry) {
                // Trimmed from the log, kept by the view: resume there (the client drops the
                // start message itself, as for any reader start).
                start.where = subscription_start::kind::earliest;
                view_from = m.entryid();
            }
        }
    }
    if (created && start.where == subscription_start::kind::earliest && !view_from) {
        view_from = 0;
    }
    return t.subscribe(s.subscription(), start, durable);
}

}  // namespace

awaitable<void> connection::handle_subscribe(const proto::frame_view& f) {
    const auto& s = f.command().subscribe();
    const auto req = s.request_id();
    const auto id = s.consumer_id();
    if (consumers_.contains(id)) {
        write_frame([&](proto::frame_buffer& b) { return writer_.success(b, req); });
        co_return;
    }
    auto name = parse_topic_name(s.topic());
    if (!name) {
        error_reply(req, name.error(), "invalid topic name: " + s.topic());
        co_return;
    }
    if (s.subscription().empty()) {
        error_reply(req, proto::error_kind::bad_request, "subscription name is required");
        co_return;
    }
    const bool create = !s.has_force_topic_creation() || s.force_topic_creation();
    // Opening the topic and creating the (durable) cursor block: both on the pool, in one
    // job; SUCCESS only after the durable creation (below, back on the strand).
    std::optional<result<std::shared_ptr<topic>>> opened;
    std::optional<result<std::shared_ptr<subscription>>> sub;
    std::optional<std::uint64_t> view_from;
    co_await offload([&] {
        opened.emplace(ctx_.topics.open(*name, create));
        if (!*opened) {
            return;
        }
        sub.emplace(subscribe_on(***opened, s, view_from));
    });
    if (!opened) {
        error_reply(req, proto::error_kind::unavailable, "cannot open topic");
        co_return;
    }
    auto& t = *opened;
    if (!t) {
        error_reply(req, t.error(), "cannot open topic: " + t.error().message());
        co_return;
    }
    if (!sub) {
        error_reply(req, proto::error_kind::unavailable, "cannot open subscription");
        co_return;
    }
    auto& sub_r = *sub;
    if (!sub_r) {
        error_reply(req, sub_r.error(), "cannot open subscription: " + sub_r.error().message());
        co_return;
    }
    auto c = std::make_shared<consumer>();
    c->id = id;
    c->name = s.consumer_name();
    c->priority = s.priority_level();
    c->type = static_cast<sub_type>(s.subtype());
    if (s.has_keysharedmeta()) {
        const auto& ks = s.keysharedmeta();
        if (ks.keysharedmode() == proto::pb::KeySharedMeta::STICKY) {
            c->ks_mode = key_shared_mode::sticky;
            for (const auto& r : ks.hashranges()) {
                c->ks_ranges.push_back(hash_range{r.start(), r.end()});
            }
        }
    }
    c->sink = std::weak_ptr<consumer_sink>(shared_from_this());
    if (s.read_compacted()) {
        // As Pulsar: compacted reads only where one consumer reads in order.
        const bool durable = !s.has_durable() || s.durable();
        if (durable && c->type != sub_type::exclusive && c->type != sub_type::failover) {
            (*t)->release_subscription(*sub_r);
            error_reply(req, proto::error_kind::not_allowed,
                        "readCompacted only allowed on failover or exclusive subscriptions");
            co_return;
        }
        if ((*t)->compaction()) {
            (*sub_r)->set_compacted((*t)->compaction());
            if (view_from) {
                (*sub_r)->read_view_from(*view_from);  // the first read (see subscribe_on)
            }
        }
    }
    if (auto r = (*sub_r)->add_consumer(c); !r) {
        (*t)->release_subscription(*sub_r);
        const char* why = r.error() == make_error_code(proto::error_kind::consumer_busy)
                              ? "subscription is busy (exclusive consumer, or another sub type "
                                "or key_shared mode)"
                          : r.error() == make_error_code(proto::error_kind::consumer_assign_failed)
                              ? "key_shared hash ranges are empty, invalid or overlap another "
                                "consumer's, or no range is left to split"
                              : nullptr;
        error_reply(req, r.error(), why != nullptr ? std::string(why) : r.error().message());
        co_return;
    }
    consumers_[id] = consumer_state{*t, *sub_r, c};
    write_frame([&](proto::frame_buffer& b) { return writer_.success(b, req); });
    NEREUS_LOG(broker_log(), debug, "consumer subscribed topic={} sub={} type={} peer={}",
               (*t)->full_name(), s.subscription(), to_string(c->type), peer_);
}

void connection::handle_flow(const proto::frame_view& f) {
    const auto& fl = f.command().flow();
    auto it = consumers_.find(fl.consumer_id());
    if (it == consumers_.end()) {
        return;  // Java ignores FLOW for unknown consumers
    }
    it->second.sub->add_permits(*it->second.c, fl.messagepermits());
}

void connection::handle_ack(const proto::frame_view& f) {
    const auto& a = f.command().ack();
    const std::optional<std::uint64_t> req =
        a.has_request_id() ? std::optional<std::uint64_t>(a.request_id()) : std::nullopt;
    const auto consumer_id = a.consumer_id();
    auto respond = [this, consumer_id](std::uint64_t r, const result<void>& outcome) {
        if (proto::peer_knows(proto::command_type::ack_response, peer_version_)) {
            write_frame([&](proto::frame_buffer& b) {
                if (outcome) {
                    return writer_.ack_response(b, consumer_id, r);
                }
                return writer_.ack_response(b, consumer_id, r,
                                            proto::to_server_error(outcome.error()),
                                            outcome.error().message());
            });
        } else if (outcome) {
            write_frame([&](proto::frame_buffer& b) { return writer_.success(b, r); });
        } else {
            error_reply(r, outcome.error(), "ack failed");
        }
    };
    auto it = consumers_.find(consumer_id);
    if (it == consumers_.end()) {
        if (req) {
            respond(*req, nereus::error(proto::error_kind::consumer_not_found));
        }
        return;
    }
    std::vector<ack_id> ids;
    ids.reserve(static_cast<std::size_t>(a.message_id_size()));
    const auto ledger_id = it->second.t->store().ledger_id();
    for (const auto& m : a.message_id()) {
        if (m.ledgerid() != ledger_id) {
            continue;  // another incarnation of the topic: no effect (answered success)
        }
        ack_id id;
        id.entry_id = m.entryid();
        const auto set = proto::ack_set_of(m);
        id.ack_set.assign(set.begin(), set.end());
        id.batch_size = m.has_batch_size() ? m.batch_size() : 0;
        ids.push_back(std::move(id));
    }
    std::weak_ptr<connection> weak = weak_from_this();
    it->second.sub->ack(*it->second.c, a.ack_type() == 1, std::move(ids),
                        [weak, req, respond](result<void> r) {
                            if (!req) {
                                return;
                            }
                            if (auto self = weak.lock()) {
                                asio::post(self->strand_, [self, req, respond, r] {
                                    (void)self;
                                    respond(*req, r);
                                });
                            }
                        });
}

void connection::handle_redeliver(const proto::frame_view& f) {
    const auto& r = f.command().redeliverunacknowledgedmessages();
    auto it = consumers_.find(r.consumer_id());
    if (it == consumers_.end()) {
        return;
    }
    std::vector<std::uint64_t> entries;
    for (const auto& m : r.message_ids()) {
        entries.push_back(m.entryid());
    }
    it->second.sub->redeliver(*it->second.c, entries);
}

void connection::detach_consumer(std::uint64_t consumer_id) {
    auto it = consumers_.find(consumer_id);
    if (it == consumers_.end()) {
        return;
    }
    auto st = std::move(it->second);
    consumers_.erase(it);
    st.sub->remove_consumer(*st.c);
    st.t->release_subscription(st.sub);
}

void connection::handle_close_consumer(const proto::frame_view& f) {
    const auto& c = f.command().close_consumer();
    detach_consumer(c.consumer_id());
    const auto req = c.request_id();
    write_frame([&](proto::frame_buffer& b) { return writer_.success(b, req); });
}

awaitable<void> connection::handle_unsubscribe(const proto::frame_view& f) {
    const auto& u = f.command().unsubscribe();
    const auto req = u.request_id();
    auto it = consumers_.find(u.consumer_id());
    if (it == consumers_.end()) {
        error_reply(req, proto::error_kind::bad_request, "Consumer not found");
        co_return;
    }
    if (auto r = it->second.sub->check_unsubscribe(*it->second.c); !r) {
        error_reply(req, r.error(), "other consumers are connected to the subscription");
        co_return;
    }
    auto st = it->second;
    detach_consumer(u.consumer_id());
    // The durable delete blocks: on the pool; SUCCESS once it is durable.
    std::optional<result<void>> deleted;
    co_await offload([&] { deleted.emplace(st.t->delete_subscription(st.sub)); });
    if (!deleted || !*deleted) {
        const auto ec =
            deleted ? deleted->error() : make_error_code(proto::error_kind::unavailable);
        error_reply(req, ec, "unsubscribe failed: " + ec.message());
        co_return;
    }
    write_frame([&](proto::frame_buffer& b) { return writer_.success(b, req); });
}

awaitable<void> connection::handle_seek(const proto::frame_view& f) {
    const auto& s = f.command().seek();
    const auto req = s.request_id();
    auto it = consumers_.find(s.consumer_id());
    if (it == consumers_.end()) {
        error_reply(req, proto::error_kind::bad_request, "Consumer not found");
        co_return;
    }
    seek_target target;
    if (s.has_message_id()) {
        const auto& m = s.message_id();
        const auto latest = static_cast<std::uint64_t>(INT64_MAX);
        if (m.ledgerid() == proto::no_position || m.entryid() == proto::no_position) {
            target.where = seek_target::kind::earliest;
        } else if (m.ledgerid() == latest && m.entryid() == latest) {
            target.where = seek_target::kind::latest;
        } else {
            target.where = seek_target::kind::to_entry;
            target.entry_id = m.entryid();
        }
    } else if (s.has_message_publish_time()) {
        target.where = seek_target::kind::to_time;
        target.publish_time = static_cast<std::int64_t>(s.message_publish_time());
    } else {
        error_reply(req, proto::error_kind::bad_request, "seek needs a message id or a time");
        co_return;
    }
    auto sub = it->second.sub;
    auto t = it->second.t;
    // Disconnects every consumer of the subscription first (our own one inline, so its
    // CLOSE_CONSUMER precedes the SUCCESS), then resets the cursor durably on the blocking
    // pool, then SUCCESS (back on the strand). A non-durable subscription is kept (parked)
    // with its reset cursor for the reader's reconnect, which then continues from the seek
    // position whatever start_message_id it sends.
    sub->begin_seek();
    std::optional<result<void>> reset;
    co_await offload([&] { reset.emplace(sub->reset_cursor(target)); });
    if (!reset) {
        reset.emplace(nereus::error(proto::error_kind::unavailable));
    }
    auto& r = *reset;
    if (r && !sub->durable()) {
        sub->set_parked(true);
    } else {
        t->release_subscription(sub);
    }
    if (!r) {
        error_reply(req, r.error(), "seek failed: " + r.error().message());
        co_return;
    }
    write_frame([&](proto::frame_buffer& b) { return writer_.success(b, req); });
}

void connection::handle_get_last_message_id(const proto::frame_view& f) {
    const auto& g = f.command().getlastmessageid();
    const auto req = g.request_id();
    auto it = consumers_.find(g.consumer_id());
    if (it == consumers_.end()) {
        error_reply(req, proto::error_kind::bad_request, "Consumer not found");
        return;
    }
    if (it->second.sub->read_compacted()) {
        deferred_ = true;  // the compacted view may need loading (blocking): on the pool
        return;
    }
    reply_last_message_id(req, it->second, nullptr);
}

// read_compacted (Pulsar's behaviour, apache/pulsar#13533): when the compaction horizon
// reaches the end of the log, the last message such a reader can still receive is the view's
// last entry, not the log's — the log's tail may be tombstones (or superseded versions) that
// the view dropped, and a reader told otherwise waits in has_message_available/read_next for a
// message that never comes. With a horizon short of the log's end the log's last entry stands.
awaitable<void> connection::handle_get_last_message_id_compacted(const proto::frame_view& f) {
    const auto& g = f.command().getlastmessageid();
    const auto req = g.request_id();
    auto it = consumers_.find(g.consumer_id());
    if (it == consumers_.end()) {
        error_reply(req, proto::error_kind::bad_request, "Consumer not found");
        co_return;
    }
    auto st = it->second;
    std::shared_ptr<const compacted_view> view;
    if (auto comp = st.sub->compaction()) {
        co_await offload([&] {
            if (auto v = comp->view()) {
                view = *v;
            }
        });
    }
    reply_last_message_id(req, st, view.get());
}

void connection::reply_last_message_id(std::uint64_t req,
                                       const consumer_state& st,
                                       const compacted_view* view) {
    const auto& t = *st.t;
    proto::message_id last;
    last.ledger_id = proto::no_position;
    last.entry_id = proto::no_position;
    if (t.name().partition) {
        last.partition = static_cast<std::int32_t>(*t.name().partition);
    }
    const auto le = st.t->store().last_entry();
    if (le) {
        last.ledger_id = le->pos.ledger_id;
        last.entry_id = le->pos.entry_id;
        if (le->batch_size > 1) {
            last.batch_index = static_cast<std::int32_t>(le->batch_size - 1);
        }
    }
    // The view answers when its horizon reaches the log's end — also when retention trimmed
    // the whole log (no readable last entry) while the view still holds messages.
    if (view != nullptr &&
        (!le || (view->ledger_id == le->pos.ledger_id && view->end >= le->pos.entry_id + 1))) {
        last.batch_index = -1;
        if (view->entries.empty()) {
            last.ledger_id = proto::no_position;
            last.entry_id = proto::no_position;
        } else {
            const auto& e = view->entries.back();
            last.ledger_id = view->ledger_id;
            last.entry_id = e.entry_id;
            if (e.batch_size > 1) {
                last.batch_index = static_cast<std::int32_t>(e.batch_size - 1);
            }
        }
    }
    std::optional<proto::message_id> md;
    if (auto p = st.sub->mark_delete_position()) {
        md = proto::message_id{p->ledger_id, p->entry_id};
    }
    write_frame([&](proto::frame_buffer& b) {
        return writer_.get_last_message_id_response(b, req, last, md);
    });
}

void connection::handle_consumer_stats(const proto::frame_view& f) {
    const auto& s = f.command().consumerstats();
    const auto req = s.request_id();
    auto it = consumers_.find(s.consumer_id());
    if (it == consumers_.end()) {
        write_frame([&](proto::frame_buffer& b) {
            return writer_.consumer_stats_error(b, req, proto::server_error::consumer_not_found,
                                                "Consumer not found");
        });
        return;
    }
    proto::consumer_stats_args a;
    a.request_id = req;
    a.consumer_name = it->second.c->name;
    const auto permits = it->second.sub->permits_of(*it->second.c);
    a.available_permits = permits > 0 ? static_cast<std::uint64_t>(permits) : 0;
    a.type = to_string(it->second.c->type);
    a.address = peer_;
    a.msg_backlog = it->second.sub->backlog();
    write_frame([&](proto::frame_buffer& b) { return writer_.consumer_stats_response(b, a); });
}

}  // namespace nereus::broker
