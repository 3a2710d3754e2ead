// Readers (non-durable subscriptions): start_message_id (the entry holding it is delivered;
// inclusivity is the client's), batch start positions (ack_set skips earlier indexes),
// MessageId.earliest/latest, seek by id and by publish time, GET_LAST_MESSAGE_ID after a seek.

#include "support/broker_fixture.h"
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace nereus::broker::test {
namespace {

using proto::command_type;

constexpr std::string_view topic = "persistent://public/default/reader";
constexpr std::uint64_t latest = static_cast<std::uint64_t>(INT64_MAX);
constexpr std::int64_t t0 = 1'700'000'000'000;  // wire_client: publish_time = t0 + sequence id

bool flow(wire_client& c, std::uint64_t consumer_id, std::uint32_t n) {
    return c.send(
        [&](proto::frame_buffer& b) { return c.writer().flow(b, consumer_id, n).has_value(); });
}

// Every MESSAGE until the connection is quiet for `quiet`.
std::vector<received> drain(wire_client& c, std::chrono::milliseconds quiet = 300ms) {
    std::vector<received> out;
    for (int i = 0; i < 10000; ++i) {
        auto m = c.expect(command_type::message, quiet);
        if (!m) {
            break;
        }
        out.push_back(std::move(*m));
    }
    return out;
}

// Exactly n MESSAGEs (each waited for up to 5 s), then nothing more for 100 ms.
std::vector<received> take(wire_client& c, std::size_t n) {
    std::vector<received> out;
    for (std::size_t i = 0; i < n; ++i) {
        auto m = c.expect(command_type::message, 5s);
        if (!m) {
            return out;
        }
        out.push_back(std::move(*m));
    }
    if (auto extra = c.expect(command_type::message, 100ms)) {
        out.push_back(std::move(*extra));
    }
    return out;
}

std::vector<std::uint64_t> entries(const std::vector<received>& ms) {
    std::vector<std::uint64_t> out;
    for (const auto& m : ms) {
        out.push_back(m.cmd.message().message_id().entryid());
    }
    return out;
}

class ReaderTest : public BrokerTest {
protected:
    void SetUp() override {
        start();
        producer_ = connected_client();
        ASSERT_FALSE(create_producer(*producer_, topic, 0, 1).empty());
    }
    // SUBSCRIBE durable=false (Exclusive, as readers do) → SUCCESS.
    static bool read_from(wire_client& c,
                          std::string_view sub,
                          std::uint64_t consumer_id,
                          std::uint64_t request_id,
                          std::optional<proto::message_id> start) {
        proto::subscribe_args a;
        a.topic = topic;
        a.subscription = sub;
        a.sub_type = 0;
        a.consumer_id = consumer_id;
        a.request_id = request_id;
        a.durable = false;
        a.start_message_id = start;
        c.send([&](proto::frame_buffer& b) { return c.writer().subscribe(b, a).has_value(); });
        auto r = c.expect(command_type::success);
        return r && r->cmd.success().request_id() == request_id;
    }
    static proto::message_id id(std::uint64_t ledger,
                                std::uint64_t entry,
                                std::int32_t batch = -1) {
        proto::message_id m;
        m.ledger_id = ledger;
        m.entry_id = entry;
        m.batch_index = batch;
        return m;
    }
    // SEEK → CLOSE_CONSUMER (broker-initiated) then SUCCESS.
    static bool seek(wire_client& c,
                     std::uint64_t consumer_id,
                     std::uint64_t request_id,
                     std::optional<proto::message_id> to,
                     std::optional<std::uint64_t> time) {
        c.send([&](proto::frame_buffer& b) {
            if (to) {
                return c.writer().seek(b, consumer_id, request_id, *to).has_value();
            }
            return c.writer().seek_by_time(b, consumer_id, request_id, *time).has_value();
        });
        if (!c.expect(command_type::close_consumer)) {
            return false;
        }
        auto r = c.expect(command_type::success);
        return r && r->cmd.success().request_id() == request_id;
    }

    std::unique_ptr<wire_client> producer_;
};

TEST_F(ReaderTest, StartMessageIdDeliversFromTheEntryHoldingIt) {
    ASSERT_EQ(produce(*producer_, 0, 5), 5);
    auto c = connected_client();
    ASSERT_TRUE(read_from(*c, "r", 0, 1, id(1, 2)));
    ASSERT_TRUE(flow(*c, 0, 100));
    // Entry 2 itself comes too: the client drops it unless startMessageIdInclusive.
    EXPECT_EQ(entries(take(*c, 3)), (std::vector<std::uint64_t>{2, 3, 4}));
}

TEST_F(ReaderTest, EarliestLatestAndOtherLedgers) {
    ASSERT_EQ(produce(*producer_, 0, 3), 3);
    auto c = connected_client();
    ASSERT_TRUE(read_from(*c, "earliest", 0, 1, id(proto::no_position, proto::no_position)));
    ASSERT_TRUE(read_from(*c, "latest", 1, 2, id(latest, latest)));
    ASSERT_TRUE(read_from(*c, "older-ledger", 2, 3, id(0, 2)));  // before this topic's ledger
    ASSERT_TRUE(read_from(*c, "newer-ledger", 3, 4, id(99, 0)));
    for (std::uint64_t consumer = 0; consumer < 4; ++consumer) {
        ASSERT_TRUE(flow(*c, consumer, 100));
    }
    ASSERT_EQ(produce(*producer_, 0, 1, 3), 1);  // entry 3
    std::map<std::uint64_t, std::vector<std::uint64_t>> got;
    for (const auto& m : take(*c, 10)) {
        got[m.cmd.message().consumer_id()].push_back(m.cmd.message().message_id().entryid());
    }
    EXPECT_EQ(got[0], (std::vector<std::uint64_t>{0, 1, 2, 3}));
    EXPECT_EQ(got[1], (std::vector<std::uint64_t>{3}));
    EXPECT_EQ(got[2], (std::vector<std::uint64_t>{0, 1, 2, 3}));
    EXPECT_EQ(got[3], (std::vector<std::uint64_t>{3}));
}

TEST_F(ReaderTest, StartInsideABatchSkipsEarlierIndexesWithAnAckSet) {
    producer_->send_message(0, 0, "batch-bytes", /*batch=*/5);
    ASSERT_TRUE(producer_->expect(command_type::send_receipt));
    ASSERT_EQ(produce(*producer_, 0, 1, 1), 1);  // entry 1
    auto c = connected_client();
    ASSERT_TRUE(read_from(*c, "r", 0, 1, id(1, 0, 2)));
    ASSERT_TRUE(flow(*c, 0, 100));
    const auto ms = take(*c, 2);
    ASSERT_EQ(entries(ms), (std::vector<std::uint64_t>{0, 1}));
    // Indexes 2, 3, 4 still to deliver (1 = not acked); 0 and 1 skipped.
    ASSERT_EQ(ms[0].cmd.message().ack_set_size(), 1);
    EXPECT_EQ(ms[0].cmd.message().ack_set(0), 0b11100);
    EXPECT_EQ(ms[1].cmd.message().ack_set_size(), 0);
    // Index 0 (or none) is the whole batch.
    auto d = connected_client();
    ASSERT_TRUE(read_from(*d, "r0", 0, 1, id(1, 0, 0)));
    ASSERT_TRUE(flow(*d, 0, 100));
    const auto all = take(*d, 2);
    ASSERT_EQ(entries(all), (std::vector<std::uint64_t>{0, 1}));
    EXPECT_EQ(all[0].cmd.message().ack_set_size(), 0);
}

// A seek resets the reader's cursor and disconnects it; the reconnect (whatever
// start_message_id it carries — the Java client sends earliest after a seek by time) goes on
// from the seek position, and GET_LAST_MESSAGE_ID reports it as the mark-delete position.
TEST_F(ReaderTest, SeekByIdAndByTimeOnANonDurableCursor) {
    ASSERT_EQ(produce(*producer_, 0, 6), 6);
    auto c = connected_client();
    ASSERT_TRUE(read_from(*c, "r", 0, 1, id(proto::no_position, proto::no_position)));
    ASSERT_TRUE(flow(*c, 0, 100));
    ASSERT_EQ(take(*c, 6).size(), 6U);

    ASSERT_TRUE(seek(*c, 0, 2, id(1, 3), std::nullopt));
    ASSERT_TRUE(read_from(*c, "r", 1, 3, id(1, 3)));
    c->send([&](proto::frame_buffer& b) {
        return c->writer().get_last_message_id(b, 1, 4).has_value();
    });
    auto last = c->expect(command_type::get_last_message_id_response);
    ASSERT_TRUE(last);
    EXPECT_EQ(last->cmd.getlastmessageidresponse().last_message_id().entryid(), 5U);
    ASSERT_TRUE(last->cmd.getlastmessageidresponse().has_consumer_mark_delete_position());
    EXPECT_EQ(last->cmd.getlastmessageidresponse().consumer_mark_delete_position().entryid(), 2U);
    ASSERT_TRUE(flow(*c, 1, 100));
    EXPECT_EQ(entries(take(*c, 3)), (std::vector<std::uint64_t>{3, 4, 5}));

    // By publish time: the first entry published at or after t0 + 4.
    ASSERT_TRUE(seek(*c, 1, 5, std::nullopt, static_cast<std::uint64_t>(t0 + 4)));
    ASSERT_TRUE(read_from(*c, "r", 2, 6, id(proto::no_position, proto::no_position)));
    ASSERT_TRUE(flow(*c, 2, 100));
    EXPECT_EQ(entries(take(*c, 2)), (std::vector<std::uint64_t>{4, 5}));

    // Back to the start by time, then past the end.
    ASSERT_TRUE(seek(*c, 2, 7, std::nullopt, 0));
    ASSERT_TRUE(read_from(*c, "r", 3, 8, std::nullopt));
    ASSERT_TRUE(flow(*c, 3, 100));
    EXPECT_EQ(take(*c, 6).size(), 6U);
    ASSERT_TRUE(seek(*c, 3, 9, std::nullopt, static_cast<std::uint64_t>(t0 + 1000)));
    ASSERT_TRUE(read_from(*c, "r", 4, 10, id(proto::no_position, proto::no_position)));
    ASSERT_TRUE(flow(*c, 4, 100));
    EXPECT_TRUE(drain(*c, 100ms).empty());
}

// A reader that seeks and never comes back does not keep its cursor forever: the next new
// reader of the topic drops it.
TEST_F(ReaderTest, AbandonedSeekedReaderIsDroppedByTheNextReader) {
    ASSERT_EQ(produce(*producer_, 0, 3), 3);
    {
        auto c = connected_client();
        ASSERT_TRUE(read_from(*c, "gone", 0, 1, id(1, 0)));
        ASSERT_TRUE(seek(*c, 0, 2, id(1, 2), std::nullopt));
    }
    auto d = connected_client();
    ASSERT_TRUE(read_from(*d, "other", 0, 1, id(1, 0)));
    // "gone" was dropped: subscribing to it again starts from its start_message_id.
    ASSERT_TRUE(read_from(*d, "gone", 1, 2, id(1, 0)));
    ASSERT_TRUE(flow(*d, 1, 100));
    EXPECT_EQ(entries(take(*d, 3)), (std::vector<std::uint64_t>{0, 1, 2}));
}

}  // namespace
}  // namespace nereus::broker::test
