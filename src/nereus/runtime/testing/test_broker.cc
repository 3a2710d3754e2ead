#include "nereus/runtime/testing/test_broker.h"

#include "nereus/runtime/errc.h"

#include <algorithm>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <deque>
#include <functional>
#include <regex>

namespace nereus::runtime::testing {

namespace asio = boost::asio;

class test_consumer final : public consumer_port {
public:
    test_consumer(const asio::any_io_executor& ex,
                  std::shared_ptr<test_broker> b,
                  subscriber_spec spec,
                  std::string name,
                  std::shared_ptr<bool> conn_closed)
        : broker_(std::move(b)),
          spec_(std::move(spec)),
          name_(std::move(name)),
          conn_closed_(std::move(conn_closed)),
          wake_(ex) {
        if (spec_.topics.of == topic_selector::kind::pattern) {
            pattern_ = std::regex(spec_.topics.pattern);
        }
    }
    ~test_consumer() override {
        if (!closed_)
            broker_->detach(*this);
    }

    asio::awaitable<result<message>> receive() override {
        for (;;) {
            if (closed_ || interrupted_ || *conn_closed_)
                co_return error(errc::shut_down);
            if (!queue_.empty()) {
                message m = std::move(queue_.front());
                queue_.pop_front();
                co_return m;
            }
            wake_.expires_at(asio::steady_timer::time_point::max());
            co_await wake_.async_wait(asio::as_tuple(asio::use_awaitable));
        }
    }
    void interrupt() override {
        interrupted_ = true;
        wake_.cancel();
    }
    asio::awaitable<result<void>> ack(const message& m) override {
        if (closed_ || *conn_closed_)
            co_return error(errc::shut_down);
        co_return broker_->ack(*this, m);
    }
    asio::awaitable<result<void>> nack(const message& m) override {
        if (closed_ || *conn_closed_)
            co_return error(errc::shut_down);
        co_return broker_->nack(*this, m);
    }
    asio::awaitable<result<void>> seek(const position& p) override {
        if (closed_ || *conn_closed_)
            co_return error(errc::shut_down);
        co_return broker_->seek(*this, p);
    }
    asio::awaitable<void> close() override {
        if (!closed_) {
            closed_ = true;
            wake_.cancel();
            broker_->detach(*this);
        }
        co_return;
    }

