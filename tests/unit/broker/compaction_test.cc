// Topic compaction (doc/compaction.md): the compactor (latest value per key, tombstones,
// batches split per key, keyless messages), the snapshot object format, and, in an in-process
// broker over the memory backend, read_compacted subscriptions: the compacted view up to the
// horizon then the log after it, the barrier under writes that commit during compaction, a
// failure between the snapshot put and the record CAS, and acked history.

#include "nereus/broker/compacted_view.h"
#include "nereus/broker/compactor.h"
#include "nereus/broker/topic.h"
#include "nereus/broker/topic_compaction.h"
#include "nereus/proto/pulsar_api.h"
#include "nereus/proto/server_error.h"

#include "support/broker_fixture.h"
#include "support/compaction_support.h"
#include <atomic>
#include <chrono>
#include <future>
#include <iostream>
#include <map>
#include <set>
#include <thread>

namespace nereus::broker::test {
namespace {

// "<prefix><n>" (without operator+(const char*, std::string&&): GCC bug 105329's -Wrestrict).
template <class N>
std::string cat(const char* prefix, N n) {
    std::string s(prefix);
    s.append(std::to_string(n));
    return s;
}

using proto::command_type;

std::vector<compaction_input> inputs(
    const std::vector<std::shared_ptr<const std::vector<std::byte>>>& entries,
    std::uint64_t first = 0) {
    std::vector<compaction_input> out;
    for (std::size_t i = 0; i < entries.size(); ++i) {
        out.push_back(compaction_input{first + i, 1000, 1, entries[i]});
    }
    return out;
}

// (entry id, messages) of a view.
std::map<std::uint64_t, std::vector<kv>> contents(const compacted_view& v) {
    std::map<std::uint64_t, std::vector<kv>> out;
    for (const auto& e : v.entries) {
        out[e.entry_id] = messages_of(*e.data);
    }
    return out;
}

kv m(std::string k, std::string v) {
    return kv{std::move(k), std::move(v)};
}

TEST(Compactor, KeepsTheLatestValuePerKey) {
    auto r = compact({},
                     inputs({single(m("a", "1")), single(m("b", "1")), single(m("a", "2")),
                             single(m("c", "1")), single(m("b", "2"))}),
                     7, 5);
    EXPECT_EQ(r.view.end, 5u);
    EXPECT_EQ(r.view.ledger_id, 7u);
    EXPECT_EQ(r.view.keys, 3u);
    const std::map<std::uint64_t, std::vector<kv>> want{
        {2, {m("a", "2")}}, {3, {m("c", "1")}}, {4, {m("b", "2")}}};
    EXPECT_EQ(contents(r.view), want);
    EXPECT_EQ(r.messages_read, 5u);
    EXPECT_EQ(r.messages_removed, 2u);
}

TEST(Compactor, TombstoneRemovesTheKeyAndKeylessMessagesAreDropped) {
    auto r = compact({},
                     inputs({single(m("a", "1")), single(kv{std::nullopt, "x"}),
                             single(m("b", "1")), single(m("a", ""))}),
                     1, 4);
    const std::map<std::uint64_t, std::vector<kv>> want{{2, {m("b", "1")}}};
    EXPECT_EQ(contents(r.view), want);
    EXPECT_EQ(r.view.keys, 1u);
    // A key written again after its tombstone is back.
    auto again = compact(r.view, inputs({single(m("a", "3"))}, 4), 1, 5);
    const std::map<std::uint64_t, std::vector<kv>> want2{{2, {m("b", "1")}}, {4, {m("a", "3")}}};
    EXPECT_EQ(contents(again.view), want2);
}

TEST(Compactor, SplitsBatchesPerKey) {
    const auto whole = batch({m("x", "1"), m("y", "1")});
    auto r = compact({},
                     inputs({batch({m("a", "1"), m("b", "1"), m("c", "1")}), single(m("b", "2")),
                             whole, batch({m("c", "2"), m("a", "")})}),
                     1, 4);
    const std::map<std::uint64_t, std::vector<kv>> want{
        {1, {m("b", "2")}}, {2, {m("x", "1"), m("y", "1")}}, {3, {m("c", "2")}}};
    EXPECT_EQ(contents(r.view), want);
    // An untouched batch is kept byte for byte; a split one is re-built with its survivors.
    ASSERT_EQ(r.view.entries.size(), 3u);
    EXPECT_EQ(r.view.entries[1].data, whole);
    EXPECT_EQ(r.view.entries[1].batch_size, 2u);  // the batch's message count
    EXPECT_EQ(r.view.entries[2].batch_size, 1u);  // re-built with one survivor
    EXPECT_EQ(r.messages_removed, 4u);            // a=1, b=1, c=1, tombstone a
}

TEST(Compactor, IncrementalRunEqualsOneRunOverEverything) {
    std::vector<std::shared_ptr<const std::vector<std::byte>>> all;
    for (int i = 0; i < 60; ++i) {
        const std::string key = cat("k", i % 7);
        if (i % 11 == 5) {
            all.push_back(single(m(key, "")));
        } else if (i % 5 == 0) {
            all.push_back(batch({m(key, cat("b", i)), m(cat("k", i % 3), cat("c", i))}));
        } else {
            all.push_back(single(m(key, cat("v", i))));
        }
    }
    const auto once = compact({}, inputs(all), 1, all.size());
    std::vector<std::shared_ptr<const std::vector<std::byte>>> head(all.begin(), all.begin() + 25);
    std::vector<std::shared_ptr<const std::vector<std::byte>>> tail(all.begin() + 25, all.end());
    const auto first = compact({}, inputs(head), 1, 25);
    const auto second = compact(first.view, inputs(tail, 25), 1, all.size());
    EXPECT_EQ(contents(once.view), contents(second.view));
    EXPECT_EQ(once.view.keys, second.view.keys);
}

TEST(CompactedView, RoundTripsAndRejectsDamage) {
    auto r = compact({}, inputs({single(m("a", "1")), batch({m("b", "1"), m("c", "1")})}), 9, 2);
    const auto bytes = encode_compacted_view(r.view);
    auto back = decode_compacted_view(bytes);
    ASSERT_TRUE(back.has_value());
    EXPECT_EQ(back->ledger_id, 9u);
    EXPECT_EQ(back->end, 2u);
    EXPECT_EQ(back->keys, 3u);
    EXPECT_EQ(contents(*back), contents(r.view));
    for (std::size_t at : {std::size_t{0}, std::size_t{20}, bytes.size() / 2, bytes.size() - 1}) {
        auto bad = bytes;
        bad[at] ^= std::byte{0x40};
        EXPECT_FALSE(decode_compacted_view(bad).has_value()) << "flipped byte " << at;
    }
    EXPECT_FALSE(decode_compacted_view(std::span<const std::byte>(bytes).first(bytes.size() - 3))
                     .has_value());
}

// ---- the broker: read_compacted subscriptions ----

constexpr std::string_view topic_full = "persistent://public/default/compacted";

struct delivered {
    std::uint64_t entry = 0;
    std::vector<kv> msgs;
};

class CompactionBrokerTest : public BrokerTest {
protected:
    void SetUp() override {
        start();
        auto n = parse_topic_name(std::string(topic_full));
        ASSERT_TRUE(n.has_value());
        auto t = server_->topics().open(*n, true);
        ASSERT_TRUE(t.has_value());
        topic_ = *t;
        ASSERT_NE(topic_->compaction(), nullptr);
    }

