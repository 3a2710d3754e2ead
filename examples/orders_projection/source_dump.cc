#include "source_dump.h"

#include "order.h"
#include <boost/asio/use_future.hpp>
#include <future>

namespace orders {

namespace nc = nereus::client;
namespace asio = boost::asio;

namespace {

template <class T>
nereus::result<T> wait_for(std::future<nereus::result<T>> f, std::chrono::milliseconds timeout) {
    if (f.wait_for(timeout) != std::future_status::ready) {
        return nereus::error(nc::errc::timeout);
    }
    return f.get();
}

}  // namespace

nereus::result<source_fold> fold_source(const nc::client& c,
                                        const std::string& topic,
                                        std::chrono::milliseconds timeout) {
    auto parts = wait_for(c.get_partitions(topic, asio::use_future), timeout);
    if (!parts) {
        return nereus::error(parts.error());
    }
    // Per key, the latest raw value (partitions are disjoint in keys: a key routes to one).
    std::map<std::string, std::string> latest;
    source_fold out;
    for (const auto& partition : *parts) {
        nc::reader_options o;
        o.topic = partition;
        o.start_message_id = nc::message_id::earliest();
        auto r = wait_for(c.create_reader(o, asio::use_future), timeout);
        if (!r) {
            return nereus::error(r.error());
        }
        for (;;) {
            auto more = wait_for(r->has_message_available(asio::use_future), timeout);
            if (!more) {
                (void)wait_for(r->close(asio::use_future), timeout);
                return nereus::error(more.error());
            }
            if (!*more) {
                break;
            }
            auto m = wait_for(r->read_next(asio::use_future), timeout);
            if (!m) {
                (void)wait_for(r->close(asio::use_future), timeout);
                return nereus::error(m.error());
            }
            ++out.messages;
            if (!m->has_key()) {
                continue;
            }
            if (m->payload().empty()) {
                ++out.tombstones;
                latest.erase(m->key());
            } else {
                latest[m->key()] = std::string(m->payload_text());
            }
        }
        (void)wait_for(r->close(asio::use_future), timeout);
    }
    for (const auto& [key, raw] : latest) {
        auto o = decode_order(std::string_view(raw));
        if (!o || o->id != key) {
            ++out.undecodable;
            continue;
        }
        out.final_state[key] = encode_order(*o);
    }
    return out;
}

}  // namespace orders
