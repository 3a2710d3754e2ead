#include "nereus/runtime/pulsar/consumer.h"

#include "nereus/client/errc.h"
#include "nereus/runtime/errc.h"
#include "nereus/runtime/pulsar/errors.h"

#include <algorithm>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <chrono>
#include <deque>
#include <map>
#include <set>

namespace nereus::runtime::pulsar {

namespace asio = boost::asio;
namespace nc = nereus::client;

namespace {

// A received message as the runtime sees it, with the client's id (batch index and size
// included) kept for settling it. Only this port's own messages come back to it (the driver
// applies the commands of its own subscription), so the downcast in ack/nack is safe.
struct client_message final : message_data {
    nc::message_id client_id;
};

std::shared_ptr<client_message> convert(const nc::message& m) {
    auto d = std::make_shared<client_message>();
    d->topic = m.topic();
    const auto& id = m.id();
    d->id = message_id{id.ledger, id.entry, id.partition, id.batch_index};
    d->client_id = id;
    if (m.has_key())
        d->key = m.key();
    d->payload = std::string(m.payload_text());
    d->properties = m.properties();
    d->published =
        std::chrono::duration_cast<std::chrono::milliseconds>(m.publish_time().time_since_epoch());
    d->redelivery_count = m.redelivery_count();
    return d;
}

const nc::message_id& client_id(const message& m) {
    return static_cast<const client_message&>(*m).client_id;
}

// What the port and its (at most one) outstanding client receive share.
struct receive_state {
    explicit receive_state(const asio::any_io_executor& ex) : wake(ex) {}
    asio::steady_timer wake;
    std::deque<std::shared_ptr<client_message>> ready;
    std::error_code failed;  // the client refused a receive (closed): no more will come
    bool pending = false;    // a client receive is outstanding
    bool interrupted = false;
};

class client_consumer final : public consumer_port {
public:
    client_consumer(const asio::any_io_executor& ex, nc::consumer c, bool single_active)
        : ex_(ex),
          c_(std::move(c)),
          st_(std::make_shared<receive_state>(ex)),
          single_active_(single_active) {}
    ~client_consumer() override {
        st_->interrupted = true;
        st_->wake.cancel();
    }

    asio::awaitable<result<message>> receive() override {
        for (;;) {
            if (st_->interrupted)
                co_return error(errc::shut_down);
            if (!st_->ready.empty()) {
                auto m = std::move(st_->ready.front());
                st_->ready.pop_front();
                if (single_active_) {
                    // One active consumer gets a topic's messages in order: one at or below
                    // the highest handed out is a rewind's copy, handed out again only when
                    // it was nacked (or its ack went unconfirmed).
                    auto& high = high_[m->topic];
                    if (m->id <= high) {
                        if (awaiting_.erase(m->id) == 0)
                            continue;
                    } else {
                        high = m->id;
                        awaiting_.erase(m->id);
                    }
                    if (auto it = nacked_.find(m->id); it != nacked_.end()) {
                        m->redelivery_count = std::max(m->redelivery_count, it->second);
                    }
                }
                co_return message(std::move(m));
            }
            if (st_->failed)
                co_return error(errc::shut_down);
            if (!st_->pending)
                start_receive();
            st_->wake.expires_at(asio::steady_timer::time_point::max());
            co_await st_->wake.async_wait(asio::as_tuple(asio::use_awaitable));
        }
    }

    void interrupt() override {
        st_->interrupted = true;
        st_->wake.cancel();
    }

    asio::awaitable<result<void>> ack(const message& m) override {
        const nc::message_id id = client_id(m);
        auto r = co_await c_.acknowledge(id, asio::use_awaitable);
        if (!r) {
            if (single_active_)
                awaiting_.insert(m->id);  // the broker will send it again
            co_return error(from_client(r.error()));
        }
        nacked_.erase(m->id);
        co_return result<void>{};
    }

    asio::awaitable<result<void>> nack(const message& m) override {
        const nc::message_id id = client_id(m);
        if (single_active_) {
            awaiting_.insert(m->id);
            ++nacked_[m->id];
        }
        auto r = co_await c_.redeliver(id, asio::use_awaitable);
        if (!r)
            co_return error(from_client(r.error()));
        co_return result<void>{};
    }

    asio::awaitable<result<void>> seek(const position& p) override {
        result<void> r;
        switch (p.at) {
            case position::kind::earliest:
                r = co_await c_.seek(nc::message_id::earliest(), asio::use_awaitable);
                break;
            case position::kind::latest:
                r = co_await c_.seek(nc::message_id::latest(), asio::use_awaitable);
                break;
            case position::kind::id: {
                nc::message_id id;
                id.ledger = p.id.ledger;
                id.entry = p.id.entry;
                id.partition = p.id.partition;
                id.batch_index = p.id.batch_index;
                r = co_await c_.seek(id, asio::use_awaitable);
                break;
            }
            case position::kind::publish_time: {
                const nc::system_time t{std::chrono::milliseconds(p.time.count())};
                r = co_await c_.seek(t, asio::use_awaitable);
                break;
            }
        }
        if (!r) {
            if (r.error() == nc::errc::invalid_argument)
                co_return error(errc::seek_failed);
            co_return error(from_client(r.error()));
        }
        // What the client had handed over before the seek is from the old position: the client
        // dropped its own buffer, this drops the port's.
        st_->ready.clear();
        high_.clear();  // everything comes from the new position
        awaiting_.clear();
        co_return result<void>{};
    }

    asio::awaitable<void> close() override {
        interrupt();
        (void)co_await c_.close(asio::use_awaitable);
    }

private:
    void start_receive() {
        st_->pending = true;
        auto on_message = [st = st_](result<nc::message> r) {
            st->pending = false;
            if (r) {
                st->ready.push_back(convert(*r));
            } else {
                st->failed = r.error();
            }
            st->wake.cancel();
        };
        c_.receive(asio::bind_executor(ex_, std::move(on_message)));
    }

    asio::any_io_executor ex_;
    nc::consumer c_;
    std::shared_ptr<receive_state> st_;
    // Exclusive / Failover (one active consumer): the broker keeps no redelivery count and a
    // nack redelivers every unacknowledged message of the consumer (Pulsar's rewind). So the
    // port counts its own nacks per message (in memory, like the broker's count on Shared) and
    // hands out again only the messages that were nacked or whose ack went unconfirmed.
    bool single_active_;
    std::map<std::string, message_id, std::less<>> high_;  // per topic: highest handed out
    std::set<message_id> awaiting_;                        // nacked / unconfirmed: may come again
    std::map<message_id, std::uint32_t> nacked_;           // nacks sent per message, until its ack
};

}  // namespace

std::unique_ptr<consumer_port> make_consumer_port(const asio::any_io_executor& ex,
                                                  nc::consumer c,
                                                  subscription_type type) {
    const bool single_active =
        type == subscription_type::exclusive || type == subscription_type::failover;
    return std::make_unique<client_consumer>(ex, std::move(c), single_active);
}

}  // namespace nereus::runtime::pulsar