    // Appends one stored entry (durable when this returns); its entry id.
    std::uint64_t append(const std::shared_ptr<const std::vector<std::byte>>& e,
                         std::uint32_t batch_size = 1) {
        std::promise<result<position>> p;
        append_info info;
        info.batch_size = batch_size;
        topic_->append(*e, info, [&](result<position> r) { p.set_value(r); });
        auto r = p.get_future().get();
        EXPECT_TRUE(r.has_value());
        return r ? r->entry_id : ~std::uint64_t{0};
    }

    std::unique_ptr<wire_client> consumer(std::string_view sub,
                                          bool read_compacted,
                                          std::int32_t type = 0,
                                          bool durable = true,
                                          std::string* error = nullptr) {
        auto c = connected_client();
        if (!c) {
            return nullptr;
        }
        proto::subscribe_args a;
        a.topic = topic_full;
        a.subscription = sub;
        a.sub_type = type;
        a.consumer_id = 1;
        a.request_id = 1;
        a.consumer_name = "c";
        a.durable = durable;
        a.read_compacted = read_compacted;
        a.initial_position = 1;
        c->send([&](proto::frame_buffer& b) { return c->writer().subscribe(b, a).has_value(); });
        for (int i = 0; i < 10; ++i) {
            auto r = c->next();
            if (!r) {
                return nullptr;
            }
            if (r->type == command_type::success) {
                c->send([&](proto::frame_buffer& b) {
                    return c->writer().flow(b, 1, 100000).has_value();
                });
                return c;
            }
            if (r->type == command_type::error) {
                if (error != nullptr) {
                    *error = r->cmd.error().message();
                }
                return nullptr;
            }
        }
        return nullptr;
    }

