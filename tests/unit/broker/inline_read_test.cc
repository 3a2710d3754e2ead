// Dispatch reads on the io thread (broker_options::inline_reads, subscription_cursor::
// try_read): with inline reads on, off, and on over a "cold cache" (every nowait read would
// block, so every read falls back to the blocking pool), a consumer gets every message exactly
// once and in order — a backlog, then a tail produced while it consumes, then, after a
// restart (segments closed: the first reads go to the pool), the unacked rest. The
// subscription's counters show which path served the reads.
//
// The ledger backend runs on the real file system (a wrapper can make nowait reads cold); the
// broker on 127.0.0.1:0. Every wait is bounded.

#include "nereus/base/forwarding_file_system.h"
#include "nereus/broker/ledger_backend.h"
#include "nereus/broker/server.h"
#include "nereus/broker/subscription.h"
#include "nereus/broker/topic.h"

#include <gtest/gtest.h>

#include "support/wire_client.h"
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>

namespace nereus::broker::test {
namespace {

using namespace std::chrono_literals;
using proto::command_type;

constexpr std::string_view topic = "persistent://public/default/inline";

// The real file system, except that read_at_nowait answers would-block while `cold` is set.
class cold_cache_fs final : public forwarding_file_system {
public:
    explicit cold_cache_fs(std::shared_ptr<std::atomic<bool>> cold)
        : forwarding_file_system(posix_file_system()), cold_(std::move(cold)) {}
    result<std::unique_ptr<file>> open(const std::string& path, open_mode mode) override {
        auto r = inner_->open(path, mode);
        if (!r) {
            return nereus::error(r.error());
        }
        return std::unique_ptr<file>(std::make_unique<cold_file>(std::move(*r), cold_));
    }

private:
    class cold_file final : public forwarding_file {
    public:
        cold_file(std::unique_ptr<file> f, std::shared_ptr<std::atomic<bool>> cold)
            : forwarding_file(std::move(f)), cold_(std::move(cold)) {}
        result<std::size_t> read_at_nowait(std::uint64_t o, std::span<std::byte> out) override {
            if (cold_->load()) {
                return nereus::error(std::errc::operation_would_block);
            }
            return inner_->read_at_nowait(o, out);
        }

    private:
        std::shared_ptr<std::atomic<bool>> cold_;
    };
    std::shared_ptr<std::atomic<bool>> cold_;
};

enum class mode { pool_only, inline_reads, inline_cold };

class InlineReadTest : public ::testing::TestWithParam<mode> {
protected:
    void SetUp() override {
        std::string pattern =
            (std::filesystem::temp_directory_path() / "nereus-inline-XXXXXX").string();
        ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
        dir_ = pattern;
        cold_->store(GetParam() == mode::inline_cold);
        open();
    }
    void TearDown() override {
        close();
        std::error_code ec;
        std::filesystem::remove_all(dir_, ec);
    }
    void open() {
        ledger_backend_options lo;
        lo.data_dir = dir_;
        lo.fs = std::make_shared<cold_cache_fs>(cold_);
        auto b = ledger_backend::open(lo);
        ASSERT_TRUE(b.has_value()) << b.error().message();
        backend_ = std::move(*b);
        broker_options o;
        o.port = 0;
        o.inline_reads = GetParam() != mode::pool_only;
        server_ = std::make_unique<server>(o, *backend_);
        ASSERT_TRUE(server_->start().has_value());
    }
    void close() {
        if (server_) {
            server_->stop();
            server_.reset();
        }
        if (backend_) {
            EXPECT_TRUE(backend_->close().has_value());
            backend_.reset();
        }
    }
    std::unique_ptr<wire_client> client() {
        auto c = wire_client::open(server_->port());
        EXPECT_TRUE(c && c->handshake());
        return c;
    }
    static void subscribe(wire_client& c) {
        proto::subscribe_args a;
        a.topic = topic;
        a.subscription = "sub";
        a.consumer_id = 0;
        a.request_id = 1;
        a.initial_position = 1;  // earliest
        c.send([&](proto::frame_buffer& b) { return c.writer().subscribe(b, a).has_value(); });
        ASSERT_TRUE(c.expect(command_type::success));
        c.send([&](proto::frame_buffer& b) { return c.writer().flow(b, 0, 5000).has_value(); });
    }
    static void create_producer(wire_client& c) {
        proto::producer_args p;
        p.topic = topic;
        p.producer_id = 0;
        p.request_id = 2;
        c.send([&](proto::frame_buffer& b) { return c.writer().producer(b, p).has_value(); });
        ASSERT_TRUE(c.expect(command_type::producer_success));
    }
    static std::string body(std::uint64_t i) { return "m-" + std::to_string(i); }
    // Expects entries [from, to) next, in order, with their payloads.
    void expect_messages(wire_client& c, std::uint64_t from, std::uint64_t to) {
        for (std::uint64_t i = from; i < to; ++i) {
            auto m = c.expect(command_type::message, 10s);
            ASSERT_TRUE(m) << "entry " << i << " not delivered";
            ledger_ = m->cmd.message().message_id().ledgerid();
            ASSERT_EQ(m->cmd.message().message_id().entryid(), i);
            ASSERT_EQ(m->payload, body(i));
        }
    }
    void ack(wire_client& c, std::uint64_t entry) const {
        proto::message_id id;
        id.ledger_id = ledger_;
        id.entry_id = entry;
        proto::ack_args a;
        a.consumer_id = 0;
        a.ids = std::span(&id, 1);
        a.request_id = 100 + entry;
        c.send([&](proto::frame_buffer& b) { return c.writer().ack(b, a).has_value(); });
        ASSERT_TRUE(c.expect(command_type::ack_response));
    }
    subscription_stats stats() {
        auto topics = server_->topics().open_topics();
        EXPECT_EQ(topics.size(), 1U);
        auto subs = topics.empty() ? decltype(topics[0]->open_subscriptions()){}
                                   : topics[0]->open_subscriptions();
        EXPECT_EQ(subs.size(), 1U);
        return subs.empty() ? subscription_stats{} : subs[0]->stats();
    }

