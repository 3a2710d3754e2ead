#pragma once

// Managed deliveries and pages (seed 001, issue 6).
//
// A delivery is one keyed source message handed to a projection: its kind (SNAPSHOT — part of
// the image up to the barrier — or EVENT — strictly after the barrier), its full cursor
// (partition, epoch, sequence), its operation (upsert/remove of a key; an empty payload is a
// tombstone = remove), and its payload, which decodes only when the message carries the
// admitted, versioned source format (policy.h); anything else is errc::unadmitted_format.
// `resnapshot` marks every SNAPSHOT delivery of an epoch that was started because the previous
// one expired (expiry_policy::resnapshot), so a handler can tell a re-snapshot from data.
//
// Cursor sequence: (entry_id + 1) * sequence_stride + index in the entry's batch (0 when not
// batched), so sequences increase along the partition, identify every message and are never
// below sequence_stride. A barrier cursor covers its whole entry: barrier_sequence(e) =
// (e + 2) * sequence_stride - 1 (for an empty partition, e = -1: sequence_stride - 1).
//
// A page is a run of deliveries of ONE partition and one kind, ending at an entry boundary;
// `through` is the cursor of its last delivery (what ack() takes). SNAPSHOT pages come first
// (every partition), then EVENT pages; `snapshot_complete` is set on the last SNAPSHOT page:
// once it is applied the projection holds the whole image (replace_atomically).
//
// Ownership: plain values (own their payload bytes). Thread-safety: thread-compatible.

#include "nereus/base/result.h"
#include "nereus/events/errc.h"
#include "nereus/events/projection_repository.h"

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace nereus::events {

enum class delivery_kind { snapshot, event };

inline constexpr std::uint64_t sequence_stride = 1u << 16;  // messages per entry, at most

inline constexpr std::uint64_t sequence_of(std::uint64_t entry,
                                           std::uint32_t batch_index) noexcept {
    return (entry + 1) * sequence_stride + batch_index;
}
// The entry of a sequence (-1 for the barrier of an empty partition).
inline constexpr std::int64_t entry_of(std::uint64_t sequence) noexcept {
    return static_cast<std::int64_t>(sequence / sequence_stride) - 1;
}
inline constexpr std::uint64_t barrier_sequence(std::int64_t barrier_entry) noexcept {
    return static_cast<std::uint64_t>(barrier_entry + 2) * sequence_stride - 1;
}

struct delivery {
    delivery_kind kind = delivery_kind::event;
    cursor at;
    operation op;
    bool resnapshot = false;  // SNAPSHOT of an epoch started by expiry_policy::resnapshot
    std::string format;       // the message's format tag ("" when it carries none)
    std::vector<std::byte> bytes;
    bool admitted = false;  // format == the policy's admitted tag

    // The payload; errc::unadmitted_format unless the message is in the admitted format.
    [[nodiscard]] result<std::span<const std::byte>> payload() const {
        if (!admitted) {
            return error(errc::unadmitted_format);
        }
        return std::span<const std::byte>(bytes);
    }
    [[nodiscard]] const cursor& position() const noexcept { return at; }
};

struct page {
    delivery_kind kind = delivery_kind::event;
    std::vector<delivery> events;
    // Cursor of the last delivery; for the empty last SNAPSHOT page of an empty source:
    // {0, epoch, 0} (no delivery has sequence 0).
    cursor through;
    bool snapshot_complete = false;  // the last SNAPSHOT page of the epoch
    std::uint64_t epoch = 0;
    bool resnapshot = false;  // a SNAPSHOT page of an epoch started by expiry
    // On the snapshot_complete page: every partition's barrier cursor (what
    // projection_repository::replace_atomically takes). The last SNAPSHOT page may be empty.
    std::vector<cursor> barriers;
    // An EVENT page leased under lease_order::per_partition: every earlier page of its
    // partition was acknowledged (or is this page), so its cursors are above everything applied.
    bool in_order = true;

    [[nodiscard]] bool empty() const noexcept { return events.empty() && !snapshot_complete; }
};

}  // namespace nereus::events
