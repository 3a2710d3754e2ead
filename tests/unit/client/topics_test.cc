// Topics: partitioned topics (routing by key hash and round robin; a consumer over every
// partition), multi-topic consumers, get_partitions, readers, seek by id and by time.

#include "nereus/broker/partitioned_topics.h"
#include "nereus/broker/topic_name.h"
#include "nereus/client/detail/topic.h"

#include "client_fixture.h"
#include <map>
#include <set>

namespace nereus::client::test {
namespace {

class PartitionedTest : public ClientTest {
protected:
    void make_partitioned(const std::string& name, std::uint32_t n) {
        auto t = broker::parse_topic_name(name);
        ASSERT_TRUE(t);
        auto r = broker::create_partitioned_metadata(*backend_, *t, n);
        ASSERT_TRUE(r && *r);
    }
};

TEST_F(PartitionedTest, GetPartitionsNamesEveryPartition) {
    make_partitioned("parts", 3);
    auto r = wait(cli().get_partitions("parts", asio::use_future));
    ASSERT_TRUE(r);
    ASSERT_EQ(r->size(), 3u);
    EXPECT_EQ((*r)[2], "persistent://public/default/parts-partition-2");
    auto plain = wait(cli().get_partitions("plain", asio::use_future));
    ASSERT_TRUE(plain);
    EXPECT_EQ(*plain, std::vector<std::string>{"persistent://public/default/plain"});
}

TEST_F(PartitionedTest, KeyedMessagesGoToTheKeysPartitionAndConsumerSeesAll) {
    make_partitioned("keyed", 4);
    auto c = make_consumer(sub("keyed", "s", subscription_type::shared));
    EXPECT_EQ(c.topics().size(), 4u);
    auto p = make_producer(prod("keyed", true));
    std::map<std::string, std::set<std::int32_t>> partitions_of_key;
    std::vector<std::future<result<message_id>>> fs;
    std::vector<std::string> keys;
    for (int i = 0; i < 40; ++i) {
        keys.push_back("key-" + std::to_string(i % 8));
        fs.push_back(p.send(outgoing_message::text(std::to_string(i)).with_key(keys.back()),
                            asio::use_future));
    }
    for (std::size_t i = 0; i < fs.size(); ++i) {
        auto id = wait(std::move(fs[i]));
        ASSERT_TRUE(id);
        partitions_of_key[keys[i]].insert(id->partition);
        EXPECT_EQ(id->partition, static_cast<std::int32_t>(detail::murmur3_32(keys[i]) % 4));
    }
    for (const auto& [k, ps] : partitions_of_key) {
        EXPECT_EQ(ps.size(), 1u) << k;
    }
    std::set<std::string> got;
    for (int i = 0; i < 40; ++i) {
        auto m = receive(c);
        ASSERT_TRUE(m);
        got.insert(std::string(m->payload_text()));
        EXPECT_NE(m->topic().find("-partition-"), std::string::npos);
        ASSERT_TRUE(wait(c.acknowledge(m->id(), asio::use_future)));
    }
    EXPECT_EQ(got.size(), 40u);
}

TEST_F(PartitionedTest, KeylessMessagesAreSpreadRoundRobin) {
    make_partitioned("rr", 3);
    auto p = make_producer(prod("rr"));
    std::map<std::int32_t, int> per_partition;
    for (int i = 0; i < 9; ++i) {
        auto id = send(p, std::to_string(i));
        ASSERT_TRUE(id);
        per_partition[id->partition]++;
    }
    EXPECT_EQ(per_partition.size(), 3u);
    for (auto& [part, n] : per_partition) {
        EXPECT_EQ(n, 3) << part;
    }
}

TEST_F(PartitionedTest, MurmurHashMatchesJava) {
    // Values of Java's Murmur3_32Hash.makeHash (seed 0, & 0x7fffffff), as Pulsar routes keys.
    EXPECT_EQ(detail::murmur3_32(""), 0u);
    EXPECT_EQ(detail::murmur3_32("a"), 1009084850u);
    EXPECT_EQ(detail::murmur3_32("hello"), 613153351u);
}

TEST_F(ClientTest, OneConsumerOverAListOfTopics) {
    consumer_options o;
    o.topics = {"list-a", "list-b"};
    o.subscription = "s";
    o.start = initial_position::earliest;
    auto c = make_consumer(o);
    auto pa = make_producer(prod("list-a"));
    auto pb = make_producer(prod("list-b"));
    ASSERT_TRUE(send(pa, "a"));
    ASSERT_TRUE(send(pb, "b"));
    std::set<std::string> got;
    for (int i = 0; i < 2; ++i) {
        auto m = receive(c);
        ASSERT_TRUE(m);
        got.insert(std::string(m->payload_text()) + "@" + m->topic());
        ASSERT_TRUE(wait(c.acknowledge(m->id(), asio::use_future)));
    }
    EXPECT_EQ(got, (std::set<std::string>{"a@persistent://public/default/list-a",
                                          "b@persistent://public/default/list-b"}));
}

TEST_F(ClientTest, ReaderReadsFromEarliestFromAnIdAndInclusive) {
    auto p = make_producer(prod("log"));
    std::vector<message_id> ids;
    for (int i = 0; i < 5; ++i) {
        auto id = send(p, std::to_string(i));
        ASSERT_TRUE(id);
        ids.push_back(*id);
    }
    auto read_all = [&](reader_options o, int n) {
        std::vector<std::string> out;
        auto r = wait(cli().create_reader(std::move(o), asio::use_future));
        EXPECT_TRUE(r);
        if (!r) {
            return out;
        }
        for (int i = 0; i < n; ++i) {
            auto m = wait(r->read_next(asio::use_future));
            EXPECT_TRUE(m);
            if (!m) {
                break;
            }
            out.emplace_back(m->payload_text());
        }
        auto more = wait(r->has_message_available(asio::use_future));
        EXPECT_TRUE(more);
        EXPECT_EQ(more.value_or(true), false);
        EXPECT_TRUE(wait(r->close(asio::use_future)));
        return out;
    };
    reader_options o;
    o.topic = "log";
    EXPECT_EQ(read_all(o, 5), (std::vector<std::string>{"0", "1", "2", "3", "4"}));
    o.start_message_id = ids[2];
    EXPECT_EQ(read_all(o, 2), (std::vector<std::string>{"3", "4"}));
    o.start_inclusive = true;
    EXPECT_EQ(read_all(o, 3), (std::vector<std::string>{"2", "3", "4"}));
}

TEST_F(ClientTest, ReaderHasMessageAvailableBeforeReading) {
    auto p = make_producer(prod("avail"));
    reader_options o;
    o.topic = "avail";
    auto r = wait(cli().create_reader(o, asio::use_future));
    ASSERT_TRUE(r);
    auto none = wait(r->has_message_available(asio::use_future));
    ASSERT_TRUE(none);
    EXPECT_FALSE(*none);
    ASSERT_TRUE(send(p, "x"));
    auto some = wait(r->has_message_available(asio::use_future));
    ASSERT_TRUE(some);
    EXPECT_TRUE(*some);
}

TEST_F(ClientTest, SeekToAnIdRedeliversFromThatMessage) {
    auto c = make_consumer(sub("seek", "s"));
    auto p = make_producer(prod("seek"));
    std::vector<message_id> ids;
    for (int i = 0; i < 5; ++i) {
        auto id = send(p, std::to_string(i));
        ASSERT_TRUE(id);
        ids.push_back(*id);
    }
    for (int i = 0; i < 5; ++i) {
        auto m = receive(c);
        ASSERT_TRUE(m);
        ASSERT_TRUE(wait(c.acknowledge(m->id(), asio::use_future)));
    }
    auto s = wait(c.seek(ids[1], asio::use_future));
    ASSERT_TRUE(s) << s.error().message();
    for (int i = 1; i < 5; ++i) {
        auto m = receive(c);
        ASSERT_TRUE(m);
        EXPECT_EQ(m->payload_text(), std::to_string(i));
        ASSERT_TRUE(wait(c.acknowledge(m->id(), asio::use_future)));
    }
    ASSERT_TRUE(wait(c.seek(message_id::earliest(), asio::use_future)));
    auto m0 = receive(c);
    ASSERT_TRUE(m0);
    EXPECT_EQ(m0->payload_text(), "0");
}

TEST_F(ClientTest, SeekByTimeStartsAtTheFirstMessagePublishedAtOrAfter) {
    auto c = make_consumer(sub("seektime", "s"));
    auto p = make_producer(prod("seektime"));
    ASSERT_TRUE(send(p, "old"));
    std::this_thread::sleep_for(50ms);
    const auto cut = std::chrono::system_clock::now();
    std::this_thread::sleep_for(50ms);
    ASSERT_TRUE(send(p, "new"));
    for (int i = 0; i < 2; ++i) {
        auto m = receive(c);
        ASSERT_TRUE(m);
        ASSERT_TRUE(wait(c.acknowledge(m->id(), asio::use_future)));
    }
    ASSERT_TRUE(wait(c.seek(cut, asio::use_future)));
    auto m = receive(c);
    ASSERT_TRUE(m);
    EXPECT_EQ(m->payload_text(), "new");
    EXPECT_TRUE(nothing_within(c, 300ms));
}

TEST_F(ClientTest, UnsubscribeDeletesTheSubscription) {
    auto o = sub("unsub", "s");
    auto c = make_consumer(o);
    auto p = make_producer(prod("unsub"));
    ASSERT_TRUE(send(p, "before"));
    ASSERT_TRUE(wait(c.unsubscribe(asio::use_future)));
    // A new subscription of that name starts over at the given position (latest).
    o.start = initial_position::latest;
    auto c2 = make_consumer(o);
    ASSERT_TRUE(send(p, "after"));
    auto m = receive(c2);
    ASSERT_TRUE(m);
    EXPECT_EQ(m->payload_text(), "after");
}

}  // namespace
}  // namespace nereus::client::test
