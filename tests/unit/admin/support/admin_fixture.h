#pragma once

// gtest fixture: a real broker (ledger backend on a fresh temp directory, or the in-memory
// backend) on 127.0.0.1:0 and the admin REST API on 127.0.0.1:0 in front of it, both stopped
// in TearDown; an HTTP client and wire-level Pulsar clients to drive them.

#include "nereus/admin/admin_server.h"
#include "nereus/broker/ledger_backend.h"
#include "nereus/broker/memory_backend.h"
#include "nereus/broker/server.h"

#include <gtest/gtest.h>

#include "support/http_client.h"
#include "support/wire_client.h"
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>

namespace nereus::admin::test {

using namespace std::chrono_literals;
using broker::test::wire_client;

class AdminTest : public ::testing::Test {
protected:
    void SetUp() override { start(); }

    void start(bool ledger = true) {
        if (ledger) {
            char tmpl[] = "/tmp/nereus-admin-test-XXXXXX";
            ASSERT_NE(::mkdtemp(tmpl), nullptr);
            dir_ = tmpl;
            broker::ledger_backend_options lo;
            lo.data_dir = dir_;
            auto b = broker::ledger_backend::open(lo);
            ASSERT_TRUE(b.has_value()) << b.error().message();
            backend_ = std::move(*b);
        } else {
            backend_ = broker::make_memory_backend();
        }
        broker::broker_options bo;
        bo.bind_address = "127.0.0.1";
        bo.port = 0;
        broker_ = std::make_unique<broker::server>(bo, *backend_);
        ASSERT_TRUE(broker_->start().has_value());
        admin_options ao;
        ao.http.bind_address = "127.0.0.1";
        ao.http.port = 0;
        ao.http.max_body_bytes = 1 << 20;
        admin_ = std::make_unique<admin_server>(*broker_, *backend_, ao);
        ASSERT_TRUE(admin_->start().has_value());
        http_ = http_client::open(admin_->port());
        ASSERT_TRUE(http_);
    }

    void TearDown() override {
        http_.reset();
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
        if (!dir_.empty()) {
            std::error_code ec;
            std::filesystem::remove_all(dir_, ec);
        }
    }

    // Status of a request (0 on transport failure).
    unsigned status(std::string_view method, std::string_view target, std::string_view body = {}) {
        auto r = http_->request(method, target, body);
        return r ? r->status : 0;
    }

    std::unique_ptr<wire_client> wire() {
        auto c = wire_client::open(broker_->port());
        EXPECT_TRUE(c);
        if (c) {
            EXPECT_TRUE(c->handshake());
        }
        return c;
    }

    std::string dir_;
    std::unique_ptr<broker::topic_backend> backend_;
    std::unique_ptr<broker::server> broker_;
    std::unique_ptr<admin_server> admin_;
    std::unique_ptr<http_client> http_;
};

}  // namespace nereus::admin::test
