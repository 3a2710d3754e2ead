#pragma once

// The read model of the example: one row per live order, kept in a durable
// nereus::events::projection_repository (the SQLite one). This is the application logic the
// seed's handler calls — replace the image at the snapshot barrier, apply each EVENT once by
// its full cursor — plus one deliberate property that makes mistakes visible: the projection
// does not copy an order's `version` from the event, it *counts* it (1 when an order appears,
// +1 per applied update), and stores the order with that count. An update applied twice, or
// one lost, therefore leaves a row whose version differs from the source's, which the
// self-check and a diff of the two dumps both see (copying whole states would hide a
// duplicate: applying the same state twice changes nothing).
//
// Only the admitted format decodes: a value that is not orders/v1 is an error value (the
// projection process stops on it), never a silently skipped or default-filled row.
//
// Ownership: owns the repository and an in-memory mirror of its rows (loaded at open; this
// process is the repository's only writer, so the mirror equals the database after every
// call). Thread-safety: thread-compatible (one projection thread).
// Durability: replace_snapshot and apply are *durable* when they return (the repository's
// transactions); the mirror is only updated after the transaction committed.

#include "nereus/base/result.h"
#include "nereus/events/projection_repository.h"

#include "order.h"
#include "state.h"
#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace orders {

class order_projection {
public:
    // Opens (creating) the SQLite database at `path`. Errors: the repository's; an existing row
    // that is not orders/v1.
    [[nodiscard]] static nereus::result<order_projection> open(const std::string& path);
    // The rows of an existing database (the dump). Errors: storage (absent or unreadable),
    // bad_field (a row that is not orders/v1).
    [[nodiscard]] static nereus::result<state> read_state(const std::string& path);

    // The whole projection becomes `image` (decoded orders/v1 values; a tombstone or an
    // undecodable value is an error), applied through `barriers`. One transaction.
    [[nodiscard]] nereus::result<void> replace_snapshot(
        std::span<const nereus::events::cursor> barriers,
        std::span<const std::pair<std::string, std::string>> image);  // key -> raw value

    // Applies one EVENT once by its full cursor: an upsert (payload = orders/v1 whose id is the
    // key) or a remove (tombstone). Returns whether it changed the projection
    // (already_applied: a redelivery the repository recognized).
    [[nodiscard]] nereus::result<nereus::events::apply_outcome> apply(
        const nereus::events::cursor& c,
        const nereus::events::operation& op,
        std::span<const std::byte> payload);

    [[nodiscard]] nereus::result<std::optional<nereus::events::cursor>> applied(
        std::uint32_t partition) const {
        return repo_->applied(partition);
    }
    [[nodiscard]] const state& rows() const { return mirror_; }
    // For registration (RESUME checks durable()).
    [[nodiscard]] const nereus::events::projection_repository& repository() const { return *repo_; }

private:
    order_projection(std::unique_ptr<nereus::events::projection_repository> repo, state mirror)
        : repo_(std::move(repo)), mirror_(std::move(mirror)) {}

    std::unique_ptr<nereus::events::projection_repository> repo_;
    state mirror_;  // id -> stored canonical JSON, equal to the repository's rows
};

}  // namespace orders
