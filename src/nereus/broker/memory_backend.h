#pragma once

// An in-memory topic_backend for unit tests ONLY: nothing survives the process and "durable"
// completions run inline at once. It implements the same cursor semantics as the ledger
// (mark-delete prefix + individually acked entries + batch remaining bits, an in-memory read
// position that skips acked entries and restarts at the mark-delete position on rewind/seek,
// fences that make acks from before a seek harmless).
//
// Ownership: topics live as long as the backend or a shared_ptr to them.
// Thread-safety: thread-safe (one mutex per topic, shared by its cursors).
// Durability: none. Completions run inline on the calling thread.

#include "nereus/broker/topic_backend.h"

#include <memory>

namespace nereus::broker {

struct memory_backend_options {
    bool auto_create = true;
    // Tests: fail every append with this error instead of storing (persistence failures).
    std::error_code fail_appends;
};

std::unique_ptr<topic_backend> make_memory_backend(memory_backend_options options = {});

}  // namespace nereus::broker
