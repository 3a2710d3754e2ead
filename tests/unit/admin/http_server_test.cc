// The HTTP layer on its own: target parsing, the router's 404/405, and the server's limits
// (413 for an oversized body, 400 for a malformed request, keep-alive, graceful stop).

#include "nereus/admin/http_server.h"

#include "nereus/admin/router.h"

#include <gtest/gtest.h>

#include "support/http_client.h"
#include <arpa/inet.h>
#include <atomic>
#include <chrono>
#include <netinet/in.h>
#include <poll.h>
#include <string>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>

namespace nereus::admin::test {
namespace {

TEST(HttpTarget, DecodesPathAndQuery) {
    http_request r;
    ASSERT_TRUE(parse_target("/admin/v2/persistent/a%2Fb/ns/t%20x?force=true&x=a+b", r));
    ASSERT_EQ(r.path.size(), 6U);
    EXPECT_EQ(r.path[3], "a/b");
    EXPECT_EQ(r.path[5], "t x");
    EXPECT_TRUE(r.flag("force"));
    EXPECT_EQ(r.query["x"], "a b");
    EXPECT_FALSE(parse_target("/bad%zz", r));
    EXPECT_FALSE(parse_target("/bad%2", r));
    EXPECT_FALSE(parse_target("no-slash", r));
}

TEST(Router, MatchesCapturesAndAnswers404And405) {
    router rt;
    rt.add("GET", "/a/{x}/c", [](const http_request&, const path_params& p) {
        return text_response(200, p.find("x")->second, "text/plain");
    });
    rt.add("GET", "/a/lit", [](const http_request&, const path_params&) {
        return text_response(200, "lit", "text/plain");
    });
    http_request r;
    r.method = "GET";
    ASSERT_TRUE(parse_target("/a/q/c", r));
    auto res = rt.route(r);
    EXPECT_EQ(res.status, 200U);
    EXPECT_EQ(res.body, "q");
    r.method = "PUT";
    EXPECT_EQ(rt.route(r).status, 405U);
    r.method = "GET";
    ASSERT_TRUE(parse_target("/a/q/d", r));
    EXPECT_EQ(rt.route(r).status, 404U);
    ASSERT_TRUE(parse_target("/a/lit", r));
    EXPECT_EQ(rt.route(r).body, "lit");
}

class HttpServerTest : public ::testing::Test {
protected:
    void SetUp() override {
        http_server_options o;
        o.bind_address = "127.0.0.1";
        o.port = 0;
        o.max_body_bytes = 1024;
        server_ = std::make_unique<http_server>(o, [this](const http_request& r) {
            ++calls_;
            return text_response(200, r.method + " " + r.target + " " + r.body, "text/plain");
        });
        ASSERT_TRUE(server_->start().has_value());
    }
    void TearDown() override { server_->stop(); }

    std::unique_ptr<http_server> server_;
    std::atomic<int> calls_{0};
};

TEST_F(HttpServerTest, KeepAliveServesSeveralRequestsOnOneConnection) {
    auto c = http_client::open(server_->port());
    ASSERT_TRUE(c);
    for (int i = 0; i < 3; ++i) {
        auto r = c->request("PUT", "/x?i=" + std::to_string(i), "body");
        ASSERT_TRUE(r);
        EXPECT_EQ(r->status, 200U);
        EXPECT_EQ(r->body, "PUT /x?i=" + std::to_string(i) + " body");
        EXPECT_TRUE(r->keep_alive);
    }
    EXPECT_EQ(calls_.load(), 3);
}

TEST_F(HttpServerTest, OversizedBodyIs413AndNeverReachesTheHandler) {
    auto c = http_client::open(server_->port());
    ASSERT_TRUE(c);
    // Only the header: the Content-Length alone is over the limit.
    auto r = c->raw("PUT /x HTTP/1.1\r\nHost: a\r\nContent-Length: 4096\r\n\r\n");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 413U);
    EXPECT_EQ(r->reason(), "Request body too large");
    EXPECT_EQ(calls_.load(), 0);
    // A body just under the limit is fine.
    auto c2 = http_client::open(server_->port());
    auto ok = c2->request("PUT", "/x", std::string(1000, 'a'));
    ASSERT_TRUE(ok);
    EXPECT_EQ(ok->status, 200U);
}

TEST_F(HttpServerTest, ExpectContinueIsAnsweredBeforeTheBody) {
    auto c = http_client::open(server_->port());
    ASSERT_TRUE(c);
    auto cont =
        c->raw("PUT /x HTTP/1.1\r\nHost: a\r\nContent-Length: 4\r\nExpect: 100-continue\r\n\r\n");
    ASSERT_TRUE(cont);
    EXPECT_EQ(cont->status, 100U);
    auto r = c->raw("body");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200U);
    EXPECT_EQ(r->body, "PUT /x body");
}

