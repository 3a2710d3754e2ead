#pragma once

// gtest fixture: an in-process broker on 127.0.0.1:0 over the in-memory backend, stopped in
// TearDown, and helpers for the common wire conversations.

#include "nereus/broker/memory_backend.h"
#include "nereus/broker/server.h"

#include <gtest/gtest.h>

#include "support/wire_client.h"
#include <memory>

namespace nereus::broker::test {

class BrokerTest : public ::testing::Test {
protected:
    void start(broker_options o = {}, memory_backend_options mo = {}) {
        o.port = 0;
        o.bind_address = "127.0.0.1";
        backend_ = make_memory_backend(mo);
        server_ = std::make_unique<server>(o, *backend_);
        ASSERT_TRUE(server_->start().has_value());
    }
    void TearDown() override {
        if (server_) {
            server_->stop();
        }
    }

    std::unique_ptr<wire_client> connected_client() {
        auto c = wire_client::open(server_->port());
        EXPECT_TRUE(c);
        if (!c) {
            return nullptr;
        }
        EXPECT_TRUE(c->handshake());
        return c;
    }

    // PRODUCER → PRODUCER_SUCCESS; returns the producer name ("" on failure).
    static std::string create_producer(wire_client& c,
                                       std::string_view topic,
                                       std::uint64_t producer_id,
                                       std::uint64_t request_id,
                                       std::int32_t access_mode = 0) {
        proto::producer_args a;
        a.topic = topic;
        a.producer_id = producer_id;
        a.request_id = request_id;
        a.access_mode = access_mode;
        c.send([&](proto::frame_buffer& b) { return c.writer().producer(b, a).has_value(); });
        auto r = c.expect(proto::command_type::producer_success);
        return r ? r->cmd.producer_success().producer_name() : std::string();
    }

    // SEND × n with receipts; returns the number of receipts seen in order.
    static int produce(wire_client& c, std::uint64_t producer_id, int n, int first_seq = 0) {
        for (int i = 0; i < n; ++i) {
            c.send_message(producer_id, static_cast<std::uint64_t>(first_seq + i),
                           std::string("m").append(std::to_string(first_seq + i)));
        }
        int ok = 0;
        for (int i = 0; i < n; ++i) {
            auto r = c.expect(proto::command_type::send_receipt);
            if (!r ||
                r->cmd.send_receipt().sequence_id() != static_cast<std::uint64_t>(first_seq + i)) {
                return ok;
            }
            ++ok;
        }
        return ok;
    }

    static bool subscribe(wire_client& c,
                          std::string_view topic,
                          std::string_view sub,
                          std::int32_t type,
                          std::uint64_t consumer_id,
                          std::uint64_t request_id,
                          bool earliest = true,
                          std::string_view name = "c") {
        proto::subscribe_args a;
        a.topic = topic;
        a.subscription = sub;
        a.sub_type = type;
        a.consumer_id = consumer_id;
        a.request_id = request_id;
        a.consumer_name = name;
        a.initial_position = earliest ? 1 : 0;
        c.send([&](proto::frame_buffer& b) { return c.writer().subscribe(b, a).has_value(); });
        for (int i = 0; i < 10; ++i) {
            auto r = c.next();
            if (!r) {
                return false;
            }
            if (r->type == proto::command_type::success) {
                return r->cmd.success().request_id() == request_id;
            }
            if (r->type == proto::command_type::error) {
                return false;
            }
        }
        return false;
    }

    std::unique_ptr<topic_backend> backend_;
    std::unique_ptr<server> server_;
};

}  // namespace nereus::broker::test
