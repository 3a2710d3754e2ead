// Key_Shared dispatch: AUTO_SPLIT ranges split and merged the way Pulsar's auto-split selector
// does, STICKY ranges from SUBSCRIBE's keySharedMeta (overlap → ConsumerAssignError, uncovered
// keys wait), and no head-of-line stall below the look-ahead bound.

#include "nereus/proto/frame_format.h"
#include "nereus/proto/server_error.h"

#include "support/broker_fixture.h"
#include <cstring>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace nereus::broker::test {
namespace {

using proto::command_type;

constexpr std::string_view topic = "persistent://public/default/ks";

// Reference MurmurHash3 x86 32 (seed 0), written independently of the broker's.
std::uint32_t murmur(std::string_view s) {
    auto rotl = [](std::uint32_t x, int r) {
        return (x << r) | (x >> (32 - r));
    };
    const std::uint32_t c1 = 0xcc9e2d51;
    const std::uint32_t c2 = 0x1b873593;
    std::uint32_t h = 0;
    const auto* d = reinterpret_cast<const unsigned char*>(s.data());
    const std::size_t n = s.size();
    std::size_t i = 0;
    for (; i + 4 <= n; i += 4) {
        std::uint32_t k =
            d[i] | (d[i + 1] << 8) | (d[i + 2] << 16) | (std::uint32_t(d[i + 3]) << 24);
        h ^= rotl(k * c1, 15) * c2;
        h = rotl(h, 13) * 5 + 0xe6546b64;
    }
    std::uint32_t k = 0;
    for (std::size_t j = n - i; j > 0; --j) {
        k = (k << 8) | d[i + j - 1];
    }
    if (n - i > 0) {
        h ^= rotl(k * c1, 15) * c2;
    }
    h ^= static_cast<std::uint32_t>(n);
    h ^= h >> 16;
    h *= 0x85ebca6b;
    h ^= h >> 13;
    h *= 0xc2b2ae35;
    h ^= h >> 16;
    return h;
}

std::int32_t slot_of(std::string_view key) {
    return static_cast<std::int32_t>(murmur(key) % 65536);
}

// The first key "k<i>" whose slot lies in [lo, hi].
std::string key_in(std::int32_t lo, std::int32_t hi, std::set<std::string>* used = nullptr) {
    for (int i = 0; i < 100000; ++i) {
        std::string k = std::string("k").append(std::to_string(i));
        const auto s = slot_of(k);
        if (s >= lo && s <= hi && (used == nullptr || used->insert(k).second)) {
            return k;
        }
    }
    return {};
}

struct range {
    std::int32_t start;
    std::int32_t end;
};

// SUBSCRIBE Key_Shared with a keySharedMeta (the writer has no field for it); returns the
// SUCCESS or ERROR frame.
std::optional<received> subscribe_ks(wire_client& c,
                                     std::string_view sub,
                                     std::uint64_t consumer_id,
                                     std::uint64_t request_id,
                                     std::string_view name,
                                     bool sticky,
                                     std::vector<range> ranges = {}) {
    proto::pb::BaseCommand cmd;
    cmd.set_type(proto::pb::BaseCommand::SUBSCRIBE);
    auto* s = cmd.mutable_subscribe();
    s->set_topic(std::string(topic));
    s->set_subscription(std::string(sub));
    s->set_subtype(proto::pb::CommandSubscribe::Key_Shared);
    s->set_consumer_id(consumer_id);
    s->set_request_id(request_id);
    s->set_consumer_name(std::string(name));
    s->set_initialposition(proto::pb::CommandSubscribe::Earliest);
    auto* ks = s->mutable_keysharedmeta();
    ks->set_keysharedmode(sticky ? proto::pb::KeySharedMeta::STICKY
                                 : proto::pb::KeySharedMeta::AUTO_SPLIT);
    for (const auto& r : ranges) {
        auto* ir = ks->add_hashranges();
        ir->set_start(r.start);
        ir->set_end(r.end);
    }
    const std::string body = cmd.SerializeAsString();
    std::vector<std::byte> frame(8 + body.size());
    proto::detail::store_be32(frame.data(), static_cast<std::uint32_t>(4 + body.size()));
    proto::detail::store_be32(frame.data() + 4, static_cast<std::uint32_t>(body.size()));
    std::memcpy(frame.data() + 8, body.data(), body.size());
    if (!c.send_raw(frame)) {
        return std::nullopt;
    }
    for (int i = 0; i < 10; ++i) {
        auto r = c.next();
        if (!r) {
            return std::nullopt;
        }
        if (r->type == command_type::success || r->type == command_type::error) {
            return r;
        }
    }
    return std::nullopt;
}

bool ok(const std::optional<received>& r) {
    return r && r->type == command_type::success;
}

std::int32_t error_of(const std::optional<received>& r) {
    return r && r->type == command_type::error ? static_cast<std::int32_t>(r->cmd.error().error())
                                               : -1;
}

bool flow(wire_client& c, std::uint64_t consumer_id, std::uint32_t n) {
    return c.send(
        [&](proto::frame_buffer& b) { return c.writer().flow(b, consumer_id, n).has_value(); });
}

// Round trip: everything the broker did for this connection's earlier commands is queued.
bool sync(wire_client& c) {
    c.send([&](proto::frame_buffer& f) { return c.writer().ping(f).has_value(); });
    return c.expect(command_type::pong).has_value();
}

class KeySharedTest : public BrokerTest {
protected:
    void open(broker_options o = {}) {
        start(o);
        producer_ = connected_client();
        ASSERT_FALSE(create_producer(*producer_, topic, 0, 1).empty());
    }
    // Sends keyed messages; returns their entry ids in order.
    std::vector<std::uint64_t> produce_keys(const std::vector<std::string>& keys) {
        for (const auto& k : keys) {
            producer_->send_message(0, seq_++, "v", 0, k);
        }
        std::vector<std::uint64_t> ids;
        for (std::size_t i = 0; i < keys.size(); ++i) {
            auto r = producer_->expect(command_type::send_receipt);
            EXPECT_TRUE(r);
            if (!r) {
                break;
            }
            ids.push_back(r->cmd.send_receipt().message_id().entryid());
        }
        return ids;
    }
    // Exactly n MESSAGEs (each waited for up to 5 s), then nothing more for 100 ms.
    static std::vector<std::uint64_t> take(wire_client& c, std::size_t n) {
        std::vector<std::uint64_t> out;
        for (std::size_t i = 0; i < n; ++i) {
            auto m = c.expect(command_type::message, 5s);
            if (!m) {
                return out;
            }
            out.push_back(m->cmd.message().message_id().entryid());
        }
        if (auto extra = c.expect(command_type::message, 100ms)) {
            out.push_back(extra->cmd.message().message_id().entryid());
        }
        return out;
    }
    // Every MESSAGE until the connection is quiet for `quiet`.
    static std::vector<std::uint64_t> drain(wire_client& c,
                                            std::chrono::milliseconds quiet = 300ms) {
        std::vector<std::uint64_t> out;
        for (int i = 0; i < 100000; ++i) {
            auto m = c.expect(command_type::message, quiet);
            if (!m) {
                break;
            }
            out.push_back(m->cmd.message().message_id().entryid());
        }
        return out;
    }

