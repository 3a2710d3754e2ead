#pragma once

// gtest fixture for the delivery API: a real broker (ledger backend on a fresh temp directory,
// which has compaction) on 127.0.0.1:0 with the admin REST API on 127.0.0.1:0, a nereus::client
// producer for the keyed source, and helpers to open event_subscriptions instances ("processes":
// each has its own client connection, admin connection and holder id; they share nothing but
// the broker). Every wait is bounded.

#include "nereus/admin/admin_server.h"
#include "nereus/broker/ledger_backend.h"
#include "nereus/broker/server.h"
#include "nereus/client/client.h"
#include "nereus/events/admin_http.h"
#include "nereus/events/event_subscriptions.h"
#include "nereus/events/host.h"
#include "nereus/events/sqlite_projection.h"

#include <gtest/gtest.h>

#include <boost/asio/use_future.hpp>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <string>

namespace nereus::events::test {

namespace asio = boost::asio;
using namespace std::chrono_literals;

inline deadline_t in(std::chrono::milliseconds d) {
    return std::chrono::steady_clock::now() + d;
}

// A projection store that is not durable (memory only): RESUME must refuse it.
class memory_projection final : public projection_repository {
public:
    bool durable() const override { return false; }
    result<void> replace_atomically(std::span<const cursor>, std::span<const row> image) override {
        rows_.assign(image.begin(), image.end());
        return {};
    }
    result<apply_outcome> apply_once(const cursor&,
                                     const operation&,
                                     std::span<const std::byte>) override {
        return apply_outcome::applied;
    }
    result<std::optional<cursor>> applied(std::uint32_t) const override { return std::nullopt; }
    result<std::vector<row>> rows() const override { return rows_; }

private:
    std::vector<row> rows_;
};

class EventsTest : public ::testing::Test {
protected:
    void SetUp() override {
        char tmpl[] = "/tmp/nereus-events-test-XXXXXX";
        ASSERT_NE(::mkdtemp(tmpl), nullptr);
        dir_ = tmpl;
        broker::ledger_backend_options lo;
        lo.data_dir = dir_ + "/broker";
        auto b = broker::ledger_backend::open(lo);
        ASSERT_TRUE(b.has_value()) << b.error().message();
        backend_ = std::move(*b);
        broker::broker_options bo;
        bo.bind_address = "127.0.0.1";
        bo.port = 0;
        broker_ = std::make_unique<broker::server>(bo, *backend_);
        ASSERT_TRUE(broker_->start().has_value());
        admin::admin_options ao;
        ao.http.bind_address = "127.0.0.1";
        ao.http.port = 0;
        ao.http.max_body_bytes = 4 << 20;
        admin_ = std::make_unique<admin::admin_server>(*broker_, *backend_, ao);
        ASSERT_TRUE(admin_->start().has_value());
        client_ = std::make_unique<client::client>(client::client_options{
            .service_url = "pulsar://127.0.0.1:" + std::to_string(broker_->port())});
        client::producer_options po;
        po.topic = "persistent://public/default/orders";
        po.batching = false;
        auto p = client_->create_producer(po, asio::use_future).get();
        ASSERT_TRUE(p.has_value()) << p.error().message();
        producer_ = *p;
    }

    void TearDown() override {
        if (client_) {
            client_->close();
        }
        if (admin_) {
            admin_->stop();
        }
        if (broker_) {
            broker_->stop();
        }
        broker_.reset();
        if (auto* lb = dynamic_cast<broker::ledger_backend*>(backend_.get())) {
            (void)lb->close();
        }
        backend_.reset();
        std::error_code ec;
        std::filesystem::remove_all(dir_, ec);
    }

    // Sends key=value (empty value: a tombstone) in the admitted format (or `format`);
    // returns the message's entry id and records the source's expected final state.
    std::int64_t put(const std::string& key,
                     const std::string& value,
                     const std::string& format = "order/v1") {
        auto m = client::outgoing_message::text(value).with_key(key);
        if (!format.empty()) {
            m.properties.emplace_back(admitted_format::format_property, format);
        }
        auto f = producer_.send(std::move(m), asio::use_future);
        if (f.wait_for(30s) != std::future_status::ready) {
            ADD_FAILURE() << "send timed out";
            return -1;
        }
        auto id = f.get();
        EXPECT_TRUE(id.has_value()) << id.error().message();
        if (!id) {
            return -1;
        }
        if (value.empty()) {
            expected_.erase(key);
        } else {
            expected_[key] = value;
        }
        return id->entry;
    }

    policy make_policy(restart_policy r = restart_policy::resume,
                       expiry_policy e = expiry_policy::stop) const {
        policy p;
        p.source_topic = "orders";
        p.format = admitted_format{"order", 1};
        p.lease = 1500ms;
        p.restart = r;
        p.expiry = e;
        return p;
    }

    // A new "process": its own client, admin connection and holder id.
    std::unique_ptr<event_subscriptions> open(const std::string& holder) {
        host_options o;
        o.service_url = "pulsar://127.0.0.1:" + std::to_string(broker_->port());
        o.admin_url = "http://127.0.0.1:" + std::to_string(admin_->port());
        o.holder_id = holder;
        o.operation_timeout = 20s;
        auto s = event_subscriptions::open(o);
        EXPECT_TRUE(s.has_value());
        return s ? std::move(*s) : nullptr;
    }

    // Opens, declares `pol` as "order-events" and registers "orders-projection".
    std::unique_ptr<event_subscriptions> process(const std::string& holder,
                                                 const policy& pol,
                                                 const projection_repository* store,
                                                 result<void>* reg_result = nullptr) {
        auto s = open(holder);
        if (!s) {
            return nullptr;
        }
        EXPECT_TRUE(s->declare_policy("order-events", pol).has_value());
        auto r = s->register_subscription({"orders-projection", "order-events"}, store, in(60s));
        if (reg_result != nullptr) {
            *reg_result = r;
        } else {
            EXPECT_TRUE(r.has_value()) << r.error().message();
        }
        return s;
    }

    std::unique_ptr<sqlite_projection> open_store(const std::string& name) {
        auto s = sqlite_projection::open(dir_ + "/" + name + ".db");
        EXPECT_TRUE(s.has_value());
        return s ? std::move(*s) : nullptr;
    }

    // The projection's rows as a map.
    static std::map<std::string, std::string> rows_of(const projection_repository& r) {
        std::map<std::string, std::string> out;
        auto rows = r.rows();
        EXPECT_TRUE(rows.has_value());
        if (rows) {
            for (auto& x : *rows) {
                out[x.key] = x.value;
            }
        }
        return out;
    }

    // Admin request status (0 on transport failure), e.g. an operator's skip/delete.
    unsigned admin_request(std::string_view method,
                           const std::string& target,
                           std::string_view body = {}) {
        auto h = detail::admin_http::open("http://127.0.0.1:" + std::to_string(admin_->port()));
        if (!h) {
            return 0;
        }
        auto r = (*h)->request(method, target, body, 20s);
        return r ? r->status : 0;
    }

    std::string dir_;
    std::unique_ptr<broker::topic_backend> backend_;
    std::unique_ptr<broker::server> broker_;
    std::unique_ptr<admin::admin_server> admin_;
    std::unique_ptr<client::client> client_;
    client::producer producer_;
    std::map<std::string, std::string> expected_;
};

}  // namespace nereus::events::test
