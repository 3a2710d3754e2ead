#pragma once

// merge_ops — rewrites the ops of one group commit into an equivalent, usually much shorter list
// before they are encoded as a delta record (doc/format/cursor.md, "Group commit").
//
// Within each run of consecutive individual acks (ack_range_op and ack_batch_op; any other op
// ends a run and keeps its place):
//   - batch-index acks of one entry (same batch size) become one op with the union of the bits;
//   - a batch entry whose union leaves no remaining bit in `before` becomes a whole-entry range;
//   - ranges (and those whole entries) are sorted and adjacent/overlapping ones joined, and batch
//     ops on entries inside a range are dropped;
//   - the run is emitted as its ranges (ascending), then its batch ops (ascending).
// Guarantee: applying the result to `before` gives exactly the state that applying `ops` in
// order gives. Why: the ops of one run commute (set union of acked entries / cleared bits), and
// within a group the ack state only grows (no op of a group un-acks), so "`before` has no bit
// outside the union" implies the same for the state the run really applies to.
// Requires: every op validated against `before`, and batch ops on one entry agree on the size
// (the cursor rejects a mismatch when it forms the group); ops with different sizes for one
// entry are left unmerged anyway.
//
// Thread-safety: thread-safe (pure function).

#include "nereus/cursor/cursor_state.h"
#include "nereus/cursor/state_op.h"

#include <vector>

namespace nereus::cursor {

[[nodiscard]] std::vector<state_op> merge_ops(const cursor_state& before,
                                              std::vector<state_op> ops);

}  // namespace nereus::cursor
