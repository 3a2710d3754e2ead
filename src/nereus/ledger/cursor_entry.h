#pragma once

// cursor_entry — the ledger's record of one cursor (internal to the ledger module): the durable
// cursor engine handle, or the in-memory state of a non-durable cursor, plus the in-memory
// read position and activity flags. Shared by the ledger's map and its managed_cursor handles.
//
// Thread-safety: `mu` guards the non-durable state and recorded redelivery counts, `read_mu`
// the read position.

#include "nereus/cursor/cursor.h"
#include "nereus/cursor/cursor_state.h"
#include "nereus/ledger/managed_cursor.h"

#include <atomic>
#include <map>
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

    // Redelivery counts recorded in this process (durable cursors): covers the window in which
    // the engine's CAS carrying them is in flight. Guarded by `mu`; dropped when the fence moves
    // (a reset clears counts) and below MDO.
    std::map<offset, std::uint32_t> recorded_redeliveries;
    cursor::fence recorded_fence{0, 0};
};

}  // namespace nereus::ledger
