#pragma once

// cursor_entry — the ledger's record of one cursor (internal to the ledger module): the durable
// cursor engine handle, or the in-memory state of a non-durable cursor, plus the in-memory
// read position and activity flags. Shared by the ledger's map and its managed_cursor handles.
//
// Thread-safety: `mu` guards the non-durable state, `read_mu` the read position.

#include "nereus/cursor/cursor.h"
#include "nereus/cursor/cursor_state.h"
#include "nereus/ledger/managed_cursor.h"

#include <atomic>
#include <memory>
#include <mutex>
#include <string>

namespace nereus::ledger {

struct cursor_entry {
    std::string name;
    bool durable = true;
    std::shared_ptr<cursor::cursor> c;  // durable only
    managed_cursor::creation created;

    // Non-durable state (durable == false).
    mutable std::mutex mu;
    cursor::cursor_state nd_state;
    cursor::fence nd_fence{1, 1};

    // In-memory read position (never persisted).
    std::mutex read_mu;
    offset read_pos = 0;
    cursor::fence read_fence{0, 0};

    std::atomic<bool> connected{false};
};

}  // namespace nereus::ledger
