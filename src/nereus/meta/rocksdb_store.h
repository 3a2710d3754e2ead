#pragma once

// rocksdb_store — the embedded, durable metadata store on RocksDB (one directory, one process).
//
// Layout and recovery rules: record_format.h and doc/format/meta.md. Every record carries a
// header with a crc32c (over header, value and key), so a damaged record is reported as
// errc::corrupt_record (the key is logged) and never decoded as another valid state.
//
// Opening recovers the store revision and session counter, then deletes every ephemeral key
// left by an earlier process (in the embedded backend sessions are process-local, so their
// owners are dead), durably, before any request is served.
//
// Group commit: see detail/local_store.h. Each group is one rocksdb::WriteBatch written with
// WriteOptions::sync = true. If a write fails, its requests complete with errc::unknown_outcome
// (a failed fsync leaves the outcome unknown), watches end with errc::store_failed, and the
// store refuses every later request with errc::store_failed until it is reopened.
//
// Ownership: the caller owns it (std::unique_ptr); it owns the RocksDB instance and its threads.
//   RocksDB's LOCK file keeps a second process (or a second open) out of the directory.
// Thread-safety: thread-safe (see store.h).
// Durability: a success completion of a write means applied and durable (synced WAL).

#include "nereus/base/result.h"
#include "nereus/meta/detail/local_store.h"

#include <cstddef>
#include <memory>
#include <string>

namespace nereus::meta {

struct rocksdb_store_options {
    // The most requests decided and committed as one synced WriteBatch.
    std::size_t max_group = 256;
    bool create_if_missing = true;
};

class rocksdb_store final : public detail::local_store {
public:
    // Opens (or creates) the store in `dir`. Errors: io_error (cannot open, locked by another
    // process), corrupt_record (a metadata record is damaged), incompatible_format.
    [[nodiscard]] static result<std::unique_ptr<rocksdb_store>> open(
        const std::string& dir, rocksdb_store_options options = {});

private:
    rocksdb_store(std::unique_ptr<detail::backend> be, rocksdb_store_options options);
};

}  // namespace nereus::meta
