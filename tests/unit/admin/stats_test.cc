// stats and /metrics.

#include "nereus/admin/rate_sampler.h"

#include "support/admin_fixture.h"
#include "support/wire_helpers.h"
#include <boost/json.hpp>

namespace nereus::admin::test {
namespace {

namespace json = boost::json;

constexpr std::string_view topic = "persistent://public/default/st";
const std::string base = "/admin/v2/persistent/public/default/st";

TEST_F(AdminTest, TopicStatsCountsProducersSubscriptionsAndMessages) {
    auto p = wire();
    ASSERT_TRUE(create_producer(*p, topic, 0));
    auto c = wire();
    ASSERT_TRUE(subscribe(*c, topic, "s", 0, 100, true, /*shared=*/1));
    ASSERT_EQ(produce(*p, 0, 3), 3);
    ASSERT_EQ(receive(*c, 3).size(), 3U);
    auto r = http_->get(base + "/stats");
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 200U);
    const auto v = r->json();
    EXPECT_EQ(v.at("msgInCounter"), 3);
    EXPECT_GT(v.at("bytesInCounter").as_int64(), 0);
    EXPECT_EQ(v.at("msgOutCounter"), 3);
    EXPECT_EQ(v.at("publishers").as_array().size(), 1U);
    const auto& s = v.at("subscriptions").at("s");
    EXPECT_EQ(s.at("type"), "Shared");
    EXPECT_EQ(s.at("msgBacklog"), 3);
    EXPECT_EQ(s.at("unackedMessages"), 3);
    EXPECT_EQ(s.at("consumers").as_array().size(), 1U);
    EXPECT_EQ(s.at("isDurable"), true);
}

TEST_F(AdminTest, TrimShowsTheTrimmedFirstEntryInInternalStatsBacklogUnaffected) {
    auto p = wire();
    ASSERT_TRUE(create_producer(*p, topic, 0));
    auto c = wire();
    ASSERT_TRUE(subscribe(*c, topic, "slow", 0, 100));
    auto c2 = wire();
    ASSERT_TRUE(subscribe(*c2, topic, "fast", 1, 100));
    ASSERT_EQ(produce(*p, 0, 10), 10);
    auto got = receive(*c, 10);
    ASSERT_EQ(got.size(), 10U);
    ASSERT_EQ(receive(*c2, 10).size(), 10U);
    ASSERT_TRUE(ack(*c2, 1, got[9].ledger_id, 9, /*cumulative=*/true));  // fast: all
    ASSERT_TRUE(ack(*c, 0, got[3].ledger_id, 3, /*cumulative=*/true));   // slow: 0..3
    EXPECT_EQ(status("POST", base + "/trim"), 204U);
    auto r = http_->get(base + "/internalStats");
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 200U);
    const auto v = r->json();
    const auto& ledger = v.at("ledgers").as_array().at(0);
    EXPECT_EQ(ledger.at("firstEntry"), 4);  // the slowest subscription's mark-delete + 1
    EXPECT_EQ(ledger.at("end"), 10);
    EXPECT_LE(ledger.at("firstStoredEntry").as_int64(), 4);  // whole segments only
    EXPECT_EQ(v.at("numberOfEntries"), 6);
    EXPECT_EQ(std::string(v.at("cursors").at("slow").at("markDeletePosition").as_string()),
              std::to_string(got[3].ledger_id) + ":3");
    auto st = http_->get(base + "/stats")->json();
    EXPECT_EQ(st.at("subscriptions").at("slow").at("msgBacklog"), 6);
    EXPECT_EQ(st.at("subscriptions").at("fast").at("msgBacklog"), 0);
    EXPECT_EQ(status("POST", "/admin/v2/persistent/public/default/missing/trim"), 404U);
}

