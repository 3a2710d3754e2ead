#pragma once

// `nereus standalone --config FILE`: a `standalone.conf`-style file of `key=value` lines, read
// with the key names Pulsar's own broker.conf / standalone.conf use where Pulsar has one, so a
// Pulsar user recognises them. Blank lines and lines starting with '#' are ignored; spaces
// around keys and values are trimmed; the last occurrence of a key wins.
//
// Fails closed: an unreadable file, a line without '=', an unknown key, or a value that does
// not parse or is out of range is an error naming the line; nothing is half-applied (the
// options are changed only when the whole file is valid). Command-line flags given explicitly
// override the file (apps/nereus/main.cc applies them after loading it).
//
// Supported keys (Pulsar name → meaning):
//   dataDir                        data directory (Nereus; Pulsar keeps data in BookKeeper)
//   metadataStoreUrl               zk://host:port/root (or Pulsar's zk:host:port/root):
//                                  ZooKeeper metadata; absent: the embedded RocksDB store
//   bindAddress                    address both listeners bind (default 127.0.0.1)
//   brokerServicePort              Pulsar binary protocol port (6650)
//   webServicePort                 admin REST port (8080)
//   advertisedAddress              host put into LOOKUP answers (default: bindAddress)
//   numIOThreads                   io threads of the binary protocol server (1..64)
//   numBlockingThreads             threads of the blocking pool for storage calls (1..64)
//   maxMessageSize                 bytes; advertised in CONNECTED (1 KiB .. 100 MiB)
//   allowAutoTopicCreation         true|false: create non-partitioned topics on first use
//   allowAutoTopicCreationType     non-partitioned (the only supported value)
//   maxUnackedMessagesPerConsumer  a consumer holding this many unacked messages gets no more
//   keepAliveIntervalSeconds       PING interval; a connection silent for two is closed
//   brokerShutdownTimeoutMs        graceful-stop budget for in-flight work
//   dispatcherMaxReadBatchSize     entries read from a cursor per dispatch round
//   dispatcherInlineReads          try dispatch reads on the io thread first (Nereus; false)
//   journalLeaderCommits           an io thread may write the log's group itself (Nereus)
//   journalPipelinedApply          apply large synced groups beside the next sync (Nereus)
//   journalMinSyncIntervalMicros   journal writes start at least this far apart (Nereus; 0)
//   journalPreparedFiles           write the journal into zero-filled files (Nereus; true)
//   journalPrepareMaxMBPerSecond   ... only while it is written slower (Nereus; 256, 0: always)
//   defaultRetentionTimeInMinutes  keep acked data this long (-1 unlimited; 0: delete at once)
//   defaultRetentionSizeInMB       keep the newest this many MB of acked data (-1 unlimited)
//   retentionCheckIntervalInSeconds  period of the retention pass (trims every open topic)
//   managedLedgerMaxEntriesPerLedger  a stream segment rolls at this many entries ...
//   managedLedgerMinLedgerRolloverTimeMinutes  ... once it is this old (segments are what
//                                  retention deletes)
//
// Thread-safety: a pure function of its inputs.

#include "nereus/broker/standalone.h"

#include <tl/expected.hpp>

#include <string>
#include <string_view>

namespace nereus::broker {

struct config_error {
    std::string path;
    int line = 0;  // 0: the file as a whole (e.g. unreadable)
    std::string message;

    std::string to_string() const;
};

// Parses `text` (the file's content; `path` only names it in errors) into `options`.
[[nodiscard]] tl::expected<void, config_error> parse_standalone_config(std::string_view text,
                                                                       const std::string& path,
                                                                       standalone_options& options);

// Reads and parses the file at `path`.
[[nodiscard]] tl::expected<void, config_error> load_standalone_config(const std::string& path,
                                                                      standalone_options& options);

}  // namespace nereus::broker
