// Ack grouping (consumer.h): individual acks made while an ACK of the same topic partition
// awaits its answer go out together when it is answered; every completion still fires on the
// answer to the ACK that carried its id. The counts are deterministic: the acks are issued from
// a handler running on the client's strand, so every one of them is queued on the strand before
// the first ACK's answer can be handled there. Counted on the broker (subscription_stats::
// ack_requests: ACK commands received).

#include "nereus/broker/subscription.h"
#include "nereus/broker/topic.h"

#include "client_fixture.h"
#include <array>
#include <atomic>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <functional>
#include <set>
#include <thread>

namespace nereus::client::test {
namespace {

class AckGroupingTest : public ClientTest {
protected:
    // ACK commands the broker received for subscription `s` of `topic` (its short name).
    std::uint64_t ack_requests(const std::string& topic, const std::string& s) {
        for (const auto& t : server_->topics().open_topics()) {
            if (!t->full_name().ends_with("/" + topic)) {
                continue;
            }
            for (const auto& sub : t->open_subscriptions()) {
                if (sub->name() == s) {
                    return sub->stats().ack_requests;
                }
            }
        }
        ADD_FAILURE() << "no subscription " << s << " on " << topic;
        return 0;
    }

    // Receives `n` messages; the last one by a handler that (on the client's strand) acks all
    // of them at once, in the order of `order` (indexes into the received list; all if empty),
    // then runs `after`. Returns the outcomes of the acks, in issue order, once every
    // completion fired.
    std::vector<result<void>> receive_then_ack_on_strand(consumer& c,
                                                         std::size_t n,
                                                         std::vector<std::size_t> order = {},
                                                         std::function<void()> after = {}) {
        std::vector<message_id> ids;
        for (std::size_t i = 0; i + 1 < n; ++i) {
            auto m = receive(c);
            EXPECT_TRUE(m);
            if (!m) {
                return {};
            }
            ids.push_back(m->id());
        }
        if (order.empty()) {
            for (std::size_t i = 0; i < n; ++i) {
                order.push_back(i);
            }
        }
        struct shared {
            std::mutex mu;
            std::vector<std::optional<result<void>>> out;
            std::size_t done = 0;
            std::promise<void> all;
        };
        auto st = std::make_shared<shared>();
        st->out.resize(order.size());
        c.receive([c, st, ids, order, after](result<message> m) mutable {
            if (!m) {
                ADD_FAILURE() << m.error().message();
                st->all.set_value();
                return;
            }
            ids.push_back(m->id());
            for (std::size_t k = 0; k < order.size(); ++k) {
                c.acknowledge(ids.at(order[k]), [st, k, total = order.size()](result<void> r) {
                    const std::lock_guard lock(st->mu);
                    st->out[k] = std::move(r);
                    if (++st->done == total) {
                        st->all.set_value();
                    }
                });
            }
            if (after) {
                after();
            }
        });
        auto f = st->all.get_future();
        EXPECT_EQ(f.wait_for(20s), std::future_status::ready);
        std::vector<result<void>> out;
        const std::lock_guard lock(st->mu);
        for (auto& r : st->out) {
            out.push_back(r ? *r : nereus::error(errc::timeout));
        }
        return out;
    }

    // Receives `n` messages (each waited for) and returns their ids in order.
    std::vector<message_id> receive_ids(consumer& c, int n) {
        std::vector<message_id> ids;
        for (int i = 0; i < n; ++i) {
            auto m = receive(c);
            EXPECT_TRUE(m);
            if (!m) {
                break;
            }
            ids.push_back(m->id());
        }
        return ids;
    }

    // Per-ack completion counts, shared with the callbacks (which may outlive a failed test's
    // frame until the fixture closes the client).
    template <std::size_t N>
    struct fired_counts {
        std::array<std::atomic<int>, N> fired{};
        std::atomic<int> ok{0};
        std::atomic<int> total{0};
        std::promise<void> all;
        auto callback(std::shared_ptr<fired_counts> self, std::size_t i) {
            return [self = std::move(self), i](result<void> r) {
                self->fired[i].fetch_add(1);
                if (r) {
                    self->ok.fetch_add(1);
                }
                if (self->total.fetch_add(1) + 1 == static_cast<int>(N)) {
                    self->all.set_value();
                }
            };
        }
    };

