#pragma once

// The persistence seam under detail::local_store: what an embedded backend (memory, RocksDB)
// must provide. Not part of the public API.
//
// Ownership: owned by the local_store that uses it.
// Thread-safety: strand-confined to the store's committer thread (after construction).
// Durability: commit() returns success only when the whole batch is applied and, for durable
// backends, durable. A batch is atomic: after a crash either all of it is visible or none.

#include "nereus/base/result.h"
#include "nereus/meta/types.h"

#include <cstdint>
#include <optional>
#include <string>
#include <system_error>
#include <vector>

namespace nereus::meta::detail {

// One key's net change in a commit group.
struct change {
    std::string key;
    // The owner of the record before the group (no_session when absent or persistent); the
    // backend drops its ephemeral index entry when the owner changes or the key goes away.
    session_id old_owner = no_session;
    // The record after the group; nullopt = erased.
    std::optional<record> after;
};

struct commit_batch {
    std::vector<change> changes;
    // The store revision after the group (the highest version assigned so far).
    version revision = 0;
    // The next session id to hand out after the group.
    std::uint64_t next_session = 1;
};

struct commit_status {
    // True when the batch is applied, even if `ec` reports a lost reply (fault injection).
    bool applied = false;
    std::error_code ec;
};

class backend {
public:
    backend() = default;
    backend(const backend&) = delete;
    backend& operator=(const backend&) = delete;
    backend(backend&&) = delete;
    backend& operator=(backend&&) = delete;
    virtual ~backend() = default;

    // The record of `key`, nullopt when absent; errc::corrupt_record when it fails to decode.
    virtual result<std::optional<record>> read(const std::string& key) = 0;
    // Every record whose key starts with `prefix`, sorted bytewise.
    virtual result<std::vector<keyed_record>> scan(const std::string& prefix) = 0;
    // Every key whose record is owned by `owner`, from the ephemeral index (no decoding).
    virtual result<std::vector<std::string>> ephemeral_keys(session_id owner) = 0;
    virtual commit_status commit(const commit_batch& batch) = 0;

    // State recovered at open.
    virtual version recovered_revision() const = 0;
    virtual std::uint64_t recovered_next_session() const = 0;
    // True when a failed commit leaves the backend unusable (a failed fsync); the store then
    // refuses every request with errc::store_failed.
    virtual bool commit_failure_is_fatal() const = 0;
};

}  // namespace nereus::meta::detail
