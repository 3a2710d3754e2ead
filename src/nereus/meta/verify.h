#pragma once

// Offline integrity check of a rocksdb_store directory (for `nereus storage verify`).
//
// Reads every key with RocksDB's block checksums on, decodes every record (format version and
// crc32c), and checks the cross-record invariants of doc/format/meta.md: the store revision is
// at least every record's version, every ephemeral record has its index entry and vice versa,
// every owner is below the session counter, and no key lies outside the known areas.
// Damage is REPORTED (one problem per key, with a reason), not returned as an error; the error
// side is for a directory that cannot be opened at all.
//
// Requires: the store is not open in any process (RocksDB's read-only open is undefined while a
// writer runs). Thread-safety: thread-safe (opens its own read-only instance).
// Durability: reads only; changes nothing (the WAL is replayed in memory, not rewritten).

#include "nereus/base/result.h"
#include "nereus/meta/types.h"

#include <cstdint>
#include <string>
#include <vector>

namespace nereus::meta {

enum class verify_area : std::uint8_t {
    data,             // a "d/" record
    ephemeral_index,  // an "e/" index entry
    meta,             // an "m/" store metadata value
    unknown,          // a key outside the known areas
    engine,           // RocksDB's own files (block checksums, iterator errors)
};

struct verify_problem {
    verify_area area = verify_area::data;
    // The user key for data records (raw bytes: escape with format::printable to display),
    // otherwise the raw RocksDB key; empty for engine-wide problems.
    std::string key;
    std::string reason;
};

struct verify_report {
    std::uint64_t data_records = 0;
    std::uint64_t ephemeral_records = 0;
    std::uint64_t index_entries = 0;
    std::uint64_t format = 0;
    version revision = 0;
    std::uint64_t next_session = 0;
    std::vector<verify_problem> problems;

    bool ok() const { return problems.empty(); }
};

// Errors: io_error when `dir` cannot be opened (absent, not a RocksDB directory),
// corrupt_record when RocksDB cannot open it because its own metadata is damaged.
[[nodiscard]] result<verify_report> verify_rocksdb_store(const std::string& dir);

}  // namespace nereus::meta
