#pragma once

// The durable projection_repository: one SQLite database file (libsqlite3), WAL journal with
// synchronous=FULL, so a committed transaction survives a process crash and power loss. Rows
// and applied cursors are two tables of the same database and every call is one transaction,
// so the data and the cursor it was applied through can never disagree (doc/events.md has
// the schema).
//
// Ownership: owns the sqlite3 connection (closed by the destructor).
// Thread-safety: thread-safe; one mutex serialises every call (one connection).
// Durability: durable() is true: replace_atomically and apply_once are durable when they
//   return success; a crash before the commit leaves the previous state (SQLite's atomic
//   commit), which the tests check with a SIGKILLed child between apply and commit.

#include "nereus/events/projection_repository.h"

#include <functional>
#include <memory>
#include <mutex>
#include <string>

struct sqlite3;

namespace nereus::events {

class sqlite_projection final : public projection_repository {
public:
    // Opens (creating) the database file at `path`. Errors: storage (logged with SQLite's
    // message).
    [[nodiscard]] static result<std::unique_ptr<sqlite_projection>> open(const std::string& path);
    ~sqlite_projection() override;
    sqlite_projection(const sqlite_projection&) = delete;
    sqlite_projection& operator=(const sqlite_projection&) = delete;

    bool durable() const override { return true; }
    [[nodiscard]] result<void> replace_atomically(std::span<const cursor> barriers,
                                                  std::span<const row> image) override;
    [[nodiscard]] result<apply_outcome> apply_once(const cursor& c,
                                                   const operation& op,
                                                   std::span<const std::byte> payload) override;
    [[nodiscard]] result<std::optional<cursor>> applied(std::uint32_t partition) const override;
    [[nodiscard]] result<std::vector<row>> rows() const override;

    // Tests: runs inside apply_once's transaction after the change and before COMMIT (a crash
    // there must leave neither the change nor the cursor).
    void set_before_commit_hook(std::function<void()> hook);

private:
    explicit sqlite_projection(sqlite3* db) : db_(db) {}
    result<void> exec(const char* sql) const;
    result<void> rollback() const;
    result<std::optional<cursor>> applied_locked(std::uint32_t partition) const;

    sqlite3* db_;
    mutable std::mutex mu_;
    std::function<void()> before_commit_;  // guarded by mu_
};

}  // namespace nereus::events