TEST_F(AdminTest, MetricsInPrometheusText) {
    auto p = wire();
    ASSERT_TRUE(create_producer(*p, topic, 0));
    auto c = wire();
    ASSERT_TRUE(subscribe(*c, topic, "s", 0, 100));
    ASSERT_EQ(produce(*p, 0, 2), 2);
    ASSERT_EQ(receive(*c, 2).size(), 2U);
    auto r = http_->get("/metrics");
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 200U);
    EXPECT_EQ(r->content_type.rfind("text/plain", 0), 0U);
    const auto& m = r->body;
    const std::string l =
        R"(cluster="standalone",namespace="public/default",topic="persistent://public/default/st")";
    EXPECT_NE(m.find("pulsar_topics_count{cluster=\"standalone\"} 1\n"), std::string::npos) << m;
    EXPECT_NE(m.find("pulsar_producers_count{" + l + "} 1\n"), std::string::npos) << m;
    EXPECT_NE(m.find("pulsar_consumers_count{" + l + "} 1\n"), std::string::npos) << m;
    EXPECT_NE(m.find("pulsar_in_messages_total{" + l + "} 2\n"), std::string::npos) << m;
    EXPECT_NE(m.find("pulsar_out_messages_total{" + l + "} 2\n"), std::string::npos) << m;
    EXPECT_NE(m.find("pulsar_subscription_back_log{" + l + ",subscription=\"s\"} 2\n"),
              std::string::npos)
        << m;
    EXPECT_NE(m.find("# TYPE pulsar_in_messages_total counter"), std::string::npos);
}

namespace {
// The value of an unlabelled-but-cluster series in Prometheus text; -1 when absent.
long long metric(const std::string& text, const std::string& name) {
    const auto key = name + "{cluster=\"standalone\"} ";
    const auto at = text.find("\n" + key);
    if (at == std::string::npos) {
        return -1;
    }
    return std::stoll(text.substr(at + 1 + key.size()));
}
}  // namespace

// The stream log's counters: every durable entry is one append, and at least one sync.
TEST_F(AdminTest, MetricsCarryTheStreamLogCounters) {
    auto before = http_->get("/metrics");
    ASSERT_TRUE(before);
    const auto appends0 = metric(before->body, "nereus_log_appends_total");
    const auto syncs0 = metric(before->body, "nereus_log_syncs_total");
    const auto bytes0 = metric(before->body, "nereus_log_journal_bytes_total");
    const auto published0 = metric(before->body, "nereus_broker_publish_latency_seconds_count");
    ASSERT_GE(published0, 0) << before->body;
    ASSERT_GE(appends0, 0) << before->body;
    ASSERT_GE(syncs0, 0);
    auto p = wire();
    ASSERT_TRUE(create_producer(*p, topic, 0));
    ASSERT_EQ(produce(*p, 0, 5), 5);  // each receipt waited for: five durable entries
    auto r = http_->get("/metrics");
    ASSERT_TRUE(r);
    const auto& m = r->body;
    // The topic's creation may append too (none today), so at least, not exactly.
    EXPECT_GE(metric(m, "nereus_log_appends_total") - appends0, 5) << m;
    EXPECT_GE(metric(m, "nereus_log_syncs_total") - syncs0, 1) << m;
    EXPECT_LE(metric(m, "nereus_log_syncs_total") - syncs0,
              metric(m, "nereus_log_appends_total") - appends0);
    EXPECT_GT(metric(m, "nereus_log_journal_bytes_total"), bytes0);
    for (const char* name :
         {"nereus_log_checkpoints_total", "nereus_log_journal_rolls_total",
          "nereus_log_partial_spares_total", "nereus_log_fill_stops_total",
          "nereus_log_partial_spares_passed_total", "nereus_log_leader_commits_total",
          "nereus_log_pipelined_applies_total", "nereus_log_paced_commits_total",
          "nereus_log_segment_rolls_total", "nereus_log_prepared_journals_total",
          "nereus_log_spares_skipped_total", "nereus_log_spares_asked_total"}) {
        EXPECT_GE(metric(m, name), 0) << name;
    }
    EXPECT_NE(m.find("# TYPE nereus_log_syncs_total counter"), std::string::npos);
    // The broker's publish latency: one count per receipted SEND (recorded before its receipt
    // is written, so all five are in).
    EXPECT_EQ(metric(m, "nereus_broker_publish_latency_seconds_count") - published0, 5) << m;
    EXPECT_NE(m.find("# TYPE nereus_broker_publish_latency_seconds histogram"), std::string::npos);
    // The commit-latency histograms: one count per sync, cumulative buckets ending at +Inf.
    const auto syncs = metric(m, "nereus_log_syncs_total");
    for (const std::string name :
         {"nereus_log_commit_wait_seconds", "nereus_log_journal_write_seconds",
          "nereus_log_commit_apply_seconds"}) {
        EXPECT_NE(m.find("# TYPE " + name + " histogram"), std::string::npos) << name;
        const auto count = metric(m, name + "_count");
        // commit_apply is recorded after the completions, so its last block may still be out.
        EXPECT_GE(count, syncs - (name == "nereus_log_commit_apply_seconds" ? 1 : 0)) << name;
        EXPECT_LE(count, syncs) << name;
        const auto inf = name + "_bucket{cluster=\"standalone\",le=\"+Inf\"} ";
        const auto at = m.find("\n" + inf);
        ASSERT_NE(at, std::string::npos) << name;
        EXPECT_EQ(std::stoll(m.substr(at + 1 + inf.size())), count) << name;
        long long last = 0;
        for (std::size_t pos = m.find("\n" + name + "_bucket{"); pos != std::string::npos;
             pos = m.find("\n" + name + "_bucket{", pos + 1)) {
            const auto v = std::stoll(m.substr(m.find("} ", pos) + 2));
            EXPECT_GE(v, last) << name << " buckets must be cumulative";
            last = v;
        }
        EXPECT_NE(m.find("\n" + name + "_bucket{cluster=\"standalone\",le=\"0.001\"} "),
                  std::string::npos)
            << m;
    }
}

