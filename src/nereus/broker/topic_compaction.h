#pragma once

// One topic's compaction (Pulsar's compacted topics; doc/compaction.md): the compaction job,
// its status (Pulsar's LongRunningProcessStatus) and the topic's current compacted view, which
// read_compacted subscriptions deliver (subscription.h).
//
// The view is published by one metadata record, admin record `compaction/<escaped topic>`
// (doc/format/compaction.md), holding the snapshot object's name AND the horizon (the view's
// `end`): the object is written first (immutable, durable), then the record is written by
// compare-and-set against the record the job started from. So the snapshot and its barrier
// change together or not at all; a crash between the object put and the CAS leaves the old
// record, hence the old view, and an unreferenced object (removed by the next successful run
// of this topic... or left, harmless).
//
// The job reads the entries after the previous horizon through a durable cursor
// `__compaction` (as Pulsar does): the cursor protects those entries from trimming while they
// are read, and is acked up to the new horizon once the record is written. The horizon is the
// topic's end when the job starts; entries appended meanwhile are after it, so a
// read_compacted subscription delivers each of them exactly once, from the log.
//
// Ownership: owned by its topic (shared_ptr, so a running job keeps it alive); borrows the
//   backend (outlives every topic) and the blocking pool.
// Thread-safety: thread-safe; one mutex guards status and the view, never held across I/O.
// Durability: run() returns success once the record is durable (the new view is then visible
//   to subscriptions: applied + durable). trigger() only starts the job.

#include "nereus/base/result.h"
#include "nereus/broker/compacted_view.h"
#include "nereus/broker/topic_backend.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

namespace nereus::broker {

class blocking_pool;

enum class compaction_state { not_run, running, success, error };
const char* to_string(compaction_state s) noexcept;  // "NOT_RUN", "RUNNING", ...

struct compaction_status {
    compaction_state state = compaction_state::not_run;
    std::string last_error;
};

// What the admin API shows of the current view and the last run.
struct compaction_info {
    bool has_view = false;
    std::uint64_t ledger_id = 0;
    std::uint64_t end = 0;  // horizon = end - 1
    std::uint64_t entries = 0;
    std::uint64_t keys = 0;
    std::uint64_t bytes = 0;
    std::string object;  // the snapshot object's name
    // The last successful run in this process: messages it removed, when it finished (ms).
    std::uint64_t last_removed = 0;
    std::int64_t last_success_ms = 0;
};

class topic_compaction : public std::enable_shared_from_this<topic_compaction> {
public:
    static constexpr const char* cursor_name = "__compaction";

    topic_compaction(std::string topic,
                     std::shared_ptr<topic_store> store,
                     topic_backend& backend,
                     blocking_pool* pool);

    // Starts a run on the blocking pool (inline without one). False when one is running
    // (the admin API answers 409), true when started.
    bool trigger();
    // The run itself (blocking). Sets the status; returns its outcome.
    [[nodiscard]] result<void> run();

    compaction_status status() const;
    // The current view, loaded from the record on first use (blocking then); nullptr when the
    // topic was never compacted (or the record is of an older incarnation of the topic).
    // Errors: the backend's, metadata_failure for a bad record or snapshot.
    [[nodiscard]] result<std::shared_ptr<const compacted_view>> view();
    // The current view's figures (loads it like view(); has_view false on error).
    compaction_info info();

    // The record's key for a topic (admin record, doc/format/compaction.md).
    static std::string record_key(const std::string& topic);

    // Tests: runs between the object put and the record CAS; an error stops the run there
    // (what a crash at that point leaves behind).
    void set_before_publish_hook(std::function<result<void>()> hook);

private:
    struct record {
        std::uint64_t ledger_id = 0;
        std::uint64_t end = 0;
        std::string object;
        std::string text;  // the stored value (the CAS compares it)
    };
    static std::optional<record> parse_record(const std::string& text);
    result<void> run_body();
    // Loads view_/record_ when not loaded yet. Requires: load_mu_ held.
    // Runs never overlap: status_ is RUNNING from trigger()/run() until run_body returns.
    result<void> load_locked();

    const std::string topic_;
    const std::shared_ptr<topic_store> store_;
    topic_backend& backend_;
    blocking_pool* const pool_;

    std::mutex load_mu_;  // serialises loading the record and snapshot (I/O); never under mu_
    mutable std::mutex mu_;
    bool loaded_ = false;                           // guarded by mu_
    std::shared_ptr<const compacted_view> view_;    // guarded by mu_
    std::optional<record> record_;                  // guarded by mu_
    compaction_status status_;                      // guarded by mu_
    std::uint64_t last_removed_ = 0;                // guarded by mu_
    std::int64_t last_success_ms_ = 0;              // guarded by mu_
    std::function<result<void>()> before_publish_;  // guarded by mu_
};

}  // namespace nereus::broker
