#pragma once

// Tuning and wiring of a cursor handle.
// Thread-safety: plain values (thread-compatible).

#include "nereus/meta/types.h"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

namespace nereus::meta {
class store;
}
namespace nereus::objects {
class object_store;
}

namespace nereus::cursor {

class stream_view;

struct cursor_options {
    // The root holds the whole state (INLINE) while its encoded size is at most this; above it
    // the state spills to a snapshot object plus delta records (SPILLED). 0 = always spilled.
    // Capped internally at what a metadata value can hold (meta::max_value_size - 4 KiB).
    // An inline root is rewritten whole by every CAS, so this bounds the bytes one CAS writes
    // in INLINE mode (doc/format/cursor.md, "Inline threshold").
    std::size_t spill_threshold_bytes = 2 * 1024;
    // Bound on the (estimated, upper-bound) encoded state size. An ack that could take the state
    // over it completes with ack_status::state_full before anything is applied.
    std::size_t max_state_bytes = std::size_t{256} << 20;
    // A delta record larger than this is written as a new snapshot instead.
    std::size_t max_delta_bytes = 256 * 1024;
    // The most live delta records a spilled cursor keeps: the commit that would write one more
    // compacts into a new snapshot instead (never drops anything). Bounds what recovery lists
    // and replays: with small deltas the byte rule alone would allow ~S / 10 of them for a
    // snapshot of S bytes, ~2 M at 10 M holes (doc/format/cursor.md, "Delta count bound").
    std::uint64_t max_live_deltas = std::uint64_t{1} << 18;
    // The most requests one group commit takes.
    std::size_t max_group = 4096;
    // Group-commit linger: when the previous group took more requests than are queued now, the
    // next CAS waits up to min(this, half the last CAS latency) for the queue to refill to the
    // previous group's size (it starts at once when it does). A lone sequential requester
    // (previous group of 1) never waits. 0 = never linger.
    std::chrono::microseconds max_commit_linger{500};
    // Stale delta keys erased per commit (piggybacked on the commit's multi).
    std::size_t gc_erases_per_commit = 64;
    // How often an unknown outcome is resolved by re-reading and retrying before giving up.
    int max_unknown_retries = 8;
    // First component of every root key.
    std::string key_prefix = "cursors";
};

// What a cursor works with. Every pointer must outlive the cursor handle and every callback
// of it; `owner` is the owner session of the writable ledger (checked in every multi).
struct cursor_env {
    meta::store* meta = nullptr;
    objects::object_store* objects = nullptr;
    stream_view* stream = nullptr;
    meta::session_id owner = meta::no_session;
};

}  // namespace nereus::cursor
