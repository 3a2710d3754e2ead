#pragma once

// Publishing. The runtime keeps one producer per topic for its connection, opened by the first
// publish to that topic and shared by every publisher (and by the drivers' dead-letter sends).
//
// producer_pool: owned by the runtime. publisher: a handle on the pool, copied freely (into
// handlers, hooks); it must not outlive the runtime. After shutdown every publish is refused
// with errc::shut_down.
// Thread-safety: strand-confined to the runtime's executor.
// Durability: publish() completes with the broker's receipt (*confirmed*).

#include "nereus/base/result.h"
#include "nereus/runtime/codec.h"
#include "nereus/runtime/message.h"
#include "nereus/runtime/ports.h"

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>
#include <cstddef>
#include <map>
#include <memory>
#include <string>
#include <string_view>

namespace nereus::runtime {

class transport;

class producer_pool {
public:
    producer_pool(boost::asio::any_io_executor ex, transport& t) : ex_(std::move(ex)), t_(&t) {}
    producer_pool(const producer_pool&) = delete;
    producer_pool& operator=(const producer_pool&) = delete;

    // Publishes `m` to `topic` (short names are completed), opening the topic's producer first
    // if this is the first publish to it.
    boost::asio::awaitable<result<message_id>> send(std::string_view topic, outgoing m);
    // Producers opened so far (one per topic).
    [[nodiscard]] std::size_t producers() const { return producers_.size(); }
    void start() { started_ = true; }
    // Closes every producer; later sends are refused.
    boost::asio::awaitable<void> close();

private:
    struct entry {
        std::unique_ptr<producer_port> port;
        std::error_code error;
        bool opening = true;
        std::shared_ptr<boost::asio::steady_timer> opened;  // cancelled when opening ends
    };
    boost::asio::any_io_executor ex_;
    transport* t_;
    std::map<std::string, entry, std::less<>> producers_;
    bool started_ = false;
    bool closed_ = false;
};

class publisher {
public:
    explicit publisher(producer_pool* pool) : pool_(pool) {}

    boost::asio::awaitable<result<message_id>> publish(std::string_view topic, outgoing m) {
        co_return co_await pool_->send(topic, std::move(m));
    }
    // Encodes `value` with `Codec` (codec.h) and publishes it.
    template <class Codec>
    boost::asio::awaitable<result<message_id>> publish(std::string_view topic,
                                                       const typename Codec::value_type& value,
                                                       std::optional<std::string> key = {}) {
        outgoing m;
        m.payload = Codec::encode(value);
        m.key = std::move(key);
        co_return co_await pool_->send(topic, std::move(m));
    }

private:
    producer_pool* pool_;
};

}  // namespace nereus::runtime