// Rates come from the last two samples of the counters (Pulsar's statsUpdateFrequencyInSecs).
TEST_F(AdminTest, RatesAreCounterGrowthBetweenTheLastTwoSamples) {
    auto p = wire();
    ASSERT_TRUE(create_producer(*p, topic, 0));
    auto c = wire();
    ASSERT_TRUE(subscribe(*c, topic, "s", 0, 100, true, /*shared=*/1));
    const auto t0 = rate_sampler::clock::now();
    admin_->rates().sample_at(t0);
    ASSERT_EQ(produce(*p, 0, 4), 4);
    ASSERT_EQ(receive(*c, 4).size(), 4U);

    auto before = http_->get(base + "/stats");
    ASSERT_TRUE(before);
    EXPECT_EQ(before->json().at("msgRateIn").as_double(), 0.0);  // one sample: no rate yet

    admin_->rates().sample_at(t0 + std::chrono::seconds(2));
    auto r = http_->get(base + "/stats");
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 200U);
    const auto v = r->json();
    EXPECT_DOUBLE_EQ(v.at("msgRateIn").as_double(), 2.0);
    EXPECT_DOUBLE_EQ(v.at("msgRateOut").as_double(), 2.0);
    const auto bytes_in = v.at("bytesInCounter").as_int64();
    EXPECT_DOUBLE_EQ(v.at("msgThroughputIn").as_double(), static_cast<double>(bytes_in) / 2.0);
    EXPECT_GT(v.at("msgThroughputOut").as_double(), 0.0);
    const auto& s = v.at("subscriptions").at("s");
    EXPECT_DOUBLE_EQ(s.at("msgRateOut").as_double(), 2.0);
    EXPECT_DOUBLE_EQ(s.at("msgRateRedeliver").as_double(), 0.0);

    auto m = http_->get("/metrics");
    ASSERT_TRUE(m);
    EXPECT_NE(m->body.find(R"(pulsar_rate_in{cluster="standalone",namespace="public/default",)"
                           R"(topic="persistent://public/default/st"} 2)"),
              std::string::npos)
        << m->body;

    // A quiet interval brings the rates back to 0.
    admin_->rates().sample_at(t0 + std::chrono::seconds(4));
    auto q = http_->get(base + "/stats");
    ASSERT_TRUE(q);
    EXPECT_EQ(q->json().at("msgRateIn").as_double(), 0.0);
    EXPECT_EQ(q->json().at("msgRateOut").as_double(), 0.0);
}

}  // namespace
}  // namespace nereus::admin::test
