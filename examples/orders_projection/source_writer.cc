#include "source_writer.h"

#include "nereus/events/policy.h"

#include <fmt/format.h>

#include <array>
#include <boost/asio/use_future.hpp>
#include <future>
#include <vector>

namespace orders {

namespace nc = nereus::client;
namespace asio = boost::asio;
using namespace std::chrono_literals;

namespace {

constexpr auto timeout = 60s;  // per receipt; generous for a loaded 2-core machine
// The events API admits a payload by this message property, valued "orders/v1".
constexpr const char* format_property = nereus::events::admitted_format::format_property;

constexpr std::array<std::string_view, 5> statuses = {"new", "paid", "packed", "shipped",
                                                      "delivered"};

}  // namespace

std::string order_id(std::uint32_t i) {
    return fmt::format("o-{:05}", i);
}

nereus::result<source_writer> source_writer::open(const nc::client& c,
                                                  const std::string& topic,
                                                  std::uint64_t seed,
                                                  std::uint32_t id_space) {
    nc::producer_options o;
    o.topic = topic;
    o.batching = false;
    o.send_timeout = timeout;
    auto f = c.create_producer(o, asio::use_future);
    if (f.wait_for(timeout) != std::future_status::ready) {
        return nereus::error(nc::errc::timeout);
    }
    auto p = f.get();
    if (!p) {
        return nereus::error(p.error());
    }
    return source_writer(std::move(*p), seed, id_space);
}

nc::outgoing_message source_writer::next() {
    const std::string id = order_id(static_cast<std::uint32_t>(rng_() % id_space_));
    auto& t = orders_[id];
    const auto roll = rng_() % 100;
    if (t.alive && roll < 15) {
        t.alive = false;
        ++counts_.deletes;
        nc::outgoing_message m;  // tombstone: empty payload
        m.key = id;
        m.properties.emplace_back(format_property, std::string(schema_v1));
        return m;
    }
    return upsert(id, t);
}

nc::outgoing_message source_writer::upsert(const std::string& id, tracked& t) {
    if (t.alive) {
        ++t.version;
        ++counts_.updates;
    } else {
        t.alive = true;
        t.version = 1;
        ++counts_.creates;
    }
    order o{id, t.version, std::string(statuses[(t.version - 1) % statuses.size()]),
            static_cast<std::int64_t>(rng_() % 100'000)};
    return nc::outgoing_message::text(encode_order(o))
        .with_key(id)
        .with_property(format_property, std::string(schema_v1));
}

nereus::result<nc::message_id> source_writer::update_one() {
    for (auto& [id, t] : orders_) {
        if (t.alive) {
            std::vector<nc::outgoing_message> ms;
            ms.push_back(upsert(id, t));
            return send_all(std::move(ms));
        }
    }
    const std::string id = order_id(0);
    std::vector<nc::outgoing_message> ms;
    ms.push_back(upsert(id, orders_[id]));
    return send_all(std::move(ms));
}

nereus::result<nc::message_id> source_writer::delete_one() {
    for (auto& [id, t] : orders_) {
        if (t.alive) {
            t.alive = false;
            ++counts_.deletes;
            nc::outgoing_message m;  // tombstone: empty payload
            m.key = id;
            m.properties.emplace_back(format_property, std::string(schema_v1));
            std::vector<nc::outgoing_message> ms;
            ms.push_back(std::move(m));
            return send_all(std::move(ms));
        }
    }
    return update_one();  // nothing alive to delete (not in the self-check's workload)
}

nereus::result<nc::message_id> source_writer::send_all(std::vector<nc::outgoing_message> ms) {
    std::vector<std::future<nereus::result<nc::message_id>>> fs;
    fs.reserve(ms.size());
    for (auto& m : ms) {
        fs.push_back(producer_.send(std::move(m), asio::use_future));
    }
    nc::message_id last;
    for (auto& f : fs) {
        if (f.wait_for(timeout) != std::future_status::ready) {
            return nereus::error(nc::errc::timeout);
        }
        auto r = f.get();
        if (!r) {
            return nereus::error(r.error());
        }
        last = *r;
    }
    return last;
}

nereus::result<nc::message_id> source_writer::create_initial(std::uint32_t n) {
    std::vector<std::future<nereus::result<nc::message_id>>> fs;
    fs.reserve(n);
    for (std::uint32_t i = 0; i < n; ++i) {
        const std::string id = order_id(i);
        auto& t = orders_[id];
        t = {1, true};
        ++counts_.creates;
        order o{id, 1, std::string(statuses[0]), static_cast<std::int64_t>(rng_() % 100'000)};
        fs.push_back(producer_.send(nc::outgoing_message::text(encode_order(o))
                                        .with_key(id)
                                        .with_property(format_property, std::string(schema_v1)),
                                    asio::use_future));
    }
    nc::message_id last;
    for (auto& f : fs) {
        if (f.wait_for(timeout) != std::future_status::ready) {
            return nereus::error(nc::errc::timeout);
        }
        auto r = f.get();
        if (!r) {
            return nereus::error(r.error());
        }
        last = *r;
    }
    return last;
}

nereus::result<nc::message_id> source_writer::mutate(std::uint32_t n) {
    std::vector<nc::outgoing_message> ms;
    ms.reserve(n);
    for (std::uint32_t i = 0; i < n; ++i) {
        ms.push_back(next());
    }
    return send_all(std::move(ms));
}

void source_writer::close() {
    if (producer_.valid()) {
        auto f = producer_.close(asio::use_future);
        (void)f.wait_for(timeout);
        producer_ = {};
    }
}

}  // namespace orders
