#pragma once

// zk_store — the metadata store on ZooKeeper (3.8, the `zookeeper_mt` C client), shared by every
// broker process that connects to the same ensemble and root.
//
// Layout (spec: doc/format/meta.md, "ZooKeeper backend"): a key is a persistent *slot* znode
// `<root>/k/<hex(key)>` whose dataVersion counts the creations of the key, and the record is its
// child `<slot>/r` (persistent, or ephemeral for an owned key) holding a 5-byte header (format,
// generation) and the value. A version packs (generation, record dataVersion), so a key never
// sees the same version twice, even across delete and re-create.
//
// A multi is decided optimistically: the store reads the state of every key it names, decides
// the ops (conflicts are outcomes decided on that state), then submits ONE zoo_multi that applies
// the net writes guarded by checks on every slot and record read; when a guard fails (another
// process wrote in between) it re-reads and decides again.
//
// Sessions: a nereus session is a ZooKeeper session of its own (one zhandle), with an ephemeral
// marker `<root>/s/<hex(id)>`; check_session is a check on that marker inside the multi, so a
// delayed write of an expired owner fails atomically on the server. Its ttl is enforced here
// (closing the ZooKeeper session when keep_alive() lapses) and, if this process dies or stalls,
// by the ZooKeeper session timeout (the server clamps it to [2, 20] ticks).
//
// The store's own session: when it expires (a stall past its timeout), every watch ends with
// unavailable and the store connects a new session in the background, failing requests with
// unavailable until it is installed (the store's session owns no ephemeral keys, so nothing is
// lost); nereus sessions are not renewed (they end, as their owner must know).
//
// Unknown outcomes: a connection loss or timeout while a zoo_multi is outstanding completes the
// request with errc::unknown_outcome (it may or may not have been applied; the caller re-reads).
// A read that fails the same way completes with errc::unavailable (nothing was written).
//
// Ownership: the caller owns it (std::unique_ptr); it owns its zhandles and its two threads
//   (a worker that runs requests one at a time, in submission order, and the callback thread).
// Thread-safety: thread-safe (see store.h).
// Durability: as the ensemble's: a success completion means committed by a quorum (the server's
//   transaction log is fsynced unless the server runs with forceSync=no).
// Watches: this store's own writes are reported by the store itself (exact versions, before the
// completion); other processes' changes through ZooKeeper watches, re-read and deduplicated by
// version (a burst of remote writes may arrive as its last version only).

#include "nereus/base/result.h"
#include "nereus/meta/store.h"

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

namespace nereus::meta {

struct zk_store_options {
    // "host:port[,host:port...]".
    std::string hosts;
    // An absolute znode path ("/nereus"); created if missing.
    std::string root = "/nereus";
    // The store's own ZooKeeper session (reads and writes not made by an owner session).
    std::chrono::milliseconds session_timeout{4000};
    // How long open() and open_session() wait for a connection.
    std::chrono::milliseconds connect_timeout{10000};
    // Test hook: runs on the worker right before each zoo_multi is sent (e.g. to freeze the
    // server so that the write, not its reads, meets the connection loss). Empty in production.
    std::function<void()> before_multi;
};

class zk_store final : public store {
public:
    // Connects and creates the root. Errors: invalid_argument (bad hosts or root), unavailable
    // (no connection within connect_timeout).
    [[nodiscard]] static result<std::unique_ptr<zk_store>> open(zk_store_options options);
    // Parses "zk://host:port[,host:port]/root[?session_timeout_ms=N]".
    [[nodiscard]] static result<zk_store_options> parse_url(std::string_view url);

    zk_store(const zk_store&) = delete;
    zk_store& operator=(const zk_store&) = delete;
    zk_store(zk_store&&) = delete;
    zk_store& operator=(zk_store&&) = delete;
    ~zk_store() override;

    void multi(std::vector<op> ops, callback<multi_result> done) override;
    void get(std::string key, callback<std::optional<record>> done) override;
    void list(std::string prefix, callback<std::vector<keyed_record>> done) override;
    [[nodiscard]] watch_handle watch(std::string prefix, watch_callback callback) override;
    void open_session(std::chrono::milliseconds ttl, callback<session_id> done) override;
    void keep_alive(session_id session, callback<void> done) override;
    void close_session(session_id session, callback<void> done) override;
    bool is_callback_thread() const override;

    // Test support: makes the server expire the store's own session, as a stall past the
    // session timeout would (a second handle joins the session and closes it). Returns once the
    // server has closed it and the store's connection has seen it expire; the store recovers
    // on its next request or event.
    [[nodiscard]] result<void> expire_own_session_for_test();

    struct impl;

private:
    explicit zk_store(std::unique_ptr<impl> i);
    std::unique_ptr<impl> impl_;
};

}  // namespace nereus::meta
