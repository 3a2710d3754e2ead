#pragma once

// The projection store of a read-model projection (seed 001, issue 6): the rows the projection
// keeps (key → value) and, in the same store, the cursor through which they are applied, per
// source partition. The delivery runtime (not here yet) hands the handler a SNAPSHOT image
// captured with its barrier, then EVENTs strictly after it; the repository makes applying them
// idempotent, so a redelivery after a crash (between apply and ack) changes nothing:
//
//  replace_atomically(barriers, image)  the whole projection becomes `image`, and the applied
//      cursor of each source partition becomes its barrier (one cursor per partition, all of
//      one epoch); every other partition's cursor is removed. One transaction.
//  apply_once(cursor, operation, payload)  applies one EVENT exactly once: a cursor at or below
//      the partition's applied cursor is `already_applied` and changes nothing; otherwise the
//      operation is applied and the cursor recorded, in one transaction. A cursor of another
//      epoch is errc::epoch_mismatch (the projection must be re-snapshotted, never silently
//      mixed); a partition without a cursor is errc::not_bootstrapped.
//
// Ownership: implementations own their storage handle.
// Thread-safety: implementations are thread-safe (calls are serialised).
// Durability: durable() says whether a successful call survives a process crash and power
//   loss (*durable* when it returns). A projection that is not durable must not be registered
//   with the RESUME restart policy (seed 001: choose SNAPSHOT).

#include "nereus/base/result.h"

#include <compare>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace nereus::events {

// Position of a delivery in a source: partition, epoch (moves on with every re-snapshot) and
// sequence within the partition (the source's entry id).
struct cursor {
    std::uint32_t partition = 0;
    std::uint64_t epoch = 0;
    std::uint64_t sequence = 0;
    friend auto operator<=>(const cursor&, const cursor&) = default;
};

struct row {
    std::string key;
    std::string value;
    friend bool operator==(const row&, const row&) = default;
};

// What an EVENT does to the projection.
struct operation {
    enum class kind { upsert, remove };
    kind what = kind::upsert;
    std::string key;
};

enum class apply_outcome { applied, already_applied };

class projection_repository {
public:
    virtual ~projection_repository() = default;

    virtual bool durable() const = 0;

    // Errors: invalid_argument (two barriers for one partition, mixed epochs, none), storage.
    [[nodiscard]] virtual result<void> replace_atomically(std::span<const cursor> barriers,
                                                          std::span<const row> image) = 0;
    // upsert: key → payload; remove: the key is gone (payload ignored).
    // Errors: not_bootstrapped, epoch_mismatch, storage.
    [[nodiscard]] virtual result<apply_outcome> apply_once(const cursor& c,
                                                           const operation& op,
                                                           std::span<const std::byte> payload) = 0;

    // The applied cursor of a partition (nullopt: not bootstrapped).
    [[nodiscard]] virtual result<std::optional<cursor>> applied(std::uint32_t partition) const = 0;
    // Every row, sorted by key (dumps, comparisons).
    [[nodiscard]] virtual result<std::vector<row>> rows() const = 0;
};

}  // namespace nereus::events
