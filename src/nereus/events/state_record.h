#pragma once

// The durable state of one event subscription identity, as stored in the broker (internal to
// events/; doc/events.md has the layout): the property map of the identity's durable
// subscription on the metadata topic, replaced as a whole by a compare-and-set on "version"
// (admin PUT .../properties?ifVersion=N). Every field is a string property, so the record is
// readable with any Pulsar admin tool (GET .../properties).
//
//   version            CAS version (absent: no record yet, version 0)
//   epoch, resnapshot  the current epoch; whether it was started by expiry (RESNAPSHOT)
//   partitions         source partitions; ledger.<p>: each partition's ledger id
//   barrier.<p>        last source entry in the epoch's snapshot (-1: empty partition)
//   snap.done          1 once the final SNAPSHOT page was acked
//   snap.holder/.expiry/.pos/.final/.acked   the snapshot lease (one holder at a time), the
//                      next view position "p,entry", the final page's through "p,seq" once
//                      delivered, the last acked snapshot through "p,seq"
//   committed.<p>      committed cursor sequence (after snap.done; starts at the barrier)
//   next.<p>           next source entry not leased yet
//   lease.<p>.<from>   "through_entry,through_seq,holder,expiry_ms": a leased EVENT page
//   done.<p>.<from>    "through_entry,through_seq": acked page not yet contiguous
//   ackid.<id>         "p,epoch,seq,order": the cursor an ack committed (last 256 kept)
//   ack.order          counter; owner: exclusive owner's holder id
//
// Thread-safety: plain value.

#include "nereus/base/result.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace nereus::events::detail {

struct lease_entry {
    std::int64_t through_entry = 0;
    std::uint64_t through_seq = 0;
    std::string holder;
    std::int64_t expiry_ms = 0;
};

struct done_entry {
    std::int64_t through_entry = 0;
    std::uint64_t through_seq = 0;
};

struct ack_record {
    std::uint32_t partition = 0;
    std::uint64_t epoch = 0;
    std::uint64_t sequence = 0;
    std::uint64_t order = 0;
};

struct state_record {
    std::uint64_t version = 0;
    std::uint64_t epoch = 0;
    bool resnapshot = false;
    std::uint32_t partitions = 0;
    std::vector<std::int64_t> ledger;
    std::vector<std::int64_t> barrier;
    bool snap_done = false;
    std::string snap_holder;
    std::int64_t snap_expiry_ms = 0;
    std::uint32_t snap_pos_partition = 0;
    std::int64_t snap_pos_entry = 0;
    std::optional<std::pair<std::uint32_t, std::uint64_t>> snap_final;
    std::optional<std::pair<std::uint32_t, std::uint64_t>> snap_acked;
    std::vector<std::optional<std::uint64_t>> committed;
    std::vector<std::int64_t> next;
    std::map<std::pair<std::uint32_t, std::int64_t>, lease_entry> leases;
    std::map<std::pair<std::uint32_t, std::int64_t>, done_entry> done;
    std::map<std::string, ack_record> ack_ids;
    std::uint64_t ack_order = 0;
    std::string owner;

    [[nodiscard]] bool exists() const noexcept { return version != 0; }
    // Resizes the per-partition vectors to `n`.
    void set_partitions(std::uint32_t n);
    // The entry the source subscription's mark-delete should be at: committed or barrier.
    [[nodiscard]] std::int64_t held_entry(std::uint32_t p) const;
    // Moves committed[p] over acked pages that are now contiguous.
    void advance(std::uint32_t p);
    // Keeps the newest 256 ack ids.
    void trim_ack_ids();
};

[[nodiscard]] std::map<std::string, std::string> encode(const state_record& s);
// Errors: invalid_argument (a malformed record).
[[nodiscard]] result<state_record> decode(const std::map<std::string, std::string>& props);

}  // namespace nereus::events::detail
