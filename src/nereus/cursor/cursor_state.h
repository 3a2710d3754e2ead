#pragma once

// cursor_state — the ack state of one cursor generation, and the pure functions that change it.
//
//   markDeleteOffset (MDO, exclusive): every entry below it is acked.
//   ranges: individually acked whole entries at or above MDO, as merged half-open ranges;
//           the lowest range never starts at MDO (it would be folded into MDO).
//   batches: entry -> remaining-bit map, for partly acked batch entries (never acked whole,
//            never below MDO, never inside a range, never empty).
//   properties: string -> string.
//   redeliveries: entry -> persisted redelivery count, for unacked entries only.
//
// Generation, ackStateEpoch and lifecycle live in the cursor's root record, not here.
//
// Ownership: owns all of it. Thread-safety: thread-compatible.
// Durability: none (the cursor persists it: record_format.h, doc/format/cursor.md).

#include "nereus/base/result.h"
#include "nereus/cursor/ack_ranges.h"
#include "nereus/cursor/batch_bits.h"
#include "nereus/cursor/state_op.h"
#include "nereus/cursor/types.h"

#include <cstddef>
#include <cstdint>
#include <map>

namespace nereus::cursor {

class cursor_state {
public:
    cursor_state() = default;
    explicit cursor_state(offset mark_delete) : mdo_(mark_delete) {}

    [[nodiscard]] offset mark_delete() const { return mdo_; }
    [[nodiscard]] const ack_ranges& ranges() const { return ranges_; }
    [[nodiscard]] const std::map<offset, batch_bits>& batches() const { return batches_; }
    [[nodiscard]] const property_map& properties() const { return props_; }
    [[nodiscard]] const std::map<offset, std::uint32_t>& redeliveries() const {
        return redeliveries_;
    }

    // True when the whole entry is acked (below MDO or in a range).
    [[nodiscard]] bool is_acked(offset x) const { return x < mdo_ || ranges_.contains(x); }
    // The remaining bits of a partly acked batch entry, or nullptr.
    [[nodiscard]] const batch_bits* remaining(offset x) const;
    // Entries in [MDO, end) not fully acked. Requires: every range lies below `end`.
    [[nodiscard]] std::uint64_t backlog(offset end) const;
    // The first offset at or after `x` that is not fully acked.
    [[nodiscard]] offset next_unacked(offset x) const;
    // The MDO that skipping `n` not-fully-acked entries from MDO gives, at most `end`.
    [[nodiscard]] offset skip_target(std::uint64_t n, offset end) const;

    // Checks `op` against this state: errc::invalid_argument when a batch size contradicts the
    // stored map or an index is out of range. Nothing is changed.
    [[nodiscard]] result<void> validate(const state_op& op) const;
    // True when applying `op` would change the state (false: a duplicate, already acked).
    [[nodiscard]] bool changes(const state_op& op) const;
    // Applies `op`. Requires: validate(op) succeeded. Returns true when the state changed.
    bool apply(const state_op& op);

    // Replaces the ack state by "everything below `mark_delete` acked, nothing else" (reset,
    // clear backlog, skip). Properties are kept.
    void reset_to(offset mark_delete);
    // Moves MDO forward to `x` (cumulative), folding ranges, dropping maps below it.
    void advance_to(offset x);
    // Sets a redelivery count (0 erases it); ignored for acked entries.
    void set_redelivery(offset entry, std::uint32_t count);

    // An upper bound of the encoded size of this state (record_format.h), kept incrementally.
    [[nodiscard]] std::size_t estimated_bytes() const;
    // Upper bound of what applying `op` can add to estimated_bytes().
    [[nodiscard]] static std::size_t op_cost(const state_op& op);

    // For decoders: direct access to build a state, then check() its invariants.
    ack_ranges& mutable_ranges() { return ranges_; }
    void set_mark_delete(offset x) { mdo_ = x; }
    void put_batch(offset entry, batch_bits bits);
    void put_property(std::string key, std::string value);
    // True when every invariant in the header comment holds.
    [[nodiscard]] bool check() const;

    friend bool operator==(const cursor_state& a, const cursor_state& b) {
        return a.mdo_ == b.mdo_ && a.ranges_ == b.ranges_ && a.batches_ == b.batches_ &&
               a.props_ == b.props_ && a.redeliveries_ == b.redeliveries_;
    }

private:
    bool ack_range(offset begin, offset end);
    bool ack_batch(offset entry, const batch_bits& acked);
    bool ack_cumulative(const ack_cumulative_op& op);
    bool put_props(const property_map& props);
    // Folds ranges that start at MDO into it and drops maps below it.
    void normalize_front();
    void erase_batch(std::map<offset, batch_bits>::iterator it);
    void erase_entries(offset begin, offset end);

    offset mdo_ = 0;
    ack_ranges ranges_;
    std::map<offset, batch_bits> batches_;
    property_map props_;
    std::map<offset, std::uint32_t> redeliveries_;
    std::size_t batch_bytes_ = 0;
    std::size_t prop_bytes_ = 0;
};

}  // namespace nereus::cursor
