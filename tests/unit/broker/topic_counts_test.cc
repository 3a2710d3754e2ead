// topic::messages_in() / bytes_in(): the counts of durable appends. Inside a storage group
// (a wake_batch scope) a run of one topic's completions is counted once, at the run's end; these
// tests drive topic::append over a store that keeps its completions and runs them by hand.

#include "nereus/base/wake_batch.h"
#include "nereus/broker/topic.h"

#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <cstddef>
#include <memory>
#include <rapidcheck/gtest.h>
#include <string>
#include <utility>
#include <vector>

namespace nereus::broker {
namespace {

// Keeps every append's completion; run(i) completes it.
class held_store : public topic_store {
public:
    const std::string& name() const override { return name_; }
    std::uint64_t ledger_id() const override { return 7; }
    void append(std::span<const std::byte> /*entry*/,
                const append_info& /*info*/,
                append_callback done) override {
        held.push_back(std::move(done));
    }
    result<std::shared_ptr<subscription_cursor>> open_subscription(
        const std::string& /*name*/,
        const subscription_start& /*start*/,
        bool /*durable*/) override {
        return nereus::error(std::errc::operation_not_supported);
    }
    result<void> delete_subscription(const std::string& /*name*/) override { return {}; }
    std::vector<std::string> subscription_names() const override { return {}; }
    std::optional<last_entry_info> last_entry() const override { return std::nullopt; }
    topic_details details() const override { return {}; }
    result<void> close() override { return {}; }

    std::vector<append_callback> held;

private:
    std::string name_ = "held";
};

struct fixture {
    boost::asio::io_context ctx;  // first: destroyed last (posted notifies hold topics)
    broker_options options;
    std::vector<std::shared_ptr<held_store>> stores;
    std::vector<std::shared_ptr<topic>> topics;

