// Read-side EIO at the broker (issue 8): the stream log's segment reads fail while a consumer
// subscribes and asks for messages. Nothing may be delivered out of order, skipped or taken for
// the end of the topic: once the fault clears, every receipted message arrives, in order, with
// no new append or permit needed (the dispatcher retries a failed read by itself).
//
// The ledger backend runs on the real file system behind support/read_fault_fs.h (reads of
// ".log" files fail while armed); the broker on 127.0.0.1:0. Every wait is bounded.

#include "nereus/broker/ledger_backend.h"
#include "nereus/broker/server.h"

#include <gtest/gtest.h>

#include "support/read_fault_fs.h"
#include "support/wire_client.h"
#include <chrono>
#include <cstdlib>
#include <filesystem>

namespace nereus::broker::test {
namespace {

using namespace std::chrono_literals;
using proto::command_type;

TEST(BrokerReadFault, SegmentReadEioDeliversEverythingInOrderOnceItClears) {
    std::string pattern =
        (std::filesystem::temp_directory_path() / "nereus-broker-readfault-XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    const std::string dir = pattern;
    auto faults = std::make_shared<nereus::test::read_faults>();
    {
        ledger_backend_options lo;
        lo.data_dir = dir;
        lo.fs = std::make_shared<nereus::test::read_fault_fs>(faults);
        auto backend = ledger_backend::open(lo);
        ASSERT_TRUE(backend.has_value()) << backend.error().message();
        broker_options o;
        o.port = 0;
        server srv(o, **backend);
        ASSERT_TRUE(srv.start().has_value());
        const std::string topic = "persistent://public/default/readfault";
        {
            auto c = wire_client::open(srv.port());
            ASSERT_TRUE(c && c->handshake());
            proto::producer_args p;
            p.topic = topic;
            p.producer_id = 0;
            p.request_id = 2;
            c->send([&](proto::frame_buffer& b) { return c->writer().producer(b, p).has_value(); });
            ASSERT_TRUE(c->expect(command_type::producer_success));
            for (std::uint64_t i = 0; i < 20; ++i) {
                ASSERT_TRUE(c->send_message(0, i, std::string("m").append(std::to_string(i))));
            }
            for (std::uint64_t i = 0; i < 20; ++i) {
                ASSERT_TRUE(c->expect(command_type::send_receipt)) << i;
            }
            // Every segment read fails from here on; a consumer subscribes at the earliest entry
            // and asks for everything.
            faults->failing_reads = 1'000'000;
            proto::subscribe_args a;
            a.topic = topic;
            a.subscription = "sub";
            a.consumer_id = 0;
            a.request_id = 1;
            a.initial_position = 1;  // earliest
            c->send(
                [&](proto::frame_buffer& b) { return c->writer().subscribe(b, a).has_value(); });
            ASSERT_TRUE(c->expect(command_type::success));
            c->send(
                [&](proto::frame_buffer& b) { return c->writer().flow(b, 0, 100).has_value(); });
            // While it fails nothing is delivered (no partial, no out-of-order delivery).
            EXPECT_FALSE(c->expect(command_type::message, 1500ms));
            EXPECT_GT(faults->failed.load(), 0)
                << "no segment read was attempted: the test is void";
            // The fault clears: everything arrives, in order, without another FLOW or append.
            faults->failing_reads = 0;
            for (std::uint64_t i = 0; i < 20; ++i) {
                auto m = c->expect(command_type::message, 30s);
                ASSERT_TRUE(m) << "entry " << i << " never delivered after the fault cleared";
                EXPECT_EQ(m->cmd.message().message_id().entryid(), i);
                EXPECT_EQ(m->payload, std::string("m").append(std::to_string(i)));
            }
        }
        srv.stop();
        EXPECT_TRUE((*backend)->close().has_value());
    }
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
}

}  // namespace
}  // namespace nereus::broker::test