    // Every MESSAGE until none came for `quiet`.
    static std::vector<delivered> drain(wire_client& c, std::chrono::milliseconds quiet = 400ms) {
        std::vector<delivered> out;
        while (auto r = c.next(quiet)) {
            if (r->type != command_type::message) {
                continue;
            }
            out.push_back(
                delivered{r->cmd.message().message_id().entryid(), messages_of(r->stored)});
        }
        return out;
    }

    std::shared_ptr<topic> topic_;
};

TEST_F(CompactionBrokerTest, ReadCompactedDeliversTheViewThenTheLogAfterTheHorizon) {
    append(single(m("k1", "a")));           // 0
    append(single(m("k2", "b")));           // 1
    append(single(m("k1", "c")));           // 2
    append(single(m("k3", "d")));           // 3
    append(single(m("k2", "")));            // 4: tombstone
    append(single(kv{std::nullopt, "x"}));  // 5: no key
    EXPECT_EQ(topic_->compaction()->status().state, compaction_state::not_run);
    ASSERT_TRUE(topic_->compaction()->run().has_value());
    EXPECT_EQ(topic_->compaction()->status().state, compaction_state::success);
    append(single(m("k1", "e")));  // 6
    append(single(m("k2", "")));   // 7: a tombstone after the horizon is delivered
    append(single(m("k4", "f")));  // 8

    auto rc = consumer("rc", true);
    ASSERT_TRUE(rc);
    auto got = drain(*rc);
    std::vector<std::pair<std::uint64_t, std::vector<kv>>> seen;
    for (auto& d : got) {
        seen.emplace_back(d.entry, d.msgs);
    }
    const std::vector<std::pair<std::uint64_t, std::vector<kv>>> want{{2, {m("k1", "c")}},
                                                                      {3, {m("k3", "d")}},
                                                                      {6, {m("k1", "e")}},
                                                                      {7, {m("k2", "")}},
                                                                      {8, {m("k4", "f")}}};
    EXPECT_EQ(seen, want);

    // Without read_compacted the whole log.
    auto plain = consumer("plain", false);
    ASSERT_TRUE(plain);
    EXPECT_EQ(drain(*plain).size(), 9u);

    // A reader (non-durable) with read_compacted reads the view too.
    auto reader = consumer("reader", true, 0, false);
    ASSERT_TRUE(reader);
    EXPECT_EQ(drain(*reader).size(), 5u);

    const auto info = topic_->compaction()->info();
    EXPECT_TRUE(info.has_view);
    EXPECT_EQ(info.end, 6u);
    EXPECT_EQ(info.keys, 2u);
    EXPECT_EQ(info.entries, 2u);
}

TEST_F(CompactionBrokerTest, BatchesAreSplitPerKeyUnderTheirOriginalEntryId) {
    append(batch({m("a", "1"), m("b", "1"), m("c", "1")}), 3);  // 0
    append(single(m("b", "2")));                                // 1
    ASSERT_TRUE(topic_->compaction()->run().has_value());
    auto rc = consumer("rc", true, 2);  // Failover
    ASSERT_TRUE(rc);
    auto got = drain(*rc);
    ASSERT_EQ(got.size(), 2u);
    EXPECT_EQ(got[0].entry, 0u);
    EXPECT_EQ(got[0].msgs, (std::vector<kv>{m("a", "1"), m("c", "1")}));
    EXPECT_EQ(got[1].entry, 1u);
    EXPECT_EQ(got[1].msgs, (std::vector<kv>{m("b", "2")}));
}

TEST_F(CompactionBrokerTest, ReadCompactedIsRefusedOnSharedSubscriptions) {
    std::string error;
    EXPECT_FALSE(consumer("shared", true, 1, true, &error));
    EXPECT_NE(error.find("readCompacted"), std::string::npos) << error;
    EXPECT_FALSE(consumer("ks", true, 3, true, &error));
    EXPECT_TRUE(consumer("shared-plain", false, 1));
}

TEST_F(CompactionBrokerTest, WritesCommittedDuringCompactionComeAfterTheHorizonExactlyOnce) {
    for (int i = 0; i < 30; ++i) {
        append(single(m(cat("k", i % 5), cat("old", i))));
    }
    // The hook runs after the job read the log, before it publishes: these 20 commit while
    // the compaction is in progress.
    std::vector<std::uint64_t> during;
    topic_->compaction()->set_before_publish_hook([&]() -> result<void> {
        for (int i = 0; i < 20; ++i) {
            during.push_back(append(single(m(cat("k", i % 5), cat("new", i)))));
        }
        return {};
    });
    ASSERT_TRUE(topic_->compaction()->run().has_value());
    ASSERT_EQ(topic_->compaction()->info().end, 30u);
    topic_->compaction()->set_before_publish_hook({});

    auto rc = consumer("rc", true);
    ASSERT_TRUE(rc);
    auto got = drain(*rc);
    std::vector<std::uint64_t> ids;
    for (const auto& d : got) {
        ids.push_back(d.entry);
    }
    // The view: the latest of each of the 5 keys among entries 0..29 (25..29); then each of
    // the 20 writes exactly once, in order.
    std::vector<std::uint64_t> want{25, 26, 27, 28, 29};
    want.insert(want.end(), during.begin(), during.end());
    EXPECT_EQ(ids, want);
}

TEST_F(CompactionBrokerTest, BarrierHoldsUnderAConcurrentWriter) {
    std::atomic<bool> stop{false};
    std::atomic<int> written{0};
    for (int i = 0; i < 50; ++i) {
        append(single(m(cat("k", i % 10), cat("v", i))));
        written.fetch_add(1);
    }
    std::thread writer([&] {
        for (int i = 50; i < 20000 && !stop.load(); ++i) {
            append(single(m(cat("k", i % 10), cat("v", i))));
            written.fetch_add(1);
            std::this_thread::sleep_for(100us);
        }
    });
    // Each run starts while the writer is appending (it has moved on since the last run), and
    // the writer keeps going after the last run (bounded waits; the writer stops at 20000 entries).
    auto wait_written = [&](int target) {
        for (int i = 0; i < 2000 && written.load() < target; ++i) {
            std::this_thread::sleep_for(1ms);
        }
    };
    for (int round = 0; round < 5; ++round) {
        wait_written(written.load() + 20);
        ASSERT_TRUE(topic_->compaction()->run().has_value());
    }
    wait_written(written.load() + 20);
    stop.store(true);
    writer.join();
    const auto end = topic_->compaction()->info().end;
    const auto total = static_cast<std::uint64_t>(written.load());
    ASSERT_GE(end, 50u);
    EXPECT_GT(total, end);  // writes after the last horizon
    std::cout << "concurrent writer: " << total << " entries written, last horizon at " << end - 1
              << " (" << total - end << " written after it)\n";

    auto rc = consumer("rc", true);
    ASSERT_TRUE(rc);
    auto got = drain(*rc);
    // Compacted part: one entry per key (10 keys, all below the horizon), its latest value;
    // then every entry from the horizon's successor to the end, exactly once, in order.
    std::map<std::string, std::string> latest;
    for (std::uint64_t id = 0; id < end; ++id) {
        latest[cat("k", id % 10)] = cat("v", id);
    }
    std::size_t i = 0;
    std::map<std::string, std::string> view;
    for (; i < got.size() && got[i].entry < end; ++i) {
        ASSERT_EQ(got[i].msgs.size(), 1u);
        view[*got[i].msgs[0].key] = got[i].msgs[0].value;
    }
    EXPECT_EQ(view, latest);
    std::vector<std::uint64_t> tail;
    for (; i < got.size(); ++i) {
        tail.push_back(got[i].entry);
    }
    std::vector<std::uint64_t> want;
    for (std::uint64_t id = end; id < total; ++id) {
        want.push_back(id);
    }
    EXPECT_EQ(tail, want);
}

TEST_F(CompactionBrokerTest, AFailureBetweenSnapshotPutAndRecordCasLeavesTheOldView) {
    append(single(m("a", "1")));  // 0
    append(single(m("b", "1")));  // 1
    ASSERT_TRUE(topic_->compaction()->run().has_value());
    const auto before = topic_->compaction()->info();
    auto record = backend_->get_admin_record(topic_compaction::record_key(std::string(topic_full)));
    ASSERT_TRUE(record && *record);

    append(single(m("a", "2")));  // 2
    topic_->compaction()->set_before_publish_hook(
        []() -> result<void> { return nereus::error(proto::error_kind::persistence_failure); });
    EXPECT_FALSE(topic_->compaction()->run().has_value());
    const auto st = topic_->compaction()->status();
    EXPECT_EQ(st.state, compaction_state::error);
    EXPECT_NE(st.last_error.find("publish"), std::string::npos) << st.last_error;
    // Neither the record nor the view moved: no half snapshot is visible.
    auto record_after =
        backend_->get_admin_record(topic_compaction::record_key(std::string(topic_full)));
    ASSERT_TRUE(record_after && *record_after);
    EXPECT_EQ(**record_after, **record);
    EXPECT_EQ(topic_->compaction()->info().end, before.end);
    EXPECT_EQ(topic_->compaction()->info().object, before.object);

    auto rc = consumer("rc", true);
    ASSERT_TRUE(rc);
    auto got = drain(*rc);
    ASSERT_EQ(got.size(), 3u);  // view {0, 1}, then entry 2 from the log
    EXPECT_EQ(got[0].entry, 0u);
    EXPECT_EQ(got[1].entry, 1u);
    EXPECT_EQ(got[2].entry, 2u);

    // The next run publishes.
    topic_->compaction()->set_before_publish_hook({});
    ASSERT_TRUE(topic_->compaction()->run().has_value());
    EXPECT_EQ(topic_->compaction()->info().end, 3u);
    EXPECT_NE(topic_->compaction()->info().object, before.object);
}

TEST_F(CompactionBrokerTest, CompactsATopicWhoseHistoryWasAcked) {
    auto plain = consumer("plain", false);
    ASSERT_TRUE(plain);
    for (int i = 0; i < 10; ++i) {
        append(single(m(cat("k", i % 3), cat("v", i))));
    }
    auto got = drain(*plain);
    ASSERT_EQ(got.size(), 10u);
    std::vector<proto::message_id> ids;
    for (const auto& d : got) {
        ids.push_back(proto::message_id{topic_->store().ledger_id(), d.entry});
    }
    proto::ack_args a;
    a.consumer_id = 1;
    a.cumulative = true;
    a.ids = std::span(ids).last(1);
    a.request_id = 99;
    plain->send([&](proto::frame_buffer& b) { return plain->writer().ack(b, a).has_value(); });
    ASSERT_TRUE(plain->expect(command_type::ack_response));
    ASSERT_TRUE(topic_->compaction()->run().has_value());
    EXPECT_EQ(topic_->compaction()->info().keys, 3u);
    // The compaction cursor holds nothing below the horizon once it published.
    auto names = topic_->store().subscription_names();
    EXPECT_NE(std::find(names.begin(), names.end(), topic_compaction::cursor_name), names.end());
    auto rc = consumer("rc", true);
    ASSERT_TRUE(rc);
    EXPECT_EQ(drain(*rc).size(), 3u);
}

// A figure, not an assertion on speed: how long one run over 20000 entries / 1000 keys takes
// (memory backend), and what a read_compacted subscription then receives.
TEST_F(CompactionBrokerTest, CompactsTwentyThousandEntriesToOnePerKey) {
    for (int i = 0; i < 20000; ++i) {
        append(single(m(cat("key-", i % 1000), cat("value-", i))));
    }
    const auto t0 = std::chrono::steady_clock::now();
    ASSERT_TRUE(topic_->compaction()->run().has_value());
    const auto ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0)
            .count();
    const auto info = topic_->compaction()->info();
    EXPECT_EQ(info.keys, 1000u);
    EXPECT_EQ(info.entries, 1000u);
    std::cout << "compaction of 20000 entries / 1000 keys: " << ms << " ms, snapshot " << info.bytes
              << " bytes\n";
    auto rc = consumer("rc", true);
    ASSERT_TRUE(rc);
    auto got = drain(*rc);
    ASSERT_EQ(got.size(), 1000u);
    for (std::size_t i = 0; i < got.size(); ++i) {
        EXPECT_EQ(got[i].entry, 19000 + i);
    }
}

TEST_F(CompactionBrokerTest, TriggerRunsOnThePoolAndRefusesASecondRunMeanwhile) {
    for (int i = 0; i < 5; ++i) {
        append(single(m("k", std::to_string(i))));
    }
    std::promise<void> entered;
    std::promise<void> release;
    auto released = release.get_future().share();
    topic_->compaction()->set_before_publish_hook([&, released]() -> result<void> {
        entered.set_value();
        released.wait();
        return {};
    });
    ASSERT_TRUE(topic_->compaction()->trigger());
    entered.get_future().wait();
    EXPECT_EQ(topic_->compaction()->status().state, compaction_state::running);
    EXPECT_FALSE(topic_->compaction()->trigger());
    release.set_value();
    for (int i = 0; i < 500 && topic_->compaction()->status().state == compaction_state::running;
         ++i) {
        std::this_thread::sleep_for(10ms);
    }
    EXPECT_EQ(topic_->compaction()->status().state, compaction_state::success);
    EXPECT_EQ(topic_->compaction()->info().entries, 1u);
}

}  // namespace
}  // namespace nereus::broker::test
