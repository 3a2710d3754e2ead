#pragma once

// The production topic_backend: topics are nereus::ledger managed ledgers over one data
// directory — metadata (cursor roots, topic registry, owner session) in RocksDB at D/meta, the
// stream log at D/streams, cursor snapshots at D/objects.
//
// One owner session per backend (per broker process), kept alive by a small thread; a
// restarted process opens a new session, which expires the dead one's ownership.
//
// Ownership: owns the three stores, the session and every managed_ledger it opened; must
//   outlive the server that uses it. close() (or the destructor) closes the ledgers and stores.
// Thread-safety: thread-safe (see topic_backend.h). Completions run on the stream log's
//   committer thread or the metadata store's callback thread.
// Durability: append and ack completions, seeks and subscription creation/deletion are
//   durable when reported (ledger/managed_ledger.h).

#include "nereus/base/result.h"
#include "nereus/broker/topic_backend.h"

#include <memory>
#include <string>

namespace nereus {
class file_system;
}
namespace nereus::meta {
class store;
}

namespace nereus::broker {

struct ledger_backend_options {
    std::string data_dir = "./data";
    bool auto_create = true;
    // Test seams (fault injection, tests/unit/broker/fault_injection_test.cc); null means
    // production. `fs` (shared) holds the stream log and the object store instead of the POSIX
    // file system; `meta` (borrowed, must outlive the backend) replaces RocksDB at D/meta.
    std::shared_ptr<file_system> fs;
    meta::store* meta = nullptr;
};

class ledger_backend : public topic_backend {
public:
    // Opens (creating) the stores under data_dir and an owner session.
    // Errors: the stores' open errors (e.g. io_error when another process holds the directory).
    [[nodiscard]] static result<std::unique_ptr<ledger_backend>> open(ledger_backend_options o);

    // Closes every opened ledger, the session and the stores. Idempotent.
    virtual result<void> close() = 0;
};

}  // namespace nereus::broker