TEST_F(HttpServerTest, MalformedRequestIs400AndClosed) {
    auto c = http_client::open(server_->port());
    ASSERT_TRUE(c);
    auto r = c->raw("THIS IS NOT HTTP\r\n\r\n");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 400U);
    EXPECT_FALSE(r->keep_alive);
    EXPECT_EQ(calls_.load(), 0);
}

TEST_F(HttpServerTest, StopClosesIdleKeepAliveConnections) {
    auto c = http_client::open(server_->port());
    ASSERT_TRUE(c);
    ASSERT_TRUE(c->get("/x"));
    server_->stop();
    EXPECT_TRUE(c->wait_closed());
}

TEST_F(HttpServerTest, OversizedOrEndlessHeaderIs431AndNeverReachesTheHandler) {
    // One header line over the 16 KiB limit, complete.
    auto c = http_client::open(server_->port());
    ASSERT_TRUE(c);
    auto r = c->raw("GET /x HTTP/1.1\r\nHost: a\r\nX-Pad: " + std::string(20000, 'p') + "\r\n\r\n");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 431U);
    EXPECT_FALSE(r->keep_alive);
    // An endless header (no blank line ever comes): cut at the limit, not read forever.
    auto c2 = http_client::open(server_->port());
    ASSERT_TRUE(c2);
    std::string endless = "GET /x HTTP/1.1\r\nHost: a\r\n";
    for (int i = 0; i < 2000; ++i) {
        endless += "X-" + std::to_string(i) + ": v\r\n";
    }
    auto r2 = c2->raw(endless);
    ASSERT_TRUE(r2);
    EXPECT_EQ(r2->status, 431U);
    EXPECT_EQ(calls_.load(), 0);
}

// A slow client (slowloris): a request that trickles in is closed once read_timeout has
// passed since its first byte, however steadily bytes keep coming; the handler never runs and
// other clients are served meanwhile.
TEST(HttpServerSlowClient, TricklingRequestIsClosedAfterTheReadTimeout) {
    std::atomic<int> calls{0};
    http_server_options o;
    o.bind_address = "127.0.0.1";
    o.port = 0;
    o.read_timeout = std::chrono::milliseconds(500);
    http_server server(o, [&](const http_request&) {
        ++calls;
        return text_response(200, "ok", "text/plain");
    });
    ASSERT_TRUE(server.start().has_value());
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    ASSERT_GE(fd, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(server.port());
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    const std::string req = "GET /x HTTP/1.1\r\nHost: a\r\nX-Slow: " + std::string(200, 's');
    bool closed = false;
    const auto t0 = std::chrono::steady_clock::now();
    for (std::size_t i = 0; i < req.size() && !closed; ++i) {
        if (::send(fd, &req[i], 1, MSG_NOSIGNAL) != 1) {
            closed = true;
            break;
        }
        // Another client is served while this one trickles.
        if (i == 2) {
            auto other = http_client::open(server.port());
            ASSERT_TRUE(other);
            auto r = other->get("/y");
            ASSERT_TRUE(r);
            EXPECT_EQ(r->status, 200U);
        }
        pollfd p{fd, POLLIN, 0};
        if (::poll(&p, 1, 50) > 0) {
            char b[256];
            if (::recv(fd, b, sizeof b, 0) <= 0) {
                closed = true;
            }
        }
    }
    const auto took = std::chrono::steady_clock::now() - t0;
    ::close(fd);
    server.stop();
    EXPECT_TRUE(closed) << "the trickling request was never cut off";
    EXPECT_GE(took, std::chrono::milliseconds(500)) << "closed before the read timeout";
    EXPECT_EQ(calls.load(), 1) << "only the other client's request reached the handler";
}

}  // namespace
}  // namespace nereus::admin::test
