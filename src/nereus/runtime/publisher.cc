#include "nereus/runtime/publisher.h"

#include "nereus/runtime/errc.h"
#include "nereus/runtime/spec.h"
#include "nereus/runtime/transport.h"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace nereus::runtime {

namespace asio = boost::asio;

asio::awaitable<result<message_id>> producer_pool::send(std::string_view topic, outgoing m) {
    if (closed_) {
        co_return error(errc::shut_down);
    }
    if (!started_) {
        co_return error(errc::not_started);
    }
    const std::string name = full_topic_name(topic);
    auto it = producers_.find(name);
    if (it == producers_.end()) {
        it = producers_.emplace(name, entry{}).first;
        it->second.opened = std::make_shared<asio::steady_timer>(ex_);
        it->second.opened->expires_at(asio::steady_timer::time_point::max());
        auto opened = co_await t_->create_producer(ex_, name);
        auto& e = producers_.at(name);
        e.opening = false;
        if (opened) {
            e.port = std::move(*opened);
        } else {
            e.error = opened.error();
        }
        e.opened->cancel();
        if (!opened) {
            const auto ec = e.error;
            producers_.erase(name);  // the next publish tries again
            co_return error(ec);
        }
    } else if (it->second.opening) {
        auto opened = it->second.opened;
        co_await opened->async_wait(asio::as_tuple(asio::use_awaitable));
        it = producers_.find(name);
        if (it == producers_.end() || !it->second.port) {
            co_return error(errc::publish_failed);
        }
    }
    if (closed_) {
        co_return error(errc::shut_down);
    }
    co_return co_await it->second.port->send(std::move(m));
}

asio::awaitable<void> producer_pool::close() {
    closed_ = true;
    for (auto& [name, e] : producers_) {
        if (e.port) {
            co_await e.port->close();
        }
    }
}

}  // namespace nereus::runtime
