#pragma once

// nereus::meta::store — the metadata store interface: versioned keys, atomic multi-ops,
// prefix lists, watches and sessions with ephemeral keys. It holds cursor roots, stream roots,
// the topic registry and owner sessions.
//
// The interface is asynchronous and honest about a remote store (ZooKeeper is the second
// backend, zk_store.h; see doc/format/meta.md and distributed-engines.md):
//   - Every call returns at once; its completion runs later on the store's callback thread,
//     never inline in the caller's frame. Completions of one store run one at a time, in the
//     order the store decided the requests; requests submitted from one thread are decided in
//     submission order (like one ZooKeeper session's FIFO order).
//   - A write can fail with errc::unknown_outcome (timeout, connection loss, failed fsync): it
//     may or may not have been applied, and the caller must re-read before deciding anything.
//   - A version or session check that fails is an outcome (applied = false), not an error.
//
// Durability words (architecture.md): when the completion of a write reports success, the write
// is *applied* (visible to every later read) and, for durable backends, *durable* (it survives a
// process crash; rocksdb_store syncs its WAL, so also a power loss). Callers may *confirm* it to
// their clients from the completion on.
//
// Ownership: the caller owns the store (std::unique_ptr from make_store or a backend's open()).
//   Destroying it decides every request already submitted, runs every completion, ends watches
//   with errc::closed, and joins its threads; requests that callbacks submit meanwhile complete
//   with errc::closed. Requires: no calls from other threads during or
//   after destruction, and never destroy it from its own callback thread.
// Thread-safety: thread-safe. Completions and watch callbacks run on the store's callback thread
//   and must not block on another request of the same store (the blocking wrappers in sync.h
//   assert this).

#include "nereus/base/result.h"
#include "nereus/meta/errc.h"
#include "nereus/meta/op.h"
#include "nereus/meta/types.h"
#include "nereus/meta/watch.h"

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace nereus::meta {

class store {
public:
    template <class T>
    using callback = std::function<void(result<T>)>;

    store() = default;
    store(const store&) = delete;
    store& operator=(const store&) = delete;
    store(store&&) = delete;
    store& operator=(store&&) = delete;
    virtual ~store() = default;

    // Runs `ops` atomically: all writes are applied or none. Each op sees the effects of the
    // earlier ops of the same multi. Errors: invalid_argument, session_expired (a put names a
    // dead owner), corrupt_record (a touched key is corrupt), unknown_outcome, unavailable,
    // store_failed, closed.
    virtual void multi(std::vector<op> ops, callback<multi_result> done) = 0;

    // The key's record, or nullopt when absent.
    virtual void get(std::string key, callback<std::optional<record>> done) = 0;

    // Every key starting with `prefix` (plain byte prefix; "" lists all), sorted bytewise.
    virtual void list(std::string prefix, callback<std::vector<keyed_record>> done) = 0;

    // Registers a watch on every key starting with `prefix`. The callback receives each change
    // committed after watch() returns (possibly a few just before), after the change is durable,
    // in commit order, on the callback thread; a write's events are delivered before that
    // write's own completion. To follow a prefix without gaps: watch first, then list, and
    // tell duplicates apart by version.
    [[nodiscard]] virtual watch_handle watch(std::string prefix, watch_callback callback) = 0;

    // Opens a session that expires unless keep_alive() is called within every `ttl` (call it
    // about every ttl/3). On expiry or close, its ephemeral keys are deleted durably and their
    // watch events fire. ttl must be in [1 ms, 24 h].
    virtual void open_session(std::chrono::milliseconds ttl, callback<session_id> done) = 0;
    // Extends the session by its ttl. Error session_expired when it is already gone.
    virtual void keep_alive(session_id session, callback<void> done) = 0;
    // Ends the session and deletes its ephemeral keys durably. Error session_expired when it is
    // already gone.
    virtual void close_session(session_id session, callback<void> done) = 0;

    // True on the thread that runs this store's completions and watch callbacks.
    virtual bool is_callback_thread() const = 0;

    // Single-key wrappers over multi().
    // Creates the key if absent (ephemeral when `owner` is a session).
    void create(std::string key, std::string value, session_id owner, callback<cas_outcome> done);
    // Replaces the value if the version is still `expected` (absent = create-if-absent).
    void compare_and_set(std::string key,
                         version expected,
                         std::string value,
                         callback<cas_outcome> done);
    // Deletes the key if its version is still `expected` (any_version = if present).
    void remove(std::string key, version expected, callback<cas_outcome> done);
};

}  // namespace nereus::meta