    std::unique_ptr<wire_client> producer_;
    std::uint64_t seq_ = 0;
};

TEST(KeySharedHash, ReferenceMurmurMatchesKnownVectors) {
    EXPECT_EQ(murmur(""), 0U);
    EXPECT_EQ(murmur("hello"), 0x248bfa47U);
}

// Pulsar's auto-split: a takes everything, b splits it and takes the lower half [0, 32768],
// c splits the biggest range (the lowest of the equal ones, b's) and takes [0, 16384]. When b
// leaves, its range goes to the range above it (a).
TEST_F(KeySharedTest, AutoSplitSplitsTheBiggestRangeAndMergesUpwardLikePulsar) {
    open();
    auto a = connected_client();
    auto b = connected_client();
    auto c = connected_client();
    ASSERT_TRUE(ok(subscribe_ks(*a, "auto", 0, 1, "a", false)));
    ASSERT_TRUE(ok(subscribe_ks(*b, "auto", 0, 1, "b", false)));
    ASSERT_TRUE(ok(subscribe_ks(*c, "auto", 0, 1, "c", false)));
    for (auto* x : {a.get(), b.get(), c.get()}) {
        ASSERT_TRUE(flow(*x, 0, 1000));
        ASSERT_TRUE(sync(*x));
    }
    std::set<std::string> used;
    const std::string kc = key_in(0, 16384, &used);
    const std::string kb = key_in(16385, 32768, &used);
    const std::string ka = key_in(32769, 65535, &used);
    ASSERT_FALSE(kc.empty() || kb.empty() || ka.empty());
    const auto ids = produce_keys({ka, kb, kc, ka, kb, kc});
    ASSERT_EQ(ids.size(), 6U);
    EXPECT_EQ(take(*a, 2), (std::vector<std::uint64_t>{ids[0], ids[3]}));
    EXPECT_EQ(take(*b, 2), (std::vector<std::uint64_t>{ids[1], ids[4]}));
    EXPECT_EQ(take(*c, 2), (std::vector<std::uint64_t>{ids[2], ids[5]}));

    // b leaves without acking: its entries and its range go to a, in order.
    b->send(
        [&](proto::frame_buffer& f) { return b->writer().close_consumer(f, 0, 2).has_value(); });
    ASSERT_TRUE(b->expect(command_type::success));
    const auto more = produce_keys({kb});
    ASSERT_EQ(more.size(), 1U);
    EXPECT_EQ(take(*a, 3), (std::vector<std::uint64_t>{ids[1], ids[4], more[0]}));
    EXPECT_TRUE(drain(*c, 100ms).empty());
}

TEST_F(KeySharedTest, StickyRangesOverlapIsAnAssignErrorAndUncoveredKeysWait) {
    open();
    auto a = connected_client();
    ASSERT_TRUE(ok(subscribe_ks(*a, "sticky", 0, 1, "a", true, {{0, 32767}})));
    // Overlaps a's range: ConsumerAssignError, as Pulsar.
    auto x = connected_client();
    EXPECT_EQ(
        error_of(subscribe_ks(*x, "sticky", 0, 2, "x", true, {{40000, 50000}, {30000, 32768}})),
        static_cast<std::int32_t>(proto::server_error::consumer_assign_error));
    // Inverted and empty ranges too.
    EXPECT_EQ(error_of(subscribe_ks(*x, "sticky", 1, 3, "x", true, {{50000, 40000}})),
              static_cast<std::int32_t>(proto::server_error::consumer_assign_error));
    EXPECT_EQ(error_of(subscribe_ks(*x, "sticky", 2, 4, "x", true, {})),
              static_cast<std::int32_t>(proto::server_error::consumer_assign_error));
    // Another Key_Shared mode on the same subscription: ConsumerBusy, as Pulsar.
    EXPECT_EQ(error_of(subscribe_ks(*x, "sticky", 3, 5, "x", false)),
              static_cast<std::int32_t>(proto::server_error::consumer_busy));

    ASSERT_TRUE(flow(*a, 0, 1000));
    ASSERT_TRUE(sync(*a));
    std::set<std::string> used;
    const std::string low = key_in(0, 32767, &used);
    const std::string high = key_in(32768, 65535, &used);
    const std::string high2 = key_in(32768, 65535, &used);
    ASSERT_FALSE(low.empty() || high.empty() || high2.empty());
    const auto ids = produce_keys({high, low, high2, low, high});
    ASSERT_EQ(ids.size(), 5U);
    // Only a's keys arrive; the others wait (no consumer covers them) without blocking a's.
    EXPECT_EQ(take(*a, 2), (std::vector<std::uint64_t>{ids[1], ids[3]}));
    // A consumer covering the rest gets the waiting keys in order; a disjoint range is fine.
    auto d = connected_client();
    ASSERT_TRUE(ok(subscribe_ks(*d, "sticky", 0, 1, "d", true, {{32768, 65535}})));
    ASSERT_TRUE(flow(*d, 0, 1000));
    EXPECT_EQ(take(*d, 3), (std::vector<std::uint64_t>{ids[0], ids[2], ids[4]}));
    EXPECT_TRUE(drain(*a, 100ms).empty());
}

// Many entries wait for a consumer without permits (more than a dispatch batch): the other
// consumer's keys still flow.
TEST_F(KeySharedTest, WaitingKeysDoNotStallOtherKeys) {
    open();
    auto a = connected_client();
    auto b = connected_client();
    ASSERT_TRUE(ok(subscribe_ks(*a, "hol", 0, 1, "a", false)));  // (32768, 65536]
    ASSERT_TRUE(ok(subscribe_ks(*b, "hol", 0, 1, "b", false)));  // [0, 32768]
    ASSERT_TRUE(flow(*a, 0, 1));
    ASSERT_TRUE(flow(*b, 0, 100));
    ASSERT_TRUE(sync(*a));
    ASSERT_TRUE(sync(*b));
    std::set<std::string> used;
    const std::string ka = key_in(32769, 65535, &used);
    const std::string kb = key_in(0, 32768, &used);
    ASSERT_EQ(produce_keys(std::vector<std::string>(600, ka)).size(), 600U);
    const auto ids_b = produce_keys(std::vector<std::string>(10, kb));
    ASSERT_EQ(ids_b.size(), 10U);
    EXPECT_EQ(take(*b, 10), ids_b);
    EXPECT_EQ(take(*a, 1).size(), 1U);
    // a gets permits: everything waiting for it arrives, in order.
    ASSERT_TRUE(flow(*a, 0, 1000));
    const auto rest = take(*a, 599);
    ASSERT_EQ(rest.size(), 599U);
    EXPECT_TRUE(std::is_sorted(rest.begin(), rest.end()));
}

// The look-ahead is bounded: once key_shared_max_waiting entries wait, reading stops (the
// documented head-of-line case) until the waiting entries can go.
TEST_F(KeySharedTest, LookAheadBoundStopsReadingUntilWaitingEntriesGo) {
    broker_options o;
    o.key_shared_max_waiting = 50;
    open(o);
    auto a = connected_client();
    auto b = connected_client();
    ASSERT_TRUE(ok(subscribe_ks(*a, "bound", 0, 1, "a", false)));
    ASSERT_TRUE(ok(subscribe_ks(*b, "bound", 0, 1, "b", false)));
    ASSERT_TRUE(flow(*a, 0, 1));
    ASSERT_TRUE(flow(*b, 0, 100));
    ASSERT_TRUE(sync(*a));
    ASSERT_TRUE(sync(*b));
    std::set<std::string> used;
    const std::string ka = key_in(32769, 65535, &used);
    const std::string kb = key_in(0, 32768, &used);
    ASSERT_EQ(produce_keys(std::vector<std::string>(100, ka)).size(), 100U);
    const auto ids_b = produce_keys(std::vector<std::string>(10, kb));
    ASSERT_EQ(ids_b.size(), 10U);
    EXPECT_EQ(take(*a, 1).size(), 1U);
    EXPECT_TRUE(drain(*b, 200ms).empty());  // behind 50+ waiting entries: not read yet
    ASSERT_TRUE(flow(*a, 0, 1000));
    EXPECT_EQ(take(*a, 99).size(), 99U);
    EXPECT_EQ(take(*b, 10), ids_b);
}

}  // namespace
}  // namespace nereus::broker::test
