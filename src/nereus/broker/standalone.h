#pragma once

// `nereus standalone`: a single-node broker over the ledger backend in one data directory,
// serving until SIGTERM or SIGINT, then stopping gracefully (in-flight appends answered,
// clients closed, ledgers and stores closed).
// Thread-safety: call once, from the main thread, before other threads exist.

#include "nereus/base/result.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace nereus::broker {

struct standalone_options {
    std::string data_dir = "./data";
    // Metadata store: empty = the embedded RocksDB store at data_dir/meta (the default);
    // "zk://host:port[,host:port]/root[?session_timeout_ms=N]" = ZooKeeper (doc/ownership.md):
    // topics are then owned through ephemeral ownership nodes and several brokers may share
    // one ZooKeeper and one data directory.
    std::string metadata_url;
    std::string bind_address = "127.0.0.1";
    std::uint16_t port = 6650;
    std::uint16_t http_port = 8080;  // admin REST (src/nereus/admin), on bind_address
    unsigned io_threads = 4;
    unsigned blocking_threads = 16;  // topic opens, cursor create/delete/seek/reads

    // Tuning, also settable in the --config file (config.h lists the keys).
    std::string advertised_address;  // host in LOOKUP answers; empty: bind_address
    std::uint32_t max_message_size = 5 * 1024 * 1024;
    bool auto_create_topics = true;
    std::uint32_t max_unacked_per_consumer = 50'000;
    std::uint32_t keepalive_interval_s = 30;
    std::uint32_t stop_timeout_ms = 5'000;
    std::uint32_t dispatch_batch = 1'000;
    bool inline_reads = false;               // broker_options::inline_reads
    bool leader_commits = false;             // storage::store_options::leader_commits
    bool pipelined_apply = true;             // storage::store_options::pipelined_apply
    std::uint32_t min_sync_interval_us = 0;  // storage::store_options::min_sync_interval
    bool prepared_journal_files = true;      // storage::store_options::prepare_journal_files
    std::uint32_t prepare_max_mib_s = 256;   // store_options::prepare_max_bytes_per_s, MiB/s
    std::uint32_t stats_interval_s = 60;     // admin stats' rates: counters sampled this often
    // Retention (Pulsar's defaultRetentionTimeInMinutes / defaultRetentionSizeInMB, -1 =
    // unlimited; 0/0: data acked by every subscription is deleted) and the period of the
    // retention pass (retentionCheckIntervalInSeconds). doc/configuration.md.
    std::int64_t retention_time_minutes = 0;
    std::int64_t retention_size_mb = 0;
    std::uint32_t retention_check_interval_s = 120;
    // Stream segment roll by entry count once the segment is old enough (Pulsar's
    // managedLedgerMaxEntriesPerLedger / managedLedgerMinLedgerRolloverTimeMinutes, Pulsar's
    // defaults): retention deletes whole sealed segments only. 64 MiB rolls regardless.
    std::uint64_t max_entries_per_ledger = 50'000;
    std::uint32_t min_ledger_rollover_minutes = 10;
};

class server;
class topic_backend;

// A service run beside the broker (the admin REST API, which lives in a module above this one,
// so the CLI passes it in): started once the broker listens, stopped before the broker stops.
class standalone_service {
public:
    virtual ~standalone_service() = default;
    [[nodiscard]] virtual result<void> start() = 0;
    virtual void stop() = 0;
};
using standalone_service_factory = std::function<result<std::unique_ptr<standalone_service>>(
    server&, topic_backend&, const standalone_options&)>;

// Returns the process exit status: 0 after a graceful stop, 1 when the broker cannot start.
// `extra` failing to start is logged and the broker serves without it.
int run_standalone(const standalone_options& options, standalone_service_factory extra = {});

}  // namespace nereus::broker
