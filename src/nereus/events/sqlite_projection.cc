#include "nereus/events/sqlite_projection.h"

#include "nereus/events/errc.h"
#include "nereus/events/logger.h"

#include <set>
#include <sqlite3.h>

namespace nereus::events {

namespace {

// A prepared statement, finalized on scope exit.
class statement {
public:
    statement(sqlite3* db, const char* sql) { rc_ = sqlite3_prepare_v2(db, sql, -1, &s_, nullptr); }
    ~statement() { sqlite3_finalize(s_); }
    statement(const statement&) = delete;
    statement& operator=(const statement&) = delete;
    bool ok() const { return rc_ == SQLITE_OK; }
    sqlite3_stmt* get() const { return s_; }

private:
    sqlite3_stmt* s_ = nullptr;
    int rc_ = SQLITE_ERROR;
};

result<void> failed(sqlite3* db, const char* what) {
    NEREUS_LOG(events_log(), err, "projection store: {} failed: {}", what, sqlite3_errmsg(db));
    return nereus::error(errc::storage);
}

constexpr const char* schema =
    "CREATE TABLE IF NOT EXISTS projection_rows (key TEXT PRIMARY KEY, value BLOB NOT NULL);"
    "CREATE TABLE IF NOT EXISTS applied_cursor (partition INTEGER PRIMARY KEY,"
    " epoch INTEGER NOT NULL, sequence INTEGER NOT NULL);";

}  // namespace

result<std::unique_ptr<sqlite_projection>> sqlite_projection::open(const std::string& path) {
    sqlite3* db = nullptr;
    if (sqlite3_open_v2(path.c_str(), &db,
                        SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX,
                        nullptr) != SQLITE_OK) {
        auto r = failed(db, "open");
        sqlite3_close(db);
        return nereus::error(r.error());
    }
    std::unique_ptr<sqlite_projection> p(new sqlite_projection(db));
    NEREUS_TRY(p->exec("PRAGMA journal_mode=WAL;"));
    NEREUS_TRY(p->exec("PRAGMA synchronous=FULL;"));
    NEREUS_TRY(p->exec(schema));
    return p;
}

sqlite_projection::~sqlite_projection() {
    sqlite3_close(db_);
}

void sqlite_projection::set_before_commit_hook(std::function<void()> hook) {
    std::lock_guard lock(mu_);
    before_commit_ = std::move(hook);
}

result<void> sqlite_projection::exec(const char* sql) const {
    char* msg = nullptr;
    if (sqlite3_exec(db_, sql, nullptr, nullptr, &msg) != SQLITE_OK) {
        NEREUS_LOG(events_log(), err, "projection store: {} failed: {}", sql,
                   msg != nullptr ? msg : "?");
        sqlite3_free(msg);
        return nereus::error(errc::storage);
    }
    return {};
}

result<void> sqlite_projection::rollback() const {
    return exec("ROLLBACK;");
}

result<std::optional<cursor>> sqlite_projection::applied_locked(std::uint32_t partition) const {
    statement s(db_, "SELECT epoch, sequence FROM applied_cursor WHERE partition = ?;");
    if (!s.ok()) {
        return nereus::error(failed(db_, "prepare").error());
    }
    sqlite3_bind_int64(s.get(), 1, partition);
    const int rc = sqlite3_step(s.get());
    if (rc == SQLITE_DONE) {
        return std::optional<cursor>();
    }
    if (rc != SQLITE_ROW) {
        return nereus::error(failed(db_, "select cursor").error());
    }
    return std::optional<cursor>(
        cursor{partition, static_cast<std::uint64_t>(sqlite3_column_int64(s.get(), 0)),
               static_cast<std::uint64_t>(sqlite3_column_int64(s.get(), 1))});
}

result<std::optional<cursor>> sqlite_projection::applied(std::uint32_t partition) const {
    std::lock_guard lock(mu_);
    return applied_locked(partition);
}

result<std::vector<row>> sqlite_projection::rows() const {
    std::lock_guard lock(mu_);
    statement s(db_, "SELECT key, value FROM projection_rows ORDER BY key;");
    if (!s.ok()) {
        return nereus::error(failed(db_, "prepare").error());
    }
    std::vector<row> out;
    int rc = 0;
    while ((rc = sqlite3_step(s.get())) == SQLITE_ROW) {
        row r;
        r.key = reinterpret_cast<const char*>(sqlite3_column_text(s.get(), 0));
        const auto* v = static_cast<const char*>(sqlite3_column_blob(s.get(), 1));
        r.value.assign(v != nullptr ? v : "",
                       static_cast<std::size_t>(sqlite3_column_bytes(s.get(), 1)));
        out.push_back(std::move(r));
    }
    if (rc != SQLITE_DONE) {
        return nereus::error(failed(db_, "select rows").error());
    }
    return out;
}

result<void> sqlite_projection::replace_atomically(std::span<const cursor> barriers,
                                                   std::span<const row> image) {
    if (barriers.empty()) {
        return nereus::error(errc::invalid_argument);
    }
    std::set<std::uint32_t> parts;
    for (const auto& b : barriers) {
        if (!parts.insert(b.partition).second || b.epoch != barriers.front().epoch) {
            return nereus::error(errc::invalid_argument);
        }
    }
    std::lock_guard lock(mu_);
    NEREUS_TRY(exec("BEGIN IMMEDIATE;"));
    auto body = [&]() -> result<void> {
        NEREUS_TRY(exec("DELETE FROM projection_rows; DELETE FROM applied_cursor;"));
        statement ins(db_, "INSERT OR REPLACE INTO projection_rows (key, value) VALUES (?, ?);");
        if (!ins.ok()) {
            return failed(db_, "prepare");
        }
        for (const auto& r : image) {
            sqlite3_reset(ins.get());
            sqlite3_bind_text(ins.get(), 1, r.key.data(), static_cast<int>(r.key.size()),
                              SQLITE_STATIC);
            sqlite3_bind_blob(ins.get(), 2, r.value.data(), static_cast<int>(r.value.size()),
                              SQLITE_STATIC);
            if (sqlite3_step(ins.get()) != SQLITE_DONE) {
                return failed(db_, "insert row");
            }
        }
        statement cur(db_,
                      "INSERT INTO applied_cursor (partition, epoch, sequence) VALUES (?, ?, ?);");
        if (!cur.ok()) {
            return failed(db_, "prepare");
        }
        for (const auto& b : barriers) {
            sqlite3_reset(cur.get());
            sqlite3_bind_int64(cur.get(), 1, b.partition);
            sqlite3_bind_int64(cur.get(), 2, static_cast<sqlite3_int64>(b.epoch));
            sqlite3_bind_int64(cur.get(), 3, static_cast<sqlite3_int64>(b.sequence));
            if (sqlite3_step(cur.get()) != SQLITE_DONE) {
                return failed(db_, "insert cursor");
            }
        }
        return exec("COMMIT;");
    };
    if (auto r = body(); !r) {
        (void)rollback();
        return r;
    }
    return {};
}

result<apply_outcome> sqlite_projection::apply_once(const cursor& c,
                                                    const operation& op,
                                                    std::span<const std::byte> payload) {
    std::lock_guard lock(mu_);
    NEREUS_TRY(exec("BEGIN IMMEDIATE;"));
    auto body = [&]() -> result<apply_outcome> {
        auto cur = applied_locked(c.partition);
        if (!cur) {
            return nereus::error(cur.error());
        }
        if (!*cur) {
            return nereus::error(errc::not_bootstrapped);
        }
        if ((*cur)->epoch != c.epoch) {
            return nereus::error(errc::epoch_mismatch);
        }
        if (c.sequence <= (*cur)->sequence) {
            NEREUS_TRY(exec("ROLLBACK;"));
            return apply_outcome::already_applied;
        }
        if (op.what == operation::kind::upsert) {
            statement s(db_, "INSERT OR REPLACE INTO projection_rows (key, value) VALUES (?, ?);");
            if (!s.ok()) {
                return nereus::error(failed(db_, "prepare").error());
            }
            sqlite3_bind_text(s.get(), 1, op.key.data(), static_cast<int>(op.key.size()),
                              SQLITE_STATIC);
            sqlite3_bind_blob(s.get(), 2, payload.data(), static_cast<int>(payload.size()),
                              SQLITE_STATIC);
            if (sqlite3_step(s.get()) != SQLITE_DONE) {
                return nereus::error(failed(db_, "upsert").error());
            }
        } else {
            statement s(db_, "DELETE FROM projection_rows WHERE key = ?;");
            if (!s.ok()) {
                return nereus::error(failed(db_, "prepare").error());
            }
            sqlite3_bind_text(s.get(), 1, op.key.data(), static_cast<int>(op.key.size()),
                              SQLITE_STATIC);
            if (sqlite3_step(s.get()) != SQLITE_DONE) {
                return nereus::error(failed(db_, "delete").error());
            }
        }
        statement s(db_, "UPDATE applied_cursor SET sequence = ? WHERE partition = ?;");
        if (!s.ok()) {
            return nereus::error(failed(db_, "prepare").error());
        }
        sqlite3_bind_int64(s.get(), 1, static_cast<sqlite3_int64>(c.sequence));
        sqlite3_bind_int64(s.get(), 2, c.partition);
        if (sqlite3_step(s.get()) != SQLITE_DONE) {
            return nereus::error(failed(db_, "update cursor").error());
        }
        if (before_commit_) {
            before_commit_();
        }
        NEREUS_TRY(exec("COMMIT;"));
        return apply_outcome::applied;
    };
    auto r = body();
    if (!r) {
        (void)rollback();
    }
    return r;
}

}  // namespace nereus::events
