#pragma once

// make_store(url) — the one place that maps a store url to a backend (style R8 factories).
//
//   "memory:"         memory_store (no durability; for tests)
//   "rocksdb:<dir>"   rocksdb_store in directory <dir> (created if missing)
//   "zk://host:port[,host:port]/root[?session_timeout_ms=N]"
//                     zk_store on a ZooKeeper ensemble, under znode `root` (default /nereus)
// Ownership: the caller owns the returned store. Thread-safety: thread-safe.

#include "nereus/base/result.h"
#include "nereus/meta/store.h"

#include <memory>
#include <string_view>

namespace nereus::meta {

// Errors: invalid_argument for an unknown scheme or an empty directory, else the backend's
// open errors.
[[nodiscard]] result<std::unique_ptr<store>> make_store(std::string_view url);

}  // namespace nereus::meta
