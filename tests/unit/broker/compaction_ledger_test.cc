// Compaction over the real ledger backend: a process SIGKILLed between the snapshot object put
// and the record CAS leaves the previous view (no half snapshot visible), the view survives a
// restart (loaded from the record), and the next run publishes.

#include "nereus/broker/ledger_backend.h"
#include "nereus/broker/topic_compaction.h"

#include <gtest/gtest.h>

#include "support/child_process.h"
#include "support/compaction_support.h"
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

    const auto run = nereus::test::run_and_kill({NEREUS_COMPACTION_CRASH_CHILD, dir, topic_name_text},
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

}  // namespace
}  // namespace nereus::broker::test