    // --- broker side ---
    void push(message m) {
        queue_.push_back(std::move(m));
        wake_.cancel();
    }
    // Drops buffered messages of `topic` (a seek; the client clears its receiver queue).
    void clear(const std::string& topic) {
        std::erase_if(queue_, [&](const message& m) { return m->topic == topic; });
    }
    [[nodiscard]] bool matches(const std::string& topic) const {
        switch (spec_.topics.of) {
            case topic_selector::kind::one:
            case topic_selector::kind::list:
                for (const auto& n : spec_.topics.names) {
                    if (full_topic_name(n) == topic)
                        return true;
                }
                return false;
            case topic_selector::kind::pattern:
                return std::regex_match(topic, pattern_);
        }
        return false;
    }
    [[nodiscard]] const subscriber_spec& spec() const { return spec_; }
    [[nodiscard]] const std::string& name() const { return name_; }
    std::vector<std::string> attached;  // full topic names

private:
    std::shared_ptr<test_broker> broker_;
    subscriber_spec spec_;
    std::string name_;
    std::shared_ptr<bool> conn_closed_;
    asio::steady_timer wake_;
    std::deque<message> queue_;
    std::regex pattern_;
    bool interrupted_ = false;
    bool closed_ = false;
};

namespace {

class test_producer final : public producer_port {
public:
    test_producer(std::shared_ptr<test_broker> b,
                  std::shared_ptr<bool> conn_closed,
                  std::string topic)
        : broker_(std::move(b)), conn_closed_(std::move(conn_closed)), topic_(std::move(topic)) {}
    asio::awaitable<result<message_id>> send(outgoing m) override {
        if (closed_ || *conn_closed_)
            co_return error(errc::shut_down);
        co_return broker_->publish(topic_, m);
    }
    asio::awaitable<void> close() override {
        closed_ = true;
        co_return;
    }

private:
    std::shared_ptr<test_broker> broker_;
    std::shared_ptr<bool> conn_closed_;
    std::string topic_;
    bool closed_ = false;
};

}  // namespace

std::unique_ptr<producer_port> make_test_producer(std::shared_ptr<test_broker> b,
                                                  std::shared_ptr<bool> connection_closed,
                                                  std::string topic) {
    b->count_producer();
    return std::make_unique<test_producer>(std::move(b), std::move(connection_closed),
                                           full_topic_name(topic));
}

test_broker::topic_state& test_broker::topic(const std::string& full) {
    auto it = topics_.find(full);
    if (it != topics_.end())
        return it->second;
    auto& t = topics_[full];
    t.name = full;
    t.ledger = next_ledger_++;
    for (auto* c : pattern_consumers_) {
        if (c->matches(full))
            attach(*c, t);
    }
    return t;
}

result<std::unique_ptr<consumer_port>> test_broker::subscribe(
    const asio::any_io_executor& ex,
    const subscriber_spec& spec,
    std::string consumer_name,
    std::shared_ptr<bool> connection_closed) {
    if (*connection_closed)
        return error(errc::shut_down);
    NEREUS_TRY(validate(spec));
    std::vector<std::string> names;
    if (spec.topics.of == topic_selector::kind::pattern) {
        const std::regex re(spec.topics.pattern);
        for (const auto& [n, t] : topics_) {
            if (std::regex_match(n, re))
                names.push_back(n);
        }
    } else {
        for (const auto& n : spec.topics.names)
            names.push_back(full_topic_name(n));
    }
    // The server's refusals first, before anything is attached.
    for (const auto& n : names) {
        auto t = topics_.find(n);
        if (t == topics_.end())
            continue;
        auto s = t->second.subs.find(spec.subscription);
        if (s == t->second.subs.end() || s->second.consumers.empty())
            continue;
        if (s->second.type != spec.type || spec.type == subscription_type::exclusive) {
            return error(errc::consumer_busy);
        }
    }
    auto c = std::make_unique<test_consumer>(ex, shared_from_this(), spec, std::move(consumer_name),
                                             std::move(connection_closed));
    for (const auto& n : names)
        attach(*c, topic(n));
    if (spec.topics.of == topic_selector::kind::pattern)
        pattern_consumers_.push_back(c.get());
    return std::unique_ptr<consumer_port>(std::move(c));
}

void test_broker::attach(test_consumer& c, topic_state& t) {
    auto [it, created] = t.subs.try_emplace(c.spec().subscription);
    auto& s = it->second;
    if (created || s.consumers.empty()) {
        s.type = c.spec().type;
    }
    if (created) {
        const std::size_t start = c.spec().initial == initial_position::earliest ? 0 : t.log.size();
        s.mark = start;
        s.read = start;
    }
    s.consumers.push_back(&c);
    if (s.type == subscription_type::failover) {
        std::stable_sort(
            s.consumers.begin(), s.consumers.end(),
            [](const test_consumer* a, const test_consumer* b) { return a->name() < b->name(); });
    }
    c.attached.push_back(t.name);
    dispatch(t, s);
}

void test_broker::detach(test_consumer& c) {
    std::erase(pattern_consumers_, &c);
    for (const auto& name : c.attached) {
        auto& t = topics_.at(name);
        auto& s = t.subs.at(c.spec().subscription);
        std::erase(s.consumers, &c);
        for (auto it = s.outstanding.begin(); it != s.outstanding.end();) {
            if (it->second == &c) {
                s.redeliver.insert(it->first);
                it = s.outstanding.erase(it);
            } else {
                ++it;
            }
        }
        dispatch(t, s);
    }
    c.attached.clear();
}

void test_broker::dispatch(topic_state& t, sub_state& s) {
    for (;;) {
        if (s.consumers.empty())
            return;
        std::size_t i = 0;
        bool from_redeliver = false;
        if (!s.redeliver.empty()) {
            i = *s.redeliver.begin();
            from_redeliver = true;
        } else {
            while (s.read < t.log.size() && is_acked(s, s.read))
                ++s.read;
            if (s.read >= t.log.size())
                return;
            i = s.read;
        }
        const stored& m = t.log[i];
        test_consumer* to = nullptr;
        switch (s.type) {
            case subscription_type::exclusive:
            case subscription_type::failover:
                to = s.consumers.front();
                break;
            case subscription_type::shared:
                to = s.consumers[s.rr++ % s.consumers.size()];
                break;
            case subscription_type::key_shared:
                to = s.consumers[std::hash<std::string>{}(m.key.value_or(std::string())) %
                                 s.consumers.size()];
                break;
        }
        if (from_redeliver) {
            s.redeliver.erase(s.redeliver.begin());
        } else {
            ++s.read;
        }
        if (is_acked(s, i))
            continue;
        s.outstanding[i] = to;
        auto d = std::make_shared<message_data>();
        d->topic = t.name;
        d->id = m.id;
        d->key = m.key;
        d->payload = m.payload;
        d->properties = m.properties;
        d->published = m.published;
        d->redelivery_count = s.redeliveries[i];
        to->push(std::move(d));
    }
}

result<message_id> test_broker::publish(const std::string& topic_name, const outgoing& m) {
    if (m.payload.size() > settings_.max_message_size)
        return error(errc::message_too_large);
    auto& t = topic(full_topic_name(topic_name));
    stored s;
    s.id = message_id{t.ledger, static_cast<std::int64_t>(t.log.size()), -1, -1};
    s.key = m.key;
    s.payload = m.payload;
    s.properties = m.properties;
    s.published = clock_->now();
    t.log.push_back(std::move(s));
    const message_id id = t.log.back().id;
    for (auto& [name, sub] : t.subs)
        dispatch(t, sub);
    return id;
}

namespace {
// The log index of `id` on `t`, when it is one of its messages.
std::optional<std::size_t> index_of(const test_broker::topic_state& t, const message_id& id) {
    if (id.ledger != t.ledger || id.entry < 0 ||
        static_cast<std::size_t>(id.entry) >= t.log.size()) {
        return std::nullopt;
    }
    return static_cast<std::size_t>(id.entry);
}
}  // namespace

result<void> test_broker::ack(test_consumer& c, const message& m) {
    if (fail_acks_ > 0) {
        --fail_acks_;
        return error(errc::settle_failed);
    }
    auto t = topics_.find(m->topic);
    if (t == topics_.end())
        return error(errc::topic_not_found);
    auto& s = t->second.subs.at(c.spec().subscription);
    const auto i = index_of(t->second, m->id);
    if (!i)
        return error(errc::settle_failed);
    s.outstanding.erase(*i);
    s.redeliver.erase(*i);
    if (*i >= s.mark)
        s.acked.insert(*i);
    while (s.acked.count(s.mark) != 0)
        s.acked.erase(s.mark++);
    return {};
}

result<void> test_broker::nack(test_consumer& c, const message& m) {
    auto t = topics_.find(m->topic);
    if (t == topics_.end())
        return error(errc::topic_not_found);
    auto& s = t->second.subs.at(c.spec().subscription);
    const auto i = index_of(t->second, m->id);
    if (!i)
        return error(errc::settle_failed);
    auto o = s.outstanding.find(*i);
    if (o != s.outstanding.end() && o->second == &c) {
        s.outstanding.erase(o);
        ++s.redeliveries[*i];
        s.redeliver.insert(*i);
        dispatch(t->second, s);
    }
    return {};
}

result<void> test_broker::seek(test_consumer& c, const position& p) {
    bool any = false;
    for (const auto& name : c.attached) {
        auto& t = topics_.at(name);
        std::size_t at = 0;
        switch (p.at) {
            case position::kind::earliest:
                at = 0;
                break;
            case position::kind::latest:
                at = t.log.size();
                break;
            case position::kind::id: {
                const auto i = index_of(t, p.id);
                if (!i)
                    continue;  // another topic of the consumer
                at = *i;
                break;
            }
            case position::kind::publish_time:
                at = t.log.size();
                for (std::size_t i = 0; i < t.log.size(); ++i) {
                    if (t.log[i].published >= p.time) {
                        at = i;
                        break;
                    }
                }
                break;
        }
        any = true;
        auto& s = t.subs.at(c.spec().subscription);
        s.mark = at;
        s.acked.clear();
        s.read = at;
        s.outstanding.clear();
        s.redeliver.clear();
        s.redeliveries.clear();
        for (auto* other : s.consumers)
            other->clear(t.name);
        dispatch(t, s);
    }
    if (!any)
        return error(errc::seek_failed);
    return {};
}

std::vector<std::string> test_broker::retained_payloads(const std::string& topic_name) const {
    std::vector<std::string> out;
    auto t = topics_.find(full_topic_name(topic_name));
    if (t == topics_.end())
        return out;
    for (const auto& m : t->second.log)
        out.push_back(m.payload);
    return out;
}

std::size_t test_broker::backlog(const std::string& topic_name,
                                 const std::string& subscription) const {
    auto t = topics_.find(full_topic_name(topic_name));
    if (t == topics_.end())
        return 0;
    auto s = t->second.subs.find(subscription);
    if (s == t->second.subs.end())
        return 0;
    std::size_t n = 0;
    for (std::size_t i = 0; i < t->second.log.size(); ++i) {
        if (!is_acked(s->second, i))
            ++n;
    }
    return n;
}

std::size_t test_broker::consumers(const std::string& topic_name,
                                   const std::string& subscription) const {
    auto t = topics_.find(full_topic_name(topic_name));
    if (t == topics_.end())
        return 0;
    auto s = t->second.subs.find(subscription);
    return s == t->second.subs.end() ? 0 : s->second.consumers.size();
}

}  // namespace nereus::runtime::testing
