// The broker over the real ledger backend (RocksDB + stream log + object store in a temp dir):
// receipts, consume + ack, and a restart that finds the durable subscription and redelivers
// exactly the unacked messages.

#include "nereus/broker/ledger_backend.h"

#include "nereus/broker/server.h"
#include "nereus/broker/subscription.h"
#include "nereus/broker/topic.h"

#include <gtest/gtest.h>

#include "support/wire_client.h"
#include <array>
#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <future>
#include <set>
#include <thread>

namespace nereus::broker::test {
namespace {

using proto::command_type;

constexpr std::string_view topic = "persistent://public/default/durable";

class LedgerBrokerTest : public ::testing::Test {
protected:
    void SetUp() override {
        std::string pattern =
            (std::filesystem::temp_directory_path() / "nereus-broker-XXXXXX").string();
        ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
        dir_ = pattern;
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
        auto b = ledger_backend::open(lo);
        ASSERT_TRUE(b.has_value()) << b.error().message();
        backend_ = std::move(*b);
        broker_options o;
        o.port = 0;
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
    static bool subscribe(wire_client& c,
                          std::uint64_t id,
                          std::uint64_t req,
                          std::int32_t sub_type = 0) {
        proto::subscribe_args a;
        a.topic = topic;
        a.subscription = "sub";
        a.sub_type = sub_type;
        a.consumer_id = id;
        a.request_id = req;
        a.initial_position = 1;
        c.send([&](proto::frame_buffer& b) { return c.writer().subscribe(b, a).has_value(); });
        auto r = c.expect(command_type::success);
        return r && r->cmd.success().request_id() == req;
    }

    std::string dir_;
    std::unique_ptr<ledger_backend> backend_;
    std::unique_ptr<server> server_;
};

TEST_F(LedgerBrokerTest, ReceiptsConsumeAckAndRestart) {
    {
        auto c = client();
        ASSERT_TRUE(subscribe(*c, 0, 1));  // durable before SUCCESS
        proto::producer_args p;
        p.topic = topic;
        p.producer_id = 0;
        p.request_id = 2;
        c->send([&](proto::frame_buffer& b) { return c->writer().producer(b, p).has_value(); });
        ASSERT_TRUE(c->expect(command_type::producer_success));
        for (std::uint64_t i = 0; i < 10; ++i) {
            ASSERT_TRUE(c->send_message(0, i, "msg-" + std::to_string(i)));
        }
        for (std::uint64_t i = 0; i < 10; ++i) {
            auto r = c->expect(command_type::send_receipt);
            ASSERT_TRUE(r);
            EXPECT_EQ(r->cmd.send_receipt().sequence_id(), i);
            EXPECT_EQ(r->cmd.send_receipt().message_id().entryid(), i);
        }
        c->send([&](proto::frame_buffer& b) { return c->writer().flow(b, 0, 100).has_value(); });
        std::uint64_t ledger = 0;
        for (std::uint64_t i = 0; i < 10; ++i) {
            auto m = c->expect(command_type::message);
            ASSERT_TRUE(m) << i;
            ledger = m->cmd.message().message_id().ledgerid();
            EXPECT_EQ(m->cmd.message().message_id().entryid(), i);
            EXPECT_EQ(m->payload, "msg-" + std::to_string(i));
        }
        for (std::uint64_t e : {0, 1, 2, 3, 4, 7}) {
            proto::message_id id;
            id.ledger_id = ledger;
            id.entry_id = e;
            proto::ack_args a;
            a.consumer_id = 0;
            a.ids = std::span(&id, 1);
            a.request_id = 100 + e;
            c->send([&](proto::frame_buffer& b) { return c->writer().ack(b, a).has_value(); });
            auto r = c->expect(command_type::ack_response);
            ASSERT_TRUE(r);
            EXPECT_EQ(r->cmd.ackresponse().request_id(), 100 + e);
            EXPECT_FALSE(r->cmd.ackresponse().has_error());
        }
    }
    close();
    open();
    auto c = client();
    ASSERT_TRUE(subscribe(*c, 0, 1));
    c->send([&](proto::frame_buffer& b) { return c->writer().flow(b, 0, 100).has_value(); });
    std::vector<std::uint64_t> got;
    for (int i = 0; i < 4; ++i) {
        auto m = c->expect(command_type::message);
        ASSERT_TRUE(m);
        got.push_back(m->cmd.message().message_id().entryid());
    }
    EXPECT_EQ(got, (std::vector<std::uint64_t>{5, 6, 8, 9}));
    EXPECT_FALSE(c->expect(command_type::message, 200ms));
}

// Receipts over the real store: its committer completes a whole group in one wake_batch scope,
// where each producer's run of finished appends is staged and handed over at once
// (connection.h, done_staging), and the completions move by copying their bytes
// (base/completion.h). Two connections with two producers each (two on one topic, one on each
// of two more), SENDs interleaved so that one group holds runs of all four: every producer gets
// every receipt, once, in its SEND order, and each topic's entry ids are 0, 1, 2, ... across
// its producers.
TEST_F(LedgerBrokerTest, ReceiptsOfInterleavedProducersAcrossConnectionsStayInOrder) {
    const std::array<std::string, 3> topics{std::string(topic),
                                            "persistent://public/default/durable-b",
                                            "persistent://public/default/durable-c"};
    struct prod {
        std::size_t conn;
        std::uint64_t id;
        std::size_t topic;
    };
    const std::array<prod, 4> prods{prod{0, 0, 0}, prod{0, 1, 1}, prod{1, 0, 0}, prod{1, 1, 2}};
    std::array<std::unique_ptr<wire_client>, 2> conns{client(), client()};
    std::uint64_t req = 1;
    for (const auto& p : prods) {
        proto::producer_args a;
        a.topic = topics[p.topic];
        a.producer_id = p.id;
        a.request_id = req++;
        auto& c = *conns[p.conn];
        c.send([&](proto::frame_buffer& b) { return c.writer().producer(b, a).has_value(); });
        ASSERT_TRUE(c.expect(command_type::producer_success));
    }
    constexpr std::uint64_t n = 1500;
    // Sent in rounds of 100 per producer (and read back in between), so the store's groups
    // hold runs of several producers without the sockets' buffers filling up.
    std::array<std::uint64_t, 4> next{};
    std::array<std::set<std::uint64_t>, 3> entries;
    for (std::uint64_t base = 0; base < n; base += 100) {
        for (std::uint64_t i = base; i < base + 100; ++i) {
            for (std::size_t k = 0; k < prods.size(); ++k) {
                const auto& p = prods[k];
                ASSERT_TRUE(conns[p.conn]->send_message(
                    p.id, 10'000 * k + i, std::string("m").append(std::to_string(i))));
            }
        }
        for (std::size_t c = 0; c < conns.size(); ++c) {
            for (int j = 0; j < 200; ++j) {  // 100 per producer of this connection
                auto r = conns[c]->expect(command_type::send_receipt);
                ASSERT_TRUE(r) << "connection " << c << " receipt " << j;
                const auto& s = r->cmd.send_receipt();
                ASSERT_LT(s.producer_id(), 2U);
                const std::size_t k = c * 2 + s.producer_id();
                EXPECT_EQ(s.sequence_id(), 10'000 * k + next[k]) << "producer " << k;
                ++next[k];
                EXPECT_TRUE(entries[prods[k].topic].insert(s.message_id().entryid()).second)
                    << "entry id twice on topic " << prods[k].topic;
            }
        }
    }
    for (std::size_t k = 0; k < prods.size(); ++k) {
        EXPECT_EQ(next[k], n) << "producer " << k;
    }
    EXPECT_EQ(entries[0].size(), 2 * n);
    EXPECT_EQ(*entries[0].rbegin(), 2 * n - 1);
    EXPECT_EQ(entries[1].size(), n);
    EXPECT_EQ(*entries[1].rbegin(), n - 1);
    EXPECT_EQ(entries[2].size(), n);
    EXPECT_EQ(*entries[2].rbegin(), n - 1);
    for (auto& c : conns) {
        EXPECT_FALSE(c->expect(command_type::send_receipt, 50ms));  // nothing twice
    }
}

// Redelivery counts come from the cursor: a nack counts, the count rides the next ack's CAS
// (and the close flush), and the first delivery after a restart carries it (Pulsar would say 0).
// One ACK command naming many delivered entries is one cursor CAS (its ids merged into one
// range), answered after it is durable; acking them again changes nothing and sends no CAS.
// Before, every id was its own cursor request (two or more CASes per command).
TEST_F(LedgerBrokerTest, AckCommandOfManyIdsIsOneCursorCas) {
    constexpr std::uint64_t n = 300;
    std::vector<proto::message_id> ids;
    {
        auto c = client();
        ASSERT_TRUE(subscribe(*c, 0, 1));
        proto::producer_args p;
        p.topic = topic;
        p.producer_id = 0;
        p.request_id = 2;
        c->send([&](proto::frame_buffer& b) { return c->writer().producer(b, p).has_value(); });
        ASSERT_TRUE(c->expect(command_type::producer_success));
        for (std::uint64_t i = 0; i < n; ++i) {
            ASSERT_TRUE(c->send_message(0, i, "msg-" + std::to_string(i)));
        }
        for (std::uint64_t i = 0; i < n; ++i) {
            ASSERT_TRUE(c->expect(command_type::send_receipt)) << i;
        }
        c->send([&](proto::frame_buffer& b) { return c->writer().flow(b, 0, 1000).has_value(); });
        for (std::uint64_t i = 0; i < n; ++i) {
            auto m = c->expect(command_type::message);
            ASSERT_TRUE(m) << i;
            ASSERT_EQ(m->cmd.message().message_id().entryid(), i);
            proto::message_id id;
            id.ledger_id = m->cmd.message().message_id().ledgerid();
            id.entry_id = i;
            ids.push_back(id);
        }
        auto topics = server_->topics().open_topics();
        ASSERT_EQ(topics.size(), 1U);
        auto subs = topics[0]->open_subscriptions();
        ASSERT_EQ(subs.size(), 1U);
        auto& sub = *subs[0];
        const auto cas0 = sub.cursor().details().cas_sent;
        auto ack_all = [&](std::uint64_t req) {
            proto::ack_args a;
            a.consumer_id = 0;
            a.ids = ids;
            a.request_id = req;
            c->send([&](proto::frame_buffer& b) { return c->writer().ack(b, a).has_value(); });
            auto r = c->expect(command_type::ack_response);
            ASSERT_TRUE(r);
            EXPECT_EQ(r->cmd.ackresponse().request_id(), req);
            EXPECT_FALSE(r->cmd.ackresponse().has_error());
        };
        ack_all(10);
        EXPECT_EQ(sub.cursor().details().cas_sent - cas0, 1U);
        EXPECT_EQ(sub.stats().acks_applied, n);
        EXPECT_EQ(sub.backlog(), 0U);
        EXPECT_EQ(sub.cursor().details().mark_delete, n);
        ack_all(11);
        EXPECT_EQ(sub.cursor().details().cas_sent - cas0, 1U);
        EXPECT_EQ(sub.stats().acks_applied, n);
        EXPECT_EQ(sub.stats().acks_no_effect, n);
    }
    close();
    open();
    auto c = client();
    ASSERT_TRUE(subscribe(*c, 0, 1));
    c->send([&](proto::frame_buffer& b) { return c->writer().flow(b, 0, 100).has_value(); });
    // Every entry was acked durably before its ACK_RESPONSE: nothing comes back.
    EXPECT_FALSE(c->expect(command_type::message, std::chrono::milliseconds(300)));
}

TEST_F(LedgerBrokerTest, RedeliveryCountSurvivesRestart) {
    std::uint64_t ledger = 0;
    {
        auto c = client();
        ASSERT_TRUE(subscribe(*c, 0, 1, 1));  // Shared
        proto::producer_args p;
        p.topic = topic;
        p.producer_id = 0;
        p.request_id = 2;
        c->send([&](proto::frame_buffer& b) { return c->writer().producer(b, p).has_value(); });
        ASSERT_TRUE(c->expect(command_type::producer_success));
        for (std::uint64_t i = 0; i < 3; ++i) {
            ASSERT_TRUE(c->send_message(0, i, std::string("m").append(std::to_string(i))));
            ASSERT_TRUE(c->expect(command_type::send_receipt));
        }
        c->send([&](proto::frame_buffer& b) { return c->writer().flow(b, 0, 100).has_value(); });
        for (std::uint64_t i = 0; i < 3; ++i) {
            auto m = c->expect(command_type::message);
            ASSERT_TRUE(m) << i;
            ledger = m->cmd.message().message_id().ledgerid();
            EXPECT_EQ(m->cmd.message().redelivery_count(), 0U);
        }
        // Nack everything: each comes back with count 1.
        c->send([&](proto::frame_buffer& b) {
            return c->writer().redeliver_unacknowledged(b, 0, {}).has_value();
        });
        for (std::uint64_t i = 0; i < 3; ++i) {
            auto m = c->expect(command_type::message);
            ASSERT_TRUE(m) << i;
            EXPECT_EQ(m->cmd.message().message_id().entryid(), i);
            EXPECT_EQ(m->cmd.message().redelivery_count(), 1U);
        }
        // The ack's CAS writes the recorded counts.
        proto::message_id id;
        id.ledger_id = ledger;
        id.entry_id = 2;
        proto::ack_args a;
        a.consumer_id = 0;
        a.ids = std::span(&id, 1);
        a.request_id = 10;
        c->send([&](proto::frame_buffer& b) { return c->writer().ack(b, a).has_value(); });
        auto r = c->expect(command_type::ack_response);
        ASSERT_TRUE(r);
        EXPECT_FALSE(r->cmd.ackresponse().has_error());
    }
    // Stopping the server detaches the consumer: entries 0 and 1 are returned (count 2) and
    // the ledger's close flushes the counts.
    close();
    open();
    auto c = client();
    ASSERT_TRUE(subscribe(*c, 0, 1, 1));
    c->send([&](proto::frame_buffer& b) { return c->writer().flow(b, 0, 100).has_value(); });
    for (std::uint64_t i = 0; i < 2; ++i) {
        auto m = c->expect(command_type::message);
        ASSERT_TRUE(m) << i;
        EXPECT_EQ(m->cmd.message().message_id().entryid(), i);
        EXPECT_EQ(m->cmd.message().redelivery_count(), 2U);
    }
    EXPECT_FALSE(c->expect(command_type::message, 200ms));
}

// Readers over the ledger's non-durable cursors: a start id inside a batch (ack_set skips the
// earlier indexes) and a seek by publish time that the reconnect continues from.
TEST_F(LedgerBrokerTest, ReaderBatchStartAndSeekByTime) {
    auto c = client();
    proto::producer_args p;
    p.topic = topic;
    p.producer_id = 0;
    p.request_id = 1;
    c->send([&](proto::frame_buffer& b) { return c->writer().producer(b, p).has_value(); });
    ASSERT_TRUE(c->expect(command_type::producer_success));
    ASSERT_TRUE(c->send_message(0, 0, "batch-bytes", /*batch=*/4));
    ASSERT_TRUE(c->expect(command_type::send_receipt));
    for (std::uint64_t i = 1; i < 4; ++i) {
        ASSERT_TRUE(c->send_message(0, i, "single"));
        ASSERT_TRUE(c->expect(command_type::send_receipt));
    }
    auto read_from = [&](std::uint64_t consumer, std::uint64_t req, proto::message_id start) {
        proto::subscribe_args a;
        a.topic = topic;
        a.subscription = "reader";
        a.consumer_id = consumer;
        a.request_id = req;
        a.durable = false;
        a.start_message_id = start;
        c->send([&](proto::frame_buffer& b) { return c->writer().subscribe(b, a).has_value(); });
        return c->expect(command_type::success).has_value();
    };
    proto::message_id start;
    start.ledger_id = 1;  // the first topic of a fresh data dir
    start.entry_id = 0;
    start.batch_index = 1;
    ASSERT_TRUE(read_from(0, 2, start));
    c->send([&](proto::frame_buffer& b) { return c->writer().flow(b, 0, 100).has_value(); });
    auto first = c->expect(command_type::message);
    ASSERT_TRUE(first);
    EXPECT_EQ(first->cmd.message().message_id().entryid(), 0U);
    ASSERT_EQ(first->cmd.message().ack_set_size(), 1);
    EXPECT_EQ(first->cmd.message().ack_set(0), 0b1110);
    for (std::uint64_t e = 1; e < 4; ++e) {
        auto m = c->expect(command_type::message);
        ASSERT_TRUE(m);
        EXPECT_EQ(m->cmd.message().message_id().entryid(), e);
    }
    // wire_client: publish_time = 1'700'000'000'000 + sequence id.
    c->send([&](proto::frame_buffer& b) {
        return c->writer().seek_by_time(b, 0, 3, 1'700'000'000'002ULL).has_value();
    });
    ASSERT_TRUE(c->expect(command_type::close_consumer));
    ASSERT_TRUE(c->expect(command_type::success));
    proto::message_id earliest;
    earliest.ledger_id = proto::no_position;
    earliest.entry_id = proto::no_position;
    ASSERT_TRUE(read_from(1, 4, earliest));
    c->send([&](proto::frame_buffer& b) { return c->writer().flow(b, 1, 100).has_value(); });
    std::vector<std::uint64_t> got;
    for (int i = 0; i < 2; ++i) {
        auto m = c->expect(command_type::message);
        ASSERT_TRUE(m);
        got.push_back(m->cmd.message().message_id().entryid());
    }
    EXPECT_EQ(got, (std::vector<std::uint64_t>{2, 3}));
    EXPECT_FALSE(c->expect(command_type::message, 200ms));
}

// An ack stamped before a seek (an older ackStateEpoch) changes nothing and ends as `stale`
// (answered success on the wire, counted apart); the entry stays unacked and the same entry
// acked at the new epoch applies.
TEST_F(LedgerBrokerTest, AckFromBeforeASeekIsStaleAndChangesNothing) {
    auto t = backend_->open_topic(std::string(topic), true);
    ASSERT_TRUE(t.has_value()) << t.error().message();
    const std::byte payload[] = {std::byte{1}};
    for (int i = 0; i < 3; ++i) {
        std::promise<result<position>> p;
        (*t)->append(payload, append_info{}, [&p](result<position> r) { p.set_value(r); });
        ASSERT_TRUE(p.get_future().get().has_value());
    }
    subscription_start start;
    start.where = subscription_start::kind::earliest;
    auto c = (*t)->open_subscription("s", start, true);
    ASSERT_TRUE(c.has_value()) << c.error().message();
    const ack_fence before = (*c)->current_fence();
    auto after = (*c)->seek(seek_target{});
    ASSERT_TRUE(after.has_value()) << after.error().message();

    auto ack = [&](ack_fence f) {
        std::promise<result<ack_outcome>> p;
        (*c)->ack(f, 0, [&p](result<ack_outcome> r) { p.set_value(r); });
        return p.get_future().get();
    };
    const auto late = ack(before);
    ASSERT_TRUE(late.has_value()) << late.error().message();
    EXPECT_EQ(*late, ack_outcome::stale);
    EXPECT_EQ((*c)->backlog(), 3u) << "a stale ack changed the cursor";
    const auto fresh = ack(*after);
    ASSERT_TRUE(fresh.has_value()) << fresh.error().message();
    EXPECT_EQ(*fresh, ack_outcome::applied);
}

// Opens of different topics run concurrently in the backend (their synced metadata writes share
// group commits). Many topics created at once from several threads each get their own ledger
// id (the id counter's CAS races are retried), concurrent opens of one name get one topic, and
// every topic is there again after a restart.
TEST_F(LedgerBrokerTest, ConcurrentOpensOfManyTopics) {
    server_->stop();
    server_.reset();
    constexpr int threads = 8;
    constexpr int per_thread = 25;
    auto name = [](int t, int i) {
        return "persistent://public/default/many-" + std::to_string(t) + "-" + std::to_string(i);
    };
    const std::string common = "persistent://public/default/many-common";
    std::vector<std::vector<std::shared_ptr<topic_store>>> opened(threads);
    std::vector<std::shared_ptr<topic_store>> commons(threads);
    std::vector<std::string> errors(threads);
    {
        std::vector<std::thread> ts;
        for (int t = 0; t < threads; ++t) {
            ts.emplace_back([&, t] {
                for (int i = 0; i < per_thread; ++i) {
                    if (i == per_thread / 2) {
                        auto c = backend_->open_topic(common, true);
                        if (!c) {
                            errors[t] = common + ": " + c.error().message();
                            return;
                        }
                        commons[t] = *c;
                    }
                    auto r = backend_->open_topic(name(t, i), true);
                    if (!r) {
                        errors[t] = name(t, i) + ": " + r.error().message();
                        return;
                    }
                    opened[t].push_back(*r);
                }
            });
        }
        for (auto& th : ts) {
            th.join();
        }
    }
    std::set<std::uint64_t> ids;
    for (int t = 0; t < threads; ++t) {
        ASSERT_EQ(errors[t], "");
        ASSERT_EQ(opened[t].size(), static_cast<std::size_t>(per_thread));
        for (int i = 0; i < per_thread; ++i) {
            EXPECT_EQ(opened[t][i]->name(), name(t, i));
            ids.insert(opened[t][i]->ledger_id());
        }
        EXPECT_EQ(commons[t], commons[0]);  // one open of the shared name
    }
    ids.insert(commons[0]->ledger_id());
    EXPECT_EQ(ids.size(), static_cast<std::size_t>(threads * per_thread + 1));
    opened.clear();
    commons.clear();

    close();
    open();
    auto names = backend_->topic_names();
    const std::set<std::string> listed(names.begin(), names.end());
    EXPECT_TRUE(listed.contains(common));
    for (int t = 0; t < threads; ++t) {
        for (int i = 0; i < per_thread; ++i) {
            EXPECT_TRUE(listed.contains(name(t, i))) << name(t, i);
            auto r = backend_->open_topic(name(t, i), false);
            ASSERT_TRUE(r.has_value()) << name(t, i) << ": " << r.error().message();
        }
    }
}

// close() while opens are in progress: each open either finished before (and is closed with
// the backend) or is refused; none fails otherwise, and close() succeeds.
TEST_F(LedgerBrokerTest, CloseDuringConcurrentOpens) {
    server_->stop();
    server_.reset();
    std::atomic<int> ok{0};
    std::atomic<int> refused{0};
    std::atomic<int> other{0};
    std::vector<std::thread> ts;
    for (int t = 0; t < 4; ++t) {
        ts.emplace_back([&, t] {
            for (int i = 0; i < 50; ++i) {
                auto r = backend_->open_topic("persistent://public/default/closing-" +
                                                  std::to_string(t) + "-" + std::to_string(i),
                                              true);
                if (r) {
                    ++ok;
                } else if (r.error() == make_error_code(proto::error_kind::unavailable)) {
                    ++refused;
                } else {
                    ++other;
                }
            }
        });
    }
    while (ok.load() == 0 && other.load() == 0) {
        std::this_thread::yield();
    }
    EXPECT_TRUE(backend_->close().has_value());
    for (auto& th : ts) {
        th.join();
    }
    EXPECT_EQ(other.load(), 0);
    EXPECT_GT(ok.load(), 0);
    EXPECT_EQ(ok.load() + refused.load(), 200);
    backend_.reset();
}

}  // namespace
}  // namespace nereus::broker::test