    explicit fixture(std::size_t n) {
        for (std::size_t i = 0; i < n; ++i) {
            auto name = parse_topic_name("persistent://public/default/t" + std::to_string(i));
            stores.push_back(std::make_shared<held_store>());
            topics.push_back(
                std::make_shared<topic>(*name, stores.back(), ctx.get_executor(), options));
        }
    }
    // Appends `size` bytes of `batch` messages to topic i; `done` gets the result.
    void append(std::size_t i, std::size_t size, std::uint32_t batch, append_done done) {
        std::vector<std::byte> entry(size);
        append_info info;
        info.batch_size = batch;
        topics[i]->append(entry, info, std::move(done));
    }
    void append_to(const std::shared_ptr<topic>& t, std::size_t size, append_done done) {
        std::vector<std::byte> entry(size);
        t->append(entry, append_info{}, std::move(done));
    }
};

result<position> ok(std::uint64_t entry) {
    return position{7, entry};
}
result<position> failed() {
    return nereus::error(std::errc::io_error);
}

TEST(TopicCounts, OutsideAGroupEachSuccessCountsAtOnceAndFailuresNever) {
    fixture f(1);
    int dones = 0;
    f.append(0, 100, 1, [&](result<position> r) { dones += r.has_value() ? 1 : 100; });
    f.append(0, 30, 5, [&](result<position> r) { dones += r.has_value() ? 1 : 100; });
    f.append(0, 40, 1, [&](result<position> r) { dones += r.has_value() ? 1 : 100; });
    f.stores[0]->held[0](ok(0));
    EXPECT_EQ(f.topics[0]->messages_in(), 1U);
    EXPECT_EQ(f.topics[0]->bytes_in(), 100U);
    f.stores[0]->held[1](failed());
    EXPECT_EQ(f.topics[0]->messages_in(), 1U);
    f.stores[0]->held[2](ok(1));
    EXPECT_EQ(f.topics[0]->messages_in(), 2U);
    EXPECT_EQ(f.topics[0]->bytes_in(), 140U);
    EXPECT_EQ(dones, 102);
}

TEST(TopicCounts, AGroupsCountsAreInBeforeAnyWakeUpItsCompletionsRegistered) {
    fixture f(2);
    // Each completion registers a wake-up (as the connection's receipt hand-over does) that
    // reads both topics' counts at the scope's end.
    std::vector<std::pair<std::uint64_t, std::uint64_t>> seen;
    auto reader = [&](result<position> /*r*/) {
        auto read = [](void* fx) {
            auto* self = static_cast<std::pair<fixture*, decltype(seen)*>*>(fx);
            self->second->emplace_back(self->first->topics[0]->messages_in(),
                                       self->first->topics[1]->messages_in());
        };
        auto ctx = std::make_shared<std::pair<fixture*, decltype(seen)*>>(&f, &seen);
        ASSERT_TRUE(wake_batch::defer(ctx, read));
    };
    // Topic 0, 0, 1, 0 (three runs), one failure in the middle.
    f.append(0, 10, 1, reader);
    f.append(0, 20, 2, reader);
    f.append(1, 30, 3, reader);
    f.append(0, 40, 4, reader);
    f.append(0, 50, 5, reader);
    {
        const wake_batch group;
        f.stores[0]->held[0](ok(0));
        f.stores[0]->held[1](ok(1));
        f.stores[1]->held[0](ok(0));
        f.stores[0]->held[2](failed());
        f.stores[0]->held[3](ok(2));
        // Not yet for the last run (topic 0's second): it is added at the scope's end.
        EXPECT_EQ(f.topics[1]->messages_in(), 3U);
        EXPECT_EQ(f.topics[0]->messages_in(), 3U);
    }
    ASSERT_EQ(seen.size(), 5U);
    for (const auto& s : seen) {
        EXPECT_EQ(s.first, 8U);  // 1 + 2 + 5, the failure not counted
        EXPECT_EQ(s.second, 3U);
    }
    EXPECT_EQ(f.topics[0]->bytes_in(), 80U);
    EXPECT_EQ(f.topics[1]->bytes_in(), 30U);
}

TEST(TopicCounts, ARunKeepsItsTopicAliveWhenTheLastDoneDropsTheCallersReference) {
    fixture f(1);
    std::weak_ptr<topic> weak = f.topics[0];
    std::shared_ptr<topic> holder = std::move(f.topics[0]);
    f.topics.clear();
    // The caller's reference goes with the completion (as a connection's producer may hold the
    // topic's last reference): the staged count must still land, on a live topic.
    f.append_to(holder, 64, [&holder](result<position> /*r*/) { holder.reset(); });
    ASSERT_EQ(f.stores[0]->held.size(), 1U);
    std::uint64_t seen = 0;
    {
        const wake_batch group;
        f.stores[0]->held[0](ok(0));
        EXPECT_FALSE(weak.expired());  // the staging (and the posted notify) hold it
        auto probe = [](void* w) {
            auto* p = static_cast<std::pair<std::weak_ptr<topic>, std::uint64_t*>*>(w);
            if (auto t = p->first.lock()) {
                *p->second = t->messages_in();
            }
        };
        auto ctx = std::make_shared<std::pair<std::weak_ptr<topic>, std::uint64_t*>>(weak, &seen);
        ASSERT_TRUE(wake_batch::defer(ctx, probe));
    }
    EXPECT_EQ(seen, 1U);
    f.stores[0]->held.clear();
    f.ctx.run();                  // the posted notify, if any, releases its reference
    EXPECT_TRUE(weak.expired());  // the staging let its reference go at the scope's end
}

// Any mix of topics, sizes, failures and group boundaries: after each group (and each
// completion outside one) the counts are exactly the sums of the successes so far.
RC_GTEST_PROP(TopicCounts, CountsEqualTheSuccessesAfterEveryGroup, ()) {
    const auto n_topics = *rc::gen::inRange<std::size_t>(1, 4);
    fixture f(n_topics);
    std::vector<std::uint64_t> want_msgs(n_topics, 0);
    std::vector<std::uint64_t> want_bytes(n_topics, 0);
    const auto groups = *rc::gen::inRange(1, 8);
    for (int g = 0; g < groups; ++g) {
        const auto in_group = *rc::gen::arbitrary<bool>();
        const auto n = *rc::gen::inRange<std::size_t>(1, 40);
        struct op {
            std::size_t t;
            std::size_t size;
            std::uint32_t batch;
            bool success;
        };
        std::vector<op> ops;
        std::vector<std::size_t> index;  // position of each op's completion in its store
        for (std::size_t i = 0; i < n; ++i) {
            op o{*rc::gen::inRange<std::size_t>(0, n_topics),
                 *rc::gen::inRange<std::size_t>(0, 300), *rc::gen::inRange<std::uint32_t>(1, 10),
                 *rc::gen::weightedElement<bool>({{9, true}, {1, false}})};
            index.push_back(f.stores[o.t]->held.size());
            f.append(o.t, o.size, o.batch, [](result<position> /*r*/) {});
            ops.push_back(o);
        }
        std::optional<wake_batch> scope;
        if (in_group) {
            scope.emplace();
        }
        for (std::size_t i = 0; i < n; ++i) {
            const op& o = ops[i];
            f.stores[o.t]->held[index[i]](o.success ? ok(i) : failed());
            if (o.success) {
                want_msgs[o.t] += o.batch;
                want_bytes[o.t] += o.size;
            }
            if (!in_group) {
                RC_ASSERT(f.topics[o.t]->messages_in() == want_msgs[o.t]);
            }
        }
        scope.reset();
        for (std::size_t t = 0; t < n_topics; ++t) {
            RC_ASSERT(f.topics[t]->messages_in() == want_msgs[t]);
            RC_ASSERT(f.topics[t]->bytes_in() == want_bytes[t]);
            f.stores[t]->held.clear();
        }
    }
}

}  // namespace
}  // namespace nereus::broker
