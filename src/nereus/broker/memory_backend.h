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
#include <mutex>
#include <utility>
#include <vector>

namespace nereus::broker {

// Tests: appends are stored at once, but their completions wait here until release() runs
// them (on the calling thread, as a storage thread would): appends in flight on demand.
// Thread-safety: thread-safe.
class append_hold {
public:
    void hold(append_callback done, result<position> r);
    // Runs every held completion, in append order; returns how many ran.
    std::size_t release();
    std::size_t held() const;

private:
    mutable std::mutex mu_;
    std::vector<std::pair<append_callback, result<position>>> held_;  // guarded by mu_
};

struct memory_backend_options {
    bool auto_create = true;
    // Tests: fail every append with this error instead of storing (persistence failures).
    std::error_code fail_appends;
    // Tests: hold every append's completion in here (append_hold).
    std::shared_ptr<append_hold> hold_appends;
};

std::unique_ptr<topic_backend> make_memory_backend(memory_backend_options options = {});

}  // namespace nereus::broker