    void produce(const std::string& topic, int n) {
        auto p = make_producer(prod(topic));
        for (int i = 0; i < n; ++i) {
            ASSERT_TRUE(send(p, std::to_string(i)));
        }
    }
};

// 1 + 199: the first ack goes at once, the other 199 wait for its answer and go as one ACK;
// with max_acks_per_request 1 every ack is its own ACK (the behaviour before grouping), and
// with 50 a full group goes at once (1, 50, 50, 50, then the last 49 on the answers).
TEST_F(AckGroupingTest, AcksMadeWhileOneIsInFlightGoAsOneAck) {
    for (std::uint32_t max : {1000U, 1U, 50U}) {
        const std::string topic = "group-" + std::to_string(max);
        produce(topic, 200);
        auto o = sub(topic, "s");
        o.max_acks_per_request = max;
        o.receiver_queue_size = 500;
        auto c = make_consumer(o);
        const auto before = ack_requests(topic, "s");
        auto out = receive_then_ack_on_strand(c, 200);
        ASSERT_EQ(out.size(), 200U);
        for (const auto& r : out) {
            EXPECT_TRUE(r) << r.error().message();
        }
        const std::uint64_t want = max == 1000 ? 2 : max == 1 ? 200 : 5;
        EXPECT_EQ(ack_requests(topic, "s") - before, want) << "max " << max;
        ASSERT_TRUE(wait(c.close(asio::use_future)));
        auto again = make_consumer(o);
        EXPECT_TRUE(nothing_within(again, 300ms)) << "max " << max;
    }
}

// Batch-index acks of one entry merge into one id (the unacked bits intersect), and ids of two
// entries interleaved go as several ids of one entry in one ACK: either way exactly the acked
// indexes are settled.
TEST_F(AckGroupingTest, BatchIndexAcksOfInterleavedEntriesSettleExactlyTheAckedIndexes) {
    auto o = sub("group-batch", "s");
    auto c = make_consumer(o);
    auto po = prod("group-batch", true);
    po.batch_max_messages = 10;
    po.batch_max_delay = std::chrono::milliseconds(1000);
    auto p = make_producer(po);
    for (int batch = 0; batch < 2; ++batch) {
        std::vector<std::future<result<message_id>>> fs;
        for (int i = 0; i < 10; ++i) {
            fs.push_back(
                p.send(outgoing_message::text(std::to_string(batch * 10 + i)), asio::use_future));
        }
        for (auto& f : fs) {
            auto id = wait(std::move(f));
            ASSERT_TRUE(id) << id.error().message();
            ASSERT_EQ(id->batch_size, 10);
        }
    }
    // Messages 0-9 are entry A, 10-19 entry B. Ack A0 (alone, in flight), then A2 A4 (merge),
    // B1, A6, B3 B5 (merge), A8, B7: the group holds A, B, A, B, A, B.
    const std::vector<std::size_t> order = {0, 2, 4, 11, 6, 13, 15, 8, 17};
    auto out = receive_then_ack_on_strand(c, 20, order);
    ASSERT_EQ(out.size(), order.size());
    for (const auto& r : out) {
        EXPECT_TRUE(r) << r.error().message();
    }
    EXPECT_EQ(ack_requests("group-batch", "s"), 2U);
    ASSERT_TRUE(wait(c.close(asio::use_future)));
    auto c2 = make_consumer(o);
    std::set<std::string> acked;
    for (auto i : order) {
        acked.insert(std::to_string(i));
    }
    std::set<std::string> back;
    for (int i = 0; i < 11; ++i) {
        auto m = receive(c2);
        ASSERT_TRUE(m);
        back.insert(std::string(m->payload_text()));
    }
    EXPECT_TRUE(nothing_within(c2, 300ms));
    for (int i = 0; i < 20; ++i) {
        EXPECT_NE(acked.count(std::to_string(i)), back.count(std::to_string(i))) << i;
    }
}

// The broker goes away after the acks were issued and before the first was sent: the waiting
// ones fail with the lost connection (none stays pending, none is reported ok), and all the
// messages come back after the consumer re-subscribed.
TEST_F(AckGroupingTest, WaitingAcksFailWhenTheConnectionGoes) {
    produce("group-drop", 20);
    auto o = sub("group-drop", "s");
    auto c = make_consumer(o);
    auto out = receive_then_ack_on_strand(c, 20, {}, [this] { stop_broker(); });
    ASSERT_EQ(out.size(), 20U);
    for (const auto& r : out) {
        EXPECT_FALSE(r);
    }
    restart_broker();
    std::set<std::string> back;
    for (int i = 0; i < 20; ++i) {
        auto m = receive(c);
        ASSERT_TRUE(m);
        back.insert(std::string(m->payload_text()));
    }
    EXPECT_EQ(back.size(), 20U);
}

// close() issued after the acks (so it runs after them on the strand) sends the waiting group
// before CLOSE_CONSUMER: every ack completes ok and nothing comes back.
TEST_F(AckGroupingTest, CloseSendsTheWaitingAcksFirst) {
    produce("group-close", 50);
    auto o = sub("group-close", "s");
    auto c = make_consumer(o);
    std::vector<message_id> ids;
    for (int i = 0; i < 50; ++i) {
        auto m = receive(c);
        ASSERT_TRUE(m);
        ids.push_back(m->id());
    }
    auto outcomes = std::make_shared<std::vector<std::future<result<void>>>>();
    std::promise<void> issued;
    // Run on the strand: the acks and the close are all queued before the first answer.
    c.acknowledge(ids[0], [c, ids, outcomes, &issued](result<void> first) mutable {
        EXPECT_TRUE(first) << first.error().message();
        for (std::size_t i = 1; i < ids.size(); ++i) {
            outcomes->push_back(c.acknowledge(ids[i], asio::use_future));
        }
        outcomes->push_back(c.close(asio::use_future));
        issued.set_value();
    });
    ASSERT_EQ(issued.get_future().wait_for(20s), std::future_status::ready);
    for (auto& f : *outcomes) {
        auto r = wait(std::move(f));
        EXPECT_TRUE(r) << r.error().message();
    }
    auto again = make_consumer(o);
    EXPECT_TRUE(nothing_within(again, 300ms));
}

// A confirmed ack is never lost, through grouping and a broker restart in the middle: no
// message whose ack completed ok comes back, and every message is accounted for (acked ok, or
// its ack failed — its outcome is unknown: the ACK may have been applied before the connection
// went — or it comes back).
TEST_F(AckGroupingTest, NoAckReportedOkIsLostAcrossABrokerRestart) {
    constexpr int n = 400;
    produce("group-restart", n);
    auto o = sub("group-restart", "s");
    auto c = make_consumer(o);
    std::vector<std::string> texts;
    std::vector<std::future<result<void>>> acks;
    for (int i = 0; i < n; ++i) {
        auto m = receive(c);
        ASSERT_TRUE(m);
        if (i == n / 2) {
            restart_broker();
        }
        texts.emplace_back(m->payload_text());
        acks.push_back(c.acknowledge(m->id(), asio::use_future));
    }
    std::set<std::string> ok;
    std::set<std::string> failed;
    for (std::size_t i = 0; i < acks.size(); ++i) {
        auto r = wait(std::move(acks[i]));
        (r ? ok : failed).insert(texts[i]);
    }
    EXPECT_FALSE(ok.empty());
    ASSERT_TRUE(wait(c.close(asio::use_future)));
    auto c2 = make_consumer(o);
    std::set<std::string> back;
    for (int i = 0; i < n; ++i) {
        auto f = c2.receive(asio::use_future);
        if (f.wait_for(1s) != std::future_status::ready) {
            break;  // drained (the pending receive is failed by the client's close)
        }
        auto m = f.get();
        ASSERT_TRUE(m) << m.error().message();
        back.insert(std::string(m->payload_text()));
        ASSERT_TRUE(wait(c2.acknowledge(m->id(), asio::use_future)));
    }
    for (const auto& t : back) {
        EXPECT_EQ(ok.count(t), 0U) << "message " << t << " was acked (ok) and came back";
    }
    for (int i = 0; i < n; ++i) {
        const auto t = std::to_string(i);
        EXPECT_TRUE(ok.count(t) + failed.count(t) + back.count(t) > 0)
            << "message " << t << " was lost";
    }
}

// acknowledge() hands acks to the strand through the consumer's inbox (one post per burst).
// Four plain threads ack 100 messages each at once: every completion fires exactly once (counted
// per ack; the client's close() joins its threads, so nothing can fire after the count is
// read), every ack is confirmed, the inbox still groups (fewer ACK commands than acks is not
// promised under this race, at most one per ack is), and nothing comes back.
TEST_F(AckGroupingTest, AcksFromManyThreadsCompleteExactlyOnce) {
    constexpr int threads = 4;
    constexpr int per_thread = 100;
    constexpr int n = threads * per_thread;
    produce("inbox-threads", n);
    auto o = sub("inbox-threads", "s");
    o.receiver_queue_size = 1000;
    auto c = make_consumer(o);
    const auto ids = receive_ids(c, n);
    ASSERT_EQ(ids.size(), static_cast<std::size_t>(n));
    auto st = std::make_shared<fired_counts<n>>();
    auto all = st->all.get_future();
    std::vector<std::thread> ts;
    for (int t = 0; t < threads; ++t) {
        ts.emplace_back([&, t] {
            for (int i = t; i < n; i += threads) {  // interleaved across the threads
                const auto k = static_cast<std::size_t>(i);
                c.acknowledge(ids[k], st->callback(st, k));
            }
        });
    }
    for (auto& t : ts) {
        t.join();
    }
    ASSERT_EQ(all.wait_for(20s), std::future_status::ready);
    EXPECT_EQ(st->ok.load(), n);
    EXPECT_LE(ack_requests("inbox-threads", "s"), static_cast<std::uint64_t>(n));
    ASSERT_TRUE(wait(c.close(asio::use_future)));
    auto again = make_consumer(o);
    EXPECT_TRUE(nothing_within(again, 300ms));
    cli().close();  // joins the client's threads: no completion can fire after this
    for (int i = 0; i < n; ++i) {
        EXPECT_EQ(st->fired[static_cast<std::size_t>(i)].load(), 1) << "ack " << i;
    }
}

// From a plain thread (not the strand), acks followed at once by close(): close() runs after
// the drain that carries them, so each ack is sent and confirmed (none fails with
// errc::closed), in 3 rounds, and nothing comes back.
TEST_F(AckGroupingTest, CloseFromAPlainThreadRunsAfterTheAcksIssuedBeforeIt) {
    for (int round = 0; round < 3; ++round) {
        const std::string topic = "inbox-close-" + std::to_string(round);
        produce(topic, 100);
        auto o = sub(topic, "s");
        auto c = make_consumer(o);
        const auto ids = receive_ids(c, 100);
        ASSERT_EQ(ids.size(), 100U);
        std::vector<std::future<result<void>>> acks;
        for (const auto& id : ids) {
            acks.push_back(c.acknowledge(id, asio::use_future));
        }
        auto closed = c.close(asio::use_future);
        for (auto& f : acks) {
            auto r = wait(std::move(f));
            EXPECT_TRUE(r) << "round " << round << ": " << r.error().message();
        }
        ASSERT_TRUE(wait(std::move(closed)));
        auto again = make_consumer(o);
        EXPECT_TRUE(nothing_within(again, 300ms)) << "round " << round;
    }
}

// A coroutine on the application's own io_context (no work guard of its own) receives and acks
// with use_awaitable: each completion resumes it on its own executor, and that context's run()
// returns only once the coroutine finished (the client tracks work on a foreign executor while
// the operation is pending; were it not tracked, run() would return with the coroutine
// suspended and `finished` false).
TEST_F(AckGroupingTest, AwaitedAcksResumeOnTheCoroutinesOwnContext) {
    constexpr int n = 50;
    produce("inbox-coro", n);
    auto c = make_consumer(sub("inbox-coro", "s"));
    asio::io_context app;
    std::atomic<int> acked{0};
    std::atomic<int> foreign{0};
    std::atomic<bool> finished{false};
    asio::co_spawn(
        app,
        [&]() -> asio::awaitable<void> {
            for (int i = 0; i < n; ++i) {
                auto m = co_await c.receive(asio::use_awaitable);
                if (!app.get_executor().running_in_this_thread()) {
                    foreign.fetch_add(1);
                }
                if (!m) {
                    co_return;
                }
                auto r = co_await c.acknowledge(m->id(), asio::use_awaitable);
                if (!app.get_executor().running_in_this_thread()) {
                    foreign.fetch_add(1);
                }
                if (r) {
                    acked.fetch_add(1);
                }
            }
            finished = true;
        },
        asio::detached);
    auto runner = std::async(std::launch::async, [&] { app.run(); });
    ASSERT_EQ(runner.wait_for(20s), std::future_status::ready);
    EXPECT_TRUE(finished.load());
    EXPECT_EQ(acked.load(), n);
    EXPECT_EQ(foreign.load(), 0);
}

// Acks issued while the broker is down each complete exactly once, with an error (never ok),
// and every message comes back once the broker is up again.
TEST_F(AckGroupingTest, AcksWhileDisconnectedFailExactlyOnceEach) {
    constexpr int n = 60;
    produce("inbox-down", n);
    auto o = sub("inbox-down", "s");
    auto c = make_consumer(o);
    const auto ids = receive_ids(c, n);
    ASSERT_EQ(ids.size(), static_cast<std::size_t>(n));
    stop_broker();
    auto st = std::make_shared<fired_counts<n>>();
    auto all = st->all.get_future();
    for (std::size_t i = 0; i < ids.size(); ++i) {
        c.acknowledge(ids[i], st->callback(st, i));
    }
    ASSERT_EQ(all.wait_for(20s), std::future_status::ready);
    EXPECT_EQ(st->ok.load(), 0);
    restart_broker();
    std::set<std::string> back;
    for (int i = 0; i < n; ++i) {
        auto m = receive(c);
        ASSERT_TRUE(m);
        back.insert(std::string(m->payload_text()));
    }
    EXPECT_EQ(back.size(), static_cast<std::size_t>(n));
    cli().close();  // joins the client's threads: no completion can fire after this
    for (int i = 0; i < n; ++i) {
        EXPECT_EQ(st->fired[static_cast<std::size_t>(i)].load(), 1) << "ack " << i;
    }
}

}  // namespace
}  // namespace nereus::client::test
