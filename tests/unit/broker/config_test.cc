// `--config FILE` parsing: Pulsar key names, comments, precedence inside the file, and every
// kind of bad input failing closed (error with the line, options untouched).
#include "nereus/broker/config.h"

#include "nereus/broker/ledger_backend.h"
#include "nereus/storage/types.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <unistd.h>

namespace nereus::broker {
namespace {

TEST(StandaloneConfig, ParsesPulsarKeysCommentsAndSpaces) {
    standalone_options o;
    auto r = parse_standalone_config(
        "# a comment\n"
        "\n"
        "  brokerServicePort = 6651\n"
        "webServicePort=8081\r\n"
        "bindAddress=0.0.0.0\n"
        "advertisedAddress=broker-1.example\n"
        "dataDir=/var/lib/nereus\n"
        "numIOThreads=8\n"
        "numBlockingThreads=5\n"
        "maxMessageSize=1048576\n"
        "allowAutoTopicCreation=false\n"
        "allowAutoTopicCreationType=non-partitioned\n"
        "maxUnackedMessagesPerConsumer=1000\n"
        "keepAliveIntervalSeconds=5\n"
        "brokerShutdownTimeoutMs=100\n"
        "dispatcherMaxReadBatchSize=32\n"
        "dispatcherInlineReads=true\n"
        "journalLeaderCommits=true\n"
        "journalPipelinedApply=false\n"
        "journalMinSyncIntervalMicros=700\n"
        "journalPreparedFiles=false\n"
        "journalPrepareMaxMBPerSecond=0\n",
        "t.conf", o);
    ASSERT_TRUE(r) << r.error().to_string();
    EXPECT_EQ(o.port, 6651);
    EXPECT_EQ(o.http_port, 8081);
    EXPECT_EQ(o.bind_address, "0.0.0.0");
    EXPECT_EQ(o.advertised_address, "broker-1.example");
    EXPECT_EQ(o.data_dir, "/var/lib/nereus");
    EXPECT_EQ(o.io_threads, 8u);
    EXPECT_EQ(o.blocking_threads, 5u);
    EXPECT_EQ(o.max_message_size, 1048576u);
    EXPECT_FALSE(o.auto_create_topics);
    EXPECT_EQ(o.max_unacked_per_consumer, 1000u);
    EXPECT_EQ(o.keepalive_interval_s, 5u);
    EXPECT_EQ(o.stop_timeout_ms, 100u);
    EXPECT_EQ(o.dispatch_batch, 32u);
    EXPECT_TRUE(o.inline_reads);              // off by default
    EXPECT_TRUE(o.leader_commits);            // off by default
    EXPECT_FALSE(o.pipelined_apply);          // on by default
    EXPECT_EQ(o.min_sync_interval_us, 700u);  // 0 by default
    EXPECT_FALSE(o.prepared_journal_files);   // on by default
    EXPECT_EQ(o.prepare_max_mib_s, 0u);       // 256 by default
    // The broker's defaults are the stream log's own.
    const standalone_options d;
    const storage::store_options so;
    const ledger_backend_options lo;
    EXPECT_EQ(d.prepared_journal_files, so.prepare_journal_files);
    EXPECT_EQ(std::uint64_t{d.prepare_max_mib_s} << 20, so.prepare_max_bytes_per_s);
    EXPECT_EQ(lo.prepare_journal_files, so.prepare_journal_files);
    EXPECT_EQ(lo.prepare_max_bytes_per_s, so.prepare_max_bytes_per_s);
    for (const char* bad : {"journalPrepareMaxMBPerSecond=-1\n",
                            "journalPrepareMaxMBPerSecond=1000001\n", "journalPreparedFiles=2\n"}) {
        standalone_options b;
        EXPECT_FALSE(parse_standalone_config(bad, "bad.conf", b)) << bad;
        EXPECT_EQ(b.prepare_max_mib_s, 256u) << bad;
    }
    for (const char* bad :
         {"journalMinSyncIntervalMicros=-1\n", "journalMinSyncIntervalMicros=100001\n",
          "journalMinSyncIntervalMicros=1ms\n"}) {
        standalone_options b;
        EXPECT_FALSE(parse_standalone_config(bad, "bad.conf", b)) << bad;
        EXPECT_EQ(b.min_sync_interval_us, 0u) << bad;
    }
}

TEST(StandaloneConfig, MetadataStoreUrlTakesZooKeeperUrlsOnly) {
    standalone_options o;
    EXPECT_TRUE(o.metadata_url.empty());  // the embedded RocksDB store by default
    ASSERT_TRUE(
        parse_standalone_config("metadataStoreUrl=zk://127.0.0.1:2181/nereus\n", "t.conf", o));
    EXPECT_EQ(o.metadata_url, "zk://127.0.0.1:2181/nereus");
    ASSERT_TRUE(parse_standalone_config("metadataStoreUrl=zk:h1:2181,h2:2181/n\n", "t.conf", o));
    EXPECT_EQ(o.metadata_url, "zk://h1:2181,h2:2181/n");
    for (const char* bad : {"metadataStoreUrl=\n", "metadataStoreUrl=rocksdb:/x\n",
                            "metadataStoreUrl=etcd://h:1\n", "metadataStoreUrl=zk://\n"}) {
        standalone_options p;
        auto r = parse_standalone_config(bad, "t.conf", p);
        ASSERT_FALSE(r) << bad;
        EXPECT_EQ(r.error().line, 1);
        EXPECT_TRUE(p.metadata_url.empty());
    }
}

TEST(StandaloneConfig, EmptyFileKeepsDefaultsAndLastOccurrenceWins) {
    standalone_options o;
    ASSERT_TRUE(parse_standalone_config("", "t.conf", o));
    EXPECT_EQ(o.port, 6650);
    EXPECT_EQ(o.http_port, 8080);
    EXPECT_TRUE(o.auto_create_topics);
    ASSERT_TRUE(parse_standalone_config("brokerServicePort=1\nbrokerServicePort=2", "t.conf", o));
    EXPECT_EQ(o.port, 2);
}

// Each bad file: an error naming the line, and the options exactly as before.
TEST(StandaloneConfig, RetentionKeysUsePulsarNamesAndMinusOneIsUnlimited) {
    standalone_options o;
    EXPECT_EQ(o.retention_time_minutes, 0);  // Pulsar's defaults: acked data is deleted
    EXPECT_EQ(o.retention_size_mb, 0);
    EXPECT_EQ(o.retention_check_interval_s, 120u);
    auto r = parse_standalone_config(
        "defaultRetentionTimeInMinutes=-1\n"
        "defaultRetentionSizeInMB=512\n"
        "retentionCheckIntervalInSeconds=5\n",
        "t.conf", o);
    ASSERT_TRUE(r) << r.error().to_string();
    EXPECT_EQ(o.retention_time_minutes, -1);
    EXPECT_EQ(o.retention_size_mb, 512);
    EXPECT_EQ(o.retention_check_interval_s, 5u);
    for (const char* bad :
         {"defaultRetentionTimeInMinutes=-2\n", "defaultRetentionSizeInMB=x\n",
          "retentionCheckIntervalInSeconds=0\n", "managedLedgerMaxEntriesPerLedger=0\n",
          "managedLedgerMinLedgerRolloverTimeMinutes=-1\n"}) {
        standalone_options b;
        EXPECT_FALSE(parse_standalone_config(bad, "bad.conf", b)) << bad;
        EXPECT_EQ(b.retention_time_minutes, 0) << bad;
    }
}

TEST(StandaloneConfig, SegmentRollKeysUsePulsarNamesAndDefaults) {
    standalone_options o;
    EXPECT_EQ(o.max_entries_per_ledger, 50'000U);  // Pulsar's defaults
    EXPECT_EQ(o.min_ledger_rollover_minutes, 10U);
    auto r = parse_standalone_config(
        "managedLedgerMaxEntriesPerLedger=1000\n"
        "managedLedgerMinLedgerRolloverTimeMinutes=0\n",
        "t.conf", o);
    ASSERT_TRUE(r) << r.error().to_string();
    EXPECT_EQ(o.max_entries_per_ledger, 1000U);
    EXPECT_EQ(o.min_ledger_rollover_minutes, 0U);
}

TEST(StandaloneConfig, BadInputFailsClosedWithTheLine) {
    struct bad_case {
        const char* text;
        int line;
        const char* needle;
    };
    const bad_case cases[] = {
        {"brokerServicePort=7000\nnot a key value line\n", 2, "expected key=value"},
        {"brokerServicePort=7000\nbrokerServicePrt=1\n", 2, "unknown key 'brokerServicePrt'"},
        {"brokerServicePort=70000\n", 1, "outside 0..65535"},
        {"brokerServicePort=-1\n", 1, "not a non-negative integer"},
        {"brokerServicePort=12ab\n", 1, "not a non-negative integer"},
        {"brokerServicePort=\n", 1, "not a non-negative integer"},
        {"numIOThreads=0\n", 1, "outside 1..64"},
        {"maxMessageSize=1\n", 1, "outside"},
        {"allowAutoTopicCreation=yes\n", 1, "neither true nor false"},
        {"allowAutoTopicCreationType=partitioned\n", 1, "only non-partitioned"},
        {"dataDir=\n", 1, "empty"},
        {"brokerServicePort=99999999999999999999999\n", 1, "not a non-negative integer"},
    };
    for (const auto& c : cases) {
        standalone_options o;
        o.port = 1234;
        auto r = parse_standalone_config(c.text, "bad.conf", o);
        ASSERT_FALSE(r) << c.text;
        EXPECT_EQ(r.error().line, c.line) << c.text;
        EXPECT_NE(r.error().to_string().find(c.needle), std::string::npos) << r.error().to_string();
        EXPECT_EQ(r.error().to_string().rfind("bad.conf:", 0), 0u) << r.error().to_string();
        EXPECT_EQ(o.port, 1234) << "a bad file must change nothing: " << c.text;
    }
}

TEST(StandaloneConfig, LoadsAFileAndReportsAnUnreadableOne) {
    const auto path = std::filesystem::temp_directory_path() /
                      ("nereus-config-test-" + std::to_string(::getpid()));
    {
        std::ofstream out(path);
        out << "webServicePort=9090\n";
    }
    standalone_options o;
    auto r = load_standalone_config(path.string(), o);
    std::filesystem::remove(path);
    ASSERT_TRUE(r) << r.error().to_string();
    EXPECT_EQ(o.http_port, 9090);

    auto missing = load_standalone_config(path.string(), o);
    ASSERT_FALSE(missing);
    EXPECT_EQ(missing.error().line, 0);
    EXPECT_NE(missing.error().to_string().find("cannot be read"), std::string::npos);
}

}  // namespace
}  // namespace nereus::broker
