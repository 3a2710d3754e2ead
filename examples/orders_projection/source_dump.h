#pragma once

// The source side of the comparison, read independently of the projection machinery: a
// non-durable reader per partition of the topic, from the earliest message to the last one
// that exists when it starts (has_message_available), folding latest-per-key exactly as
// compaction defines it (a keyed message replaces its key's value; an empty payload deletes
// the key; keyless messages are ignored). No compacted view, no subscription state, no
// events API is involved, so `orders_projection --dump-source` checks the self-check rather
// than repeating it.
//
// Ownership: borrows the client. Thread-safety: call from one thread (blocks on futures; not
// from a client thread). Changes nothing on the broker (readers are non-durable).

#include "nereus/base/result.h"
#include "nereus/client/client.h"

#include "state.h"
#include <chrono>
#include <cstddef>
#include <string>

namespace orders {

struct source_fold {
    state final_state;         // id -> canonical JSON of its latest value
    std::size_t messages = 0;  // messages read (every version, tombstones included)
    std::size_t tombstones = 0;
    std::size_t undecodable = 0;  // keyed values that are not orders/v1 (kept out of the state)
};

// Errors: the client's (lookup, reader creation, a read not answered within `timeout`).
[[nodiscard]] nereus::result<source_fold> fold_source(const nereus::client::client& c,
                                                      const std::string& topic,
                                                      std::chrono::milliseconds timeout);

}  // namespace orders
