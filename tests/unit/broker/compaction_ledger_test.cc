// Compaction over the real ledger backend: a process SIGKILLed between the snapshot object put
// and the record CAS leaves the previous view (no half snapshot visible), the view survives a
// restart (loaded from the record), and the next run publishes. And after a retention trim into
// the view, read_compacted subscribers at earliest get the whole view, also below the log's
// first readable entry (Pulsar's first read from earliest, doc/compaction.md), and a log
// trimmed to the horizon answers GET_LAST_MESSAGE_ID with the view's last entry.

#include "nereus/broker/ledger_backend.h"
#include "nereus/broker/server.h"
#include "nereus/broker/topic.h"
#include "nereus/broker/topic_compaction.h"
#include "nereus/broker/topic_name.h"
#include "nereus/proto/pulsar_api.h"

#include <gtest/gtest.h>

#include "support/child_process.h"
#include "support/compaction_support.h"
#include "support/wire_client.h"
#include <cstdlib>
#include <filesystem>
#include <future>

namespace nereus::broker::test {
namespace {

constexpr const char* topic_name_text = "persistent://public/default/compacted-crash";

std::size_t snapshot_files(const std::string& dir) {
    std::size_t n = 0;
    for (const auto& e : std::filesystem::directory_iterator(dir + "/objects/objects")) {
        if (e.path().filename().string().rfind("compaction+", 0) == 0) {
            ++n;
        }
    }
    return n;
}

TEST(CompactionLedger, SigkillBetweenSnapshotPutAndCasLeavesThePreviousView) {
    std::string pattern =
        (std::filesystem::temp_directory_path() / "nereus-compaction-XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    const std::string dir = pattern;

    const auto run =
        nereus::test::run_and_kill({NEREUS_COMPACTION_CRASH_CHILD, dir, topic_name_text},
                                   std::chrono::milliseconds(100), "PUT");
    ASSERT_TRUE(nereus::test::killed_by_sigkill(run.wait_status))
        << "child ended on its own: " << run.output;
    ASSERT_NE(run.output.find("FIRST 10\n"), std::string::npos) << run.output;
    ASSERT_NE(run.output.find("PUT\n"), std::string::npos) << run.output;

    {
        ledger_backend_options o;
        o.data_dir = dir;
        auto b = ledger_backend::open(o);
        ASSERT_TRUE(b.has_value()) << b.error().message();
        auto s = (*b)->open_topic(topic_name_text, false);
        ASSERT_TRUE(s.has_value());
        EXPECT_EQ((*s)->details().end, 15u);
        // Both snapshots exist (the second unreferenced); the record names the first.
        EXPECT_EQ(snapshot_files(dir), 2u);
        auto c = std::make_shared<topic_compaction>(topic_name_text, *s, **b, nullptr);
        auto v = c->view();
        ASSERT_TRUE(v.has_value());
        ASSERT_NE(*v, nullptr);
        EXPECT_EQ((*v)->end, 10u);
        std::map<std::string, std::string> got;
        for (const auto& e : (*v)->entries) {
            for (const auto& msg : messages_of(*e.data)) {
                got[*msg.key] = msg.value;
            }
        }
        const std::map<std::string, std::string> want{
            {"k0", "a8"}, {"k1", "a9"}, {"k2", "a6"}, {"k3", "a7"}};
        EXPECT_EQ(got, want);

        // The next run covers everything and replaces the record.
        ASSERT_TRUE(c->run().has_value());
        EXPECT_EQ(c->info().end, 15u);
        EXPECT_EQ(c->info().keys, 4u);
        ASSERT_TRUE((*b)->close().has_value());
    }
    {
        // After a clean restart the view is the published one.
        ledger_backend_options o;
        o.data_dir = dir;
        auto b = ledger_backend::open(o);
        ASSERT_TRUE(b.has_value());
        auto s = (*b)->open_topic(topic_name_text, false);
        ASSERT_TRUE(s.has_value());
        auto c = std::make_shared<topic_compaction>(topic_name_text, *s, **b, nullptr);
        const auto info = c->info();
        EXPECT_TRUE(info.has_view);
        EXPECT_EQ(info.end, 15u);
        std::map<std::string, std::string> got;
        auto v = c->view();
        ASSERT_TRUE(v && *v);
        for (const auto& e : (*v)->entries) {
            for (const auto& msg : messages_of(*e.data)) {
                got[*msg.key] = msg.value;
            }
        }
        const std::map<std::string, std::string> want{
            {"k0", "b4"}, {"k1", "b1"}, {"k2", "b2"}, {"k3", "b3"}};
        EXPECT_EQ(got, want);
        ASSERT_TRUE((*b)->close().has_value());
    }
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
}

// ---- read_compacted at earliest after a retention trim (issue 6) ----

class CompactedTrimTest : public ::testing::Test {
protected:
    static constexpr std::string_view topic_full = "persistent://public/default/compacted-trim";

    void SetUp() override {
        std::string pattern =
            (std::filesystem::temp_directory_path() / "nereus-compview-XXXXXX").string();
        ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
        dir_ = pattern;
        ledger_backend_options lo;
        lo.data_dir = dir_;
        auto b = ledger_backend::open(lo);
        ASSERT_TRUE(b.has_value()) << b.error().message();
        backend_ = std::move(*b);
        broker_options o;
        o.port = 0;
        o.bind_address = "127.0.0.1";
        o.dispatch_batch = 3;  // several reads per view: the first read continues in the view
        server_ = std::make_unique<server>(o, *backend_);
        ASSERT_TRUE(server_->start().has_value());
        auto n = parse_topic_name(std::string(topic_full));
        ASSERT_TRUE(n.has_value());
        auto t = server_->topics().open(*n, true);
        ASSERT_TRUE(t.has_value());
        topic_ = *t;
        ASSERT_NE(topic_->compaction(), nullptr);
    }
    void TearDown() override {
        topic_.reset();
        if (server_) {
            server_->stop();
            server_.reset();
        }
        if (backend_) {
            EXPECT_TRUE(backend_->close().has_value());
            backend_.reset();
        }
        std::error_code ec;
        std::filesystem::remove_all(dir_, ec);
    }

    std::uint64_t append(const std::shared_ptr<const std::vector<std::byte>>& e) {
        std::promise<result<position>> p;
        topic_->append(*e, append_info{}, [&](result<position> r) { p.set_value(r); });
        auto r = p.get_future().get();
        EXPECT_TRUE(r.has_value());
        return r ? r->entry_id : ~std::uint64_t{0};
    }

    // SUBSCRIBE (Exclusive, read_compacted, initial position Earliest) and FLOW.
    std::unique_ptr<wire_client> subscribe(std::string_view sub,
                                           bool durable,
                                           std::optional<proto::message_id> start = {}) {
        auto c = wire_client::open(server_->port());
        if (!c || !c->handshake()) {
            ADD_FAILURE() << "no connection";
            return nullptr;
        }
        proto::subscribe_args a;
        a.topic = topic_full;
        a.subscription = sub;
        a.consumer_id = 1;
        a.request_id = 1;
        a.consumer_name = "c";
        a.durable = durable;
        a.read_compacted = true;
        a.initial_position = 1;
        a.start_message_id = start;
        c->send([&](proto::frame_buffer& b) { return c->writer().subscribe(b, a).has_value(); });
        auto r = c->expect(proto::command_type::success, 30s);
        if (!r) {
            ADD_FAILURE() << "SUBSCRIBE " << sub << " failed";
            return nullptr;
        }
        c->send([&](proto::frame_buffer& b) { return c->writer().flow(b, 1, 100000).has_value(); });
        return c;
    }

    // (entry id, "key=value") of every MESSAGE until none came for a while.
    static std::vector<std::pair<std::uint64_t, std::string>> drain(wire_client& c) {
        std::vector<std::pair<std::uint64_t, std::string>> out;
        while (auto r = c.next(1500ms)) {
            if (r->type != proto::command_type::message) {
                continue;
            }
            for (const auto& msg : messages_of(r->stored)) {
                out.emplace_back(r->cmd.message().message_id().entryid(),
                                 msg.key.value_or("") + "=" + msg.value);
            }
        }
        return out;
    }

    std::string dir_;
    std::unique_ptr<ledger_backend> backend_;
    std::unique_ptr<server> server_;
    std::shared_ptr<topic> topic_;
};

TEST_F(CompactedTrimTest, ReadersAndNewSubscriptionsAtEarliestGetTheViewBelowTheTrimPoint) {
    // Entries 0..9: k0..k9 = a; 10..14: k0..k4 = b. The view (horizon 15) keeps k5..k9 at 5..9
    // and k0..k4 at 10..14. Then 15: k0 = c, 16: k9 = c, after the horizon.
    for (int i = 0; i < 10; ++i) {
        append(single(kv{"k" + std::to_string(i), "a"}));
    }
    for (int i = 0; i < 5; ++i) {
        append(single(kv{"k" + std::to_string(i), "b"}));
    }
    ASSERT_TRUE(topic_->compaction()->run().has_value());
    ASSERT_EQ(topic_->compaction()->info().end, 15u);
    append(single(kv{"k0", "c"}));
    append(single(kv{"k9", "c"}));

    // A durable subscription acks everything; retention trims the log up to the compaction
    // horizon (the compaction cursor holds the rest).
    auto acker = topic_->subscribe("acker", {subscription_start::kind::earliest}, true);
    ASSERT_TRUE(acker.has_value());
    {
        std::promise<result<ack_outcome>> p;
        auto& c = (*acker)->cursor();
        c.ack_cumulative(c.current_fence(), 16,
                         [&p](result<ack_outcome> r) { p.set_value(std::move(r)); });
        auto r = p.get_future().get();
        ASSERT_TRUE(r.has_value());
    }
    ASSERT_TRUE(topic_->store().trim().has_value());
    const auto first = topic_->store().details().first_entry;
    ASSERT_GE(first, 10u) << "the trim did not reach into the view";

    std::vector<std::pair<std::uint64_t, std::string>> whole;
    for (int i = 5; i < 10; ++i) {
        whole.emplace_back(i, "k" + std::to_string(i) + "=a");
    }
    for (int i = 0; i < 5; ++i) {
        whole.emplace_back(10 + i, "k" + std::to_string(i) + "=b");
    }
    whole.emplace_back(15, "k0=c");
    whole.emplace_back(16, "k9=c");

    // A reader at earliest (no start id; then MessageId.earliest), and a durable subscription
    // this SUBSCRIBE creates at earliest: the whole view, then the log after the horizon.
    auto reader = subscribe("reader", false);
    ASSERT_TRUE(reader);
    EXPECT_EQ(drain(*reader), whole);
    proto::message_id earliest;
    earliest.ledger_id = proto::no_position;
    earliest.entry_id = proto::no_position;
    auto reader2 = subscribe("reader2", false, earliest);
    ASSERT_TRUE(reader2);
    EXPECT_EQ(drain(*reader2), whole);
    auto fresh = subscribe("fresh", true);
    ASSERT_TRUE(fresh);
    EXPECT_EQ(drain(*fresh), whole);

    // A reader resuming at a trimmed entry (a reconnect after reading part of the view)
    // continues in the view from that entry (inclusive; the client drops the start message).
    proto::message_id at7;
    at7.ledger_id = topic_->store().ledger_id();
    at7.entry_id = 7;
    auto resumed = subscribe("resumed", false, at7);
    ASSERT_TRUE(resumed);
    const std::vector<std::pair<std::uint64_t, std::string>> from7(whole.begin() + 2, whole.end());
    EXPECT_EQ(drain(*resumed), from7);

    // A reader that seeks to earliest reads the whole view again on its reconnect (the seek
    // parks its subscription with the reset cursor; no new subscription is created).
    reader->send([&](proto::frame_buffer& b) {
        return reader->writer().seek(b, 1, 7, earliest).has_value();
    });
    ASSERT_TRUE(reader->expect(proto::command_type::close_consumer, 30s));
    ASSERT_TRUE(reader->expect(proto::command_type::success, 30s));
    auto reconnected = subscribe("reader", false, earliest);
    ASSERT_TRUE(reconnected);
    EXPECT_EQ(drain(*reconnected), whole);

    // An existing subscription is not re-read from the view's start: "acker" acked everything.
    acker->reset();
    auto again = subscribe("acker", true);
    ASSERT_TRUE(again);
    EXPECT_TRUE(drain(*again).empty());
}

TEST_F(CompactedTrimTest, ALogTrimmedToTheHorizonStillHasTheViewAvailable) {
    // Entries 0..5: k0..k2 twice; the view (horizon 6) keeps 3..5. Everything acked and trimmed:
    // the log has no readable entry left, the view still has three.
    for (int round = 0; round < 2; ++round) {
        for (int i = 0; i < 3; ++i) {
            append(single(kv{"k" + std::to_string(i), "v" + std::to_string(round)}));
        }
    }
    ASSERT_TRUE(topic_->compaction()->run().has_value());
    auto acker = topic_->subscribe("acker", {subscription_start::kind::earliest}, true);
    ASSERT_TRUE(acker.has_value());
    {
        std::promise<result<ack_outcome>> p;
        auto& c = (*acker)->cursor();
        c.ack_cumulative(c.current_fence(), 5,
                         [&p](result<ack_outcome> r) { p.set_value(std::move(r)); });
        ASSERT_TRUE(p.get_future().get().has_value());
    }
    ASSERT_TRUE(topic_->store().trim().has_value());
    ASSERT_EQ(topic_->store().details().first_entry, 6u);
    ASSERT_FALSE(topic_->store().last_entry().has_value());

    // GET_LAST_MESSAGE_ID (what has_message_available asks): the view's last entry, not "none".
    auto reader = subscribe("reader", false);
    ASSERT_TRUE(reader);
    reader->send([&](proto::frame_buffer& b) {
        return reader->writer().get_last_message_id(b, 1, 2).has_value();
    });
    auto r = reader->expect(proto::command_type::get_last_message_id_response, 30s);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->cmd.getlastmessageidresponse().last_message_id().ledgerid(),
              topic_->store().ledger_id());
    EXPECT_EQ(r->cmd.getlastmessageidresponse().last_message_id().entryid(), 5u);
    const std::vector<std::pair<std::uint64_t, std::string>> want{
        {3, "k0=v1"}, {4, "k1=v1"}, {5, "k2=v1"}};
    EXPECT_EQ(drain(*reader), want);
}

}  // namespace
}  // namespace nereus::broker::test
