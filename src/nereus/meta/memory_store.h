#pragma once

// memory_store — the in-memory metadata store for fast unit tests. Same semantics as
// rocksdb_store (it shares the engine, detail::local_store: group commit, ordering, sessions,
// watches), without durability: everything is lost when it is destroyed.
//
// It can inject the remote-store failure that callers must handle: a write whose outcome is
// unknown (errc::unknown_outcome), either really applied (a lost reply) or not.
//
// Ownership: the caller owns it (std::unique_ptr); it owns its threads.
// Thread-safety: thread-safe (see store.h).
// Durability: none. A success completion means applied only.

#include "nereus/meta/detail/local_store.h"

#include <cstddef>
#include <memory>
#include <system_error>

namespace nereus::meta {

namespace detail {
class memory_backend;
}  // namespace detail

struct memory_store_options {
    std::size_t max_group = 256;
};

class memory_store final : public detail::local_store {
public:
    static std::unique_ptr<memory_store> open(memory_store_options options = {});

    // Makes the next `count` commit groups fail with `ec` (default errc::unknown_outcome).
    // With applied = true the writes are applied (and their watch events fire) but their
    // completions report `ec`, as when a remote store's reply is lost; with applied = false
    // nothing is applied. Requests of such a group that wrote nothing complete normally, or with
    // errc::unavailable when they were decided after a write of the failed group.
    void inject_commit_failure(bool applied,
                               std::size_t count = 1,
                               std::error_code ec = make_error_code(errc::unknown_outcome));

private:
    memory_store(std::unique_ptr<detail::memory_backend> be,
                 detail::memory_backend* raw_backend,
                 memory_store_options options);

    detail::memory_backend* backend_;  // owned by local_store
};

}  // namespace nereus::meta