    std::string dir_;
    std::uint64_t ledger_ = 0;
    std::shared_ptr<std::atomic<bool>> cold_ = std::make_shared<std::atomic<bool>>(false);
    std::unique_ptr<ledger_backend> backend_;
    std::unique_ptr<server> server_;
};

TEST_P(InlineReadTest, EveryMessageOnceAndInOrder) {
    {
        auto p = client();
        create_producer(*p);
        for (std::uint64_t i = 0; i < 60; ++i) {  // a backlog
            ASSERT_TRUE(p->send_message(0, i, body(i)));
        }
        for (std::uint64_t i = 0; i < 60; ++i) {
            ASSERT_TRUE(p->expect(command_type::send_receipt)) << i;
        }
        auto c = client();
        subscribe(*c);
        expect_messages(*c, 0, 60);
        // The tail, produced while the consumer waits: a read per few appends.
        for (std::uint64_t round = 0; round < 20; ++round) {
            const std::uint64_t first = 60 + round * 7;
            for (std::uint64_t i = first; i < first + 7; ++i) {
                ASSERT_TRUE(p->send_message(0, i, body(i)));
            }
            expect_messages(*c, first, first + 7);
        }
        for (std::uint64_t i = 60; i < 200; ++i) {
            ASSERT_TRUE(p->expect(command_type::send_receipt)) << i;
        }
        EXPECT_FALSE(c->expect(command_type::message, 200ms)) << "a message delivered twice";
        ack(*c, 0);
        ack(*c, 5);
        const auto st = stats();
        EXPECT_EQ(st.messages_dispatched, 200U);
        switch (GetParam()) {
            case mode::pool_only:
            case mode::inline_cold:
                EXPECT_EQ(st.reads_inline, 0U);
                EXPECT_GT(st.reads_pool, 0U);
                break;
            case mode::inline_reads:
                // The tail is in the page cache of files the store has open.
                EXPECT_GT(st.reads_inline, 10U);
                break;
        }
    }
    // A restart: segment files closed, their indexes unbuilt. The unacked messages come back in
    // order (inline, the reads that need a file opened or an index built go to the pool).
    close();
    open();
    auto c = client();
    subscribe(*c);
    for (std::uint64_t i = 1; i < 200; ++i) {
        if (i == 5) {
            continue;
        }
        auto m = c->expect(command_type::message, 10s);
        ASSERT_TRUE(m) << "entry " << i << " not redelivered";
        ASSERT_EQ(m->cmd.message().message_id().entryid(), i);
        ASSERT_EQ(m->payload, body(i));
    }
    EXPECT_FALSE(c->expect(command_type::message, 200ms));
    const auto st = stats();
    if (GetParam() != mode::inline_reads) {
        EXPECT_EQ(st.reads_inline, 0U);
        EXPECT_GT(st.reads_pool, 0U);
    }
}

INSTANTIATE_TEST_SUITE_P(Modes,
                         InlineReadTest,
                         ::testing::Values(mode::pool_only, mode::inline_reads, mode::inline_cold),
                         [](const ::testing::TestParamInfo<mode>& i) {
                             switch (i.param) {
                                 case mode::pool_only:
                                     return "PoolOnly";
                                 case mode::inline_reads:
                                     return "Inline";
                                 case mode::inline_cold:
                                     return "InlineColdCache";
                             }
                             return "Unknown";
                         });

}  // namespace
}  // namespace nereus::broker::test
