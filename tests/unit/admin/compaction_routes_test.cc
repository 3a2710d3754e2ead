// PUT/GET .../compaction and the compaction fields of stats/internalStats, over the ledger
// backend (doc/compaction.md).

#include "support/admin_fixture.h"
#include "support/wire_helpers.h"
#include <boost/json.hpp>
#include <chrono>
#include <thread>

namespace nereus::admin::test {
namespace {

// "<prefix><n>" (without operator+(const char*, std::string&&): GCC bug 105329's -Wrestrict).
template <class N>
std::string cat(const char* prefix, N n) {
    std::string s(prefix);
    s.append(std::to_string(n));
    return s;
}

constexpr std::string_view topic = "persistent://public/default/cmp";
const std::string base = "/admin/v2/persistent/public/default/cmp";

TEST_F(AdminTest, CompactionTriggerStatusAndStats) {
    auto p = wire();
    ASSERT_TRUE(create_producer(*p, topic, 0));
    for (int i = 0; i < 6; ++i) {
        ASSERT_TRUE(
            p->send_message(0, static_cast<std::uint64_t>(i), cat("v", i), 0, cat("k", i % 2)));
        ASSERT_TRUE(p->expect(proto::command_type::send_receipt));
    }
    auto st = http_->get(base + "/compaction");
    ASSERT_TRUE(st);
    ASSERT_EQ(st->status, 200U);
    EXPECT_EQ(st->json().at("status"), "NOT_RUN");
    EXPECT_EQ(st->json().at("lastError"), "");
    auto internal = http_->get(base + "/internalStats");
    ASSERT_TRUE(internal);
    EXPECT_EQ(internal->json().at("compactedLedger").at("ledgerId"), -1);

    auto r = http_->put(base + "/compaction");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 202U) << r->body;
    std::string status;
    for (int i = 0; i < 500; ++i) {
        st = http_->get(base + "/compaction");
        ASSERT_TRUE(st);
        status = std::string(st->json().at("status").as_string());
        if (status != "RUNNING") {
            break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    EXPECT_EQ(status, "SUCCESS");

    internal = http_->get(base + "/internalStats");
    ASSERT_TRUE(internal);
    const auto v = internal->json();
    const auto& cl = v.at("compactedLedger");
    EXPECT_EQ(cl.at("entries"), 2);
    EXPECT_EQ(cl.at("keys"), 2);
    const auto ledger = cl.at("ledgerId").as_int64();
    EXPECT_EQ(std::string(v.at("compactionHorizon").as_string()), std::to_string(ledger) + ":5");
    auto stats = http_->get(base + "/stats");
    ASSERT_TRUE(stats);
    EXPECT_EQ(stats->json().at("compaction").at("lastCompactionRemovedEventCount"), 4);
    EXPECT_EQ(std::string(stats->json().at("compactionHorizon").as_string()),
              std::to_string(ledger) + ":5");

    // Unknown topic: 404.
    auto missing = http_->put("/admin/v2/persistent/public/default/nope/compaction");
    ASSERT_TRUE(missing);
    EXPECT_EQ(missing->status, 404U);
}

}  // namespace
}  // namespace nereus::admin::test
