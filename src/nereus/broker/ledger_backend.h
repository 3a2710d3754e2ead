#pragma once

// The production topic_backend: topics are nereus::ledger managed ledgers over one data
// directory — metadata (cursor roots, topic registry, owner session) in RocksDB at D/meta, the
// stream log at D/streams, cursor snapshots at D/objects.
//
// One owner session per backend (per broker process), kept alive by a small thread; a
// restarted process opens a new session, which expires the dead one's ownership.
//
// With `metadata_url` = zk://... (doc/ownership.md) the metadata lives in ZooKeeper and several
// processes may share it and the data directory: a topic is opened only after this broker
// created its ephemeral ownership node (owners/<topic>, holding the advertised addresses); it
// then takes over the topic's stream log (its own generation directory under
// data_dir/shared/<topic>/) and runs the ledger's writable open. Appends are confirmed through
// the confirm gate (confirm_gate.h); a topic whose gate is fenced, or every topic when the owner
// session expired, is lost: abandoned without release writes and reported to the server's
// lost handler. The embedded RocksDB path (no metadata_url) is unchanged.
//
// Ownership: owns the three stores, the session and every managed_ledger it opened; must
//   outlive the server that uses it. close() (or the destructor) closes the ledgers and stores.
// Thread-safety: thread-safe (see topic_backend.h). Completions run on the stream log's
//   committer thread or the metadata store's callback thread.
// Durability: append and ack completions, seeks and subscription creation/deletion are
//   durable when reported (ledger/managed_ledger.h); with ZooKeeper metadata an append is also
//   confirmed under this broker's ownership (the stream CAS) before it completes.

#include "nereus/base/result.h"
#include "nereus/broker/topic_backend.h"

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

namespace nereus {
class file_system;
}
namespace nereus::meta {
class store;
}

namespace nereus::broker {

struct ledger_backend_options {
    std::string data_dir = "./data";
    // Empty: the embedded RocksDB store at data_dir/meta. Otherwise a meta::make_store url
    // (zk://host:port/root[?session_timeout_ms=N]); the owner session then lives as long as
    // the ZooKeeper session timeout without a keep-alive.
    std::string metadata_url;
    bool auto_create = true;
    // Test seams (fault injection, tests/unit/broker/fault_injection_test.cc); null means
    // production. `fs` (shared) holds the stream log and the object store instead of the POSIX
    // file system; `meta` (borrowed, must outlive the backend) replaces RocksDB at D/meta.
    std::shared_ptr<file_system> fs;
    meta::store* meta = nullptr;

    // Retention (doc/configuration.md, doc/ledger.md "Retention"), Pulsar's semantics: data
    // every durable subscription acked (below the slowest cursor's mark-delete position, or
    // everything when the topic has no subscription) is deleted once it is older than
    // `retention_time_ms` OR outside the newest `retention_size_bytes`; -1 = unlimited for that
    // rule. The defaults (0, 0) are Pulsar's: acked data goes at the next retention pass. Every
    // topic opened gets this policy (written to its retention root when it differs).
    std::int64_t retention_time_ms = 0;
    std::int64_t retention_size_bytes = 0;
    // The periodic retention pass: every this often, one ledger trim per open topic
    // (managed_ledger::trim: protection floor, PROTECTION_PENDING and reservations respected,
    // crash-safe). Zero: no periodic pass (run_retention() still works).
    std::chrono::milliseconds retention_interval{0};
    // Stream segment roll by entry count, once the segment is `segment_min_age` old
    // (storage::store_options; Pulsar's managedLedgerMaxEntriesPerLedger /
    // managedLedgerMinLedgerRolloverTimeMinutes). Retention deletes whole sealed segments
    // only, so without this a small topic never frees its acked data. 0: bytes only (64 MiB).
    std::uint64_t segment_max_entries = 0;
    std::chrono::milliseconds segment_min_age{0};
    // storage::store_options::leader_commits for the embedded stream log (not the per-topic
    // stores of a shared data directory): an io thread that appends to an idle log at a low
    // rate writes the group itself (storage/README.md, "Leader commits"). Off by default.
    bool leader_commits = false;
    // storage::store_options::pipelined_apply for the embedded stream log: its segment copies and
    // completions overlap the next group's journal sync at high rates (storage/README.md).
    bool pipelined_apply = true;
    // storage::store_options::min_sync_interval for the embedded stream log: its journal writes
    // start at least this far apart (a cap on its sync rate; 0: none).
    std::chrono::microseconds min_sync_interval{0};
    // storage::store_options::prepare_journal_files and prepare_max_bytes_per_s for the embedded
    // stream log: its journal is written into prepared (zero-filled) files while it is written
    // slower than the rate (0: at any rate). The same defaults as store_options (a broker test
    // checks them).
    bool prepare_journal_files = true;
    std::uint64_t prepare_max_bytes_per_s = 256ULL << 20;
    // Tests: the ledgers' persistence-step hook (ledger::ledger_options::fault_hook).
    std::function<bool(std::string_view)> ledger_fault_hook;
};

// What one retention pass did.
struct retention_pass_report {
    std::size_t topics = 0;     // topics the pass ran on
    std::uint64_t trimmed = 0;  // entries below the new first entries (logical)
    std::size_t errors = 0;     // topics whose trim failed (logged; retried next pass)
};

class ledger_backend : public topic_backend {
public:
    // Opens (creating) the stores under data_dir and an owner session.
    // Errors: the stores' open errors (e.g. io_error when another process holds the directory).
    [[nodiscard]] static result<std::unique_ptr<ledger_backend>> open(ledger_backend_options o);

    // One retention pass now over every open topic (what the periodic pass runs). Blocking;
    // durable when it returns (each topic's trim is). Not on a storage or metadata thread.
    virtual retention_pass_report run_retention() = 0;

    // Closes every opened ledger, the session and the stores. Idempotent.
    virtual result<void> close() = 0;
};

}  // namespace nereus::broker
