#pragma once

// The shared engine of the embedded backends (memory_store, rocksdb_store): one committer
// thread decides requests and group-commits their writes through a detail::backend; one
// callback thread runs completions and watch callbacks. Not used directly: open a backend.
//
// Group commit: the committer drains the request queue (up to options::max_group requests),
// decides each request in order against the current state plus the effects of earlier
// requests of the same group, writes the group's net changes as ONE backend batch (for RocksDB
// one synced WriteBatch), and only then hands every completion and watch event, in order, to the
// callback thread. Reads are decided in the same order, so a request never observes a write
// that is not yet durable.
// Sessions are process-local: their deadlines live in memory on the committer thread, which
// also expires them (deleting their ephemeral keys durably, as a close does).
//
// Ownership: owns the backend and both threads.
// Thread-safety: thread-safe (see store.h).
// Durability: a success completion of a write means applied and, for a durable backend, durable.

#include "nereus/meta/detail/backend.h"
#include "nereus/meta/store.h"

#include <chrono>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace nereus::meta::detail {

struct local_store_options {
    // The most requests decided and committed as one group.
    std::size_t max_group = 256;
};

class local_store : public store {
public:
    local_store(std::unique_ptr<backend> be, local_store_options options);
    local_store(const local_store&) = delete;
    local_store& operator=(const local_store&) = delete;
    local_store(local_store&&) = delete;
    local_store& operator=(local_store&&) = delete;
    ~local_store() override;

    void multi(std::vector<op> ops, callback<multi_result> done) override;
    void get(std::string key, callback<std::optional<record>> done) override;
    void list(std::string prefix, callback<std::vector<keyed_record>> done) override;
    [[nodiscard]] watch_handle watch(std::string prefix, watch_callback callback) override;
    void open_session(std::chrono::milliseconds ttl, callback<session_id> done) override;
    void keep_alive(session_id session, callback<void> done) override;
    void close_session(session_id session, callback<void> done) override;
    bool is_callback_thread() const override;

private:
    struct impl;
    std::unique_ptr<impl> impl_;
};

}  // namespace nereus::meta::detail
