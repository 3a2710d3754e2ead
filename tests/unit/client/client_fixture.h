#pragma once

// gtest fixture for the client: an in-process broker (broker::server over the in-memory
// backend) on 127.0.0.1:0, and a nereus::client on its own io thread pointed at it. Every
// operation is waited for through asio::use_future with a bounded wait (no test hangs).
// restart_broker() stops the server and starts a new one on the same port over the same
// backend (the data survives), which is what a reconnect needs.

#include "nereus/broker/memory_backend.h"
#include "nereus/broker/server.h"
#include "nereus/client/client.h"

#include <gtest/gtest.h>

#include <boost/asio/use_future.hpp>
#include <chrono>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <thread>

namespace nereus::client::test {

namespace asio = boost::asio;
using namespace std::chrono_literals;

// Waits (bounded) for a future of result<T>; a timeout is a test failure reported as errc::timeout.
template <class T>
result<T> wait(std::future<result<T>> f, std::chrono::milliseconds limit = 20s) {
    if (f.wait_for(limit) != std::future_status::ready) {
        ADD_FAILURE() << "operation did not complete within " << limit.count() << " ms";
        return nereus::error(errc::timeout);
    }
    return f.get();
}

class ClientTest : public ::testing::Test {
protected:
    void SetUp() override { start_broker(); }

    void TearDown() override {
        if (client_) {
            client_->close();
        }
        if (server_) {
            server_->stop();
        }
    }

    void start_broker(std::uint16_t port = 0) {
        broker::broker_options o;
        o.port = port;
        o.bind_address = "127.0.0.1";
        o.io_threads = 1;
        o.blocking_threads = 2;
        configure(o);
        if (!backend_) {
            backend_ = broker::make_memory_backend({});
        }
        server_ = std::make_unique<broker::server>(o, *backend_);
        auto r = server_->start();
        ASSERT_TRUE(r.has_value()) << r.error().message();
        port_ = server_->port();
    }

    // Idempotent: a test may stop the broker and then restart_broker() it.
    void stop_broker() {
        if (server_) {
            server_->stop();
            server_.reset();
        }
    }

    // Stops the broker (if running) and starts it again on the same port (bounded retries on
    // the bind).
    void restart_broker(std::chrono::milliseconds down = 0ms) {
        stop_broker();
        std::this_thread::sleep_for(down);
        for (int i = 0; i < 50; ++i) {
            broker::broker_options o;
            o.port = port_;
            o.bind_address = "127.0.0.1";
            o.io_threads = 1;
            o.blocking_threads = 2;
            configure(o);
            server_ = std::make_unique<broker::server>(o, *backend_);
            if (server_->start()) {
                return;
            }
            server_.reset();
            std::this_thread::sleep_for(100ms);
        }
        FAIL() << "could not restart the broker on port " << port_;
    }

    client& cli(client_options o = {}) {
        if (!client_) {
            o.service_url = "pulsar://127.0.0.1:" + std::to_string(port_);
            o.operation_timeout = 10s;
            o.reconnect_backoff.initial = 50ms;
            o.reconnect_backoff.max = 500ms;
            client_.emplace(o);
        }
        return *client_;
    }

    producer make_producer(producer_options o) {
        auto p = wait(cli().create_producer(std::move(o), asio::use_future));
        EXPECT_TRUE(p.has_value()) << p.error().message();
        return p ? *p : producer{};
    }

    consumer make_consumer(consumer_options o) {
        auto c = wait(cli().subscribe(std::move(o), asio::use_future));
        EXPECT_TRUE(c.has_value()) << c.error().message();
        return c ? *c : consumer{};
    }

    static consumer_options sub(std::string topic,
                                std::string name,
                                subscription_type t = subscription_type::exclusive) {
        consumer_options o;
        o.topics = {std::move(topic)};
        o.subscription = std::move(name);
        o.type = t;
        o.start = initial_position::earliest;
        return o;
    }

    static producer_options prod(std::string topic, bool batching = false) {
        producer_options o;
        o.topic = std::move(topic);
        o.batching = batching;
        return o;
    }

    // Sends `text` and waits for its receipt.
    static result<message_id> send(producer& p, std::string_view text) {
        return wait(p.send(outgoing_message::text(text), asio::use_future));
    }

    static result<message> receive(consumer& c, std::chrono::milliseconds limit = 10s) {
        return wait(c.receive(asio::use_future), limit);
    }

    // A receive that is expected NOT to deliver within `d`: true when nothing came. The receive
    // stays pending (and would take the next message), so use it as a test's last receive.
    static bool nothing_within(consumer& c, std::chrono::milliseconds d) {
        auto f = c.receive(asio::use_future);
        if (f.wait_for(d) == std::future_status::ready) {
            auto m = f.get();
            if (m) {
                ADD_FAILURE() << "unexpected message " << m->payload_text();
            }
            return false;
        }
        return true;  // the receive stays pending; the consumer's close fails it
    }

    // Broker settings a test changes (applied by start_broker and restart_broker).
    std::uint32_t max_message_size_ = 0;  // 0: the broker's default (5 MiB)
    bool auto_create_topics_ = true;
    void configure(broker::broker_options& o) const {
        if (max_message_size_ != 0) {
            o.max_message_size = max_message_size_;
        }
        o.auto_create_topics = auto_create_topics_;
    }

    std::unique_ptr<broker::topic_backend> backend_;
    std::unique_ptr<broker::server> server_;
    std::uint16_t port_ = 0;
    std::optional<client> client_;
};

}  // namespace nereus::client::test
