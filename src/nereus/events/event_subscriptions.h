#pragma once

// The explicit delivery API of durable SNAPSHOT→EVENT subscriptions (seed 001, issue 6), a
// library over nereus::client and the broker's admin REST API (never over broker internals).
//
//   event_subscriptions subs = *event_subscriptions::open({.service_url = ..., .admin_url = ...});
//   subs.declare_policy("order-events", policy{.source_topic = "orders", ...});
//   subs.register_subscription({"orders-projection", "order-events"}, &store);
//   auto pg = subs.poll("orders-projection", 128, deadline);         // acknowledges nothing
//   ... apply pg->events ...
//   subs.ack("ack-page-42", "orders-projection", pg->through, 30s, deadline);
//
// bootstrap(subscription) captures the snapshot and its barrier: it triggers a broker
//   compaction (PUT .../compaction), awaits it, reads every partition's compaction horizon
//   (the barrier; published with the view by one CAS, doc/compaction.md) and starts a new
//   epoch in the state record. The SNAPSHOT is the broker's compacted view up to the barrier
//   (read with read_compacted), EVENTs are the log strictly after it. doc/events.md.
// poll(subscription, max, deadline) leases and returns the next page (SNAPSHOT pages first,
//   then EVENT pages); an empty page when nothing arrived before the deadline. It acknowledges
//   nothing: an unacked page is redelivered once its lease expires (to any process).
// ack(ack_id, subscription, through, lease, deadline) acknowledges the leased page ending at
//   `through` and renews this process's other leases to now + lease (0: unchanged). It is
//   idempotent by ack_id: repeating an ack whose reply was lost returns the same committed
//   cursor and changes nothing. *confirmed*: it returns once the broker stored the record.
// position(subscription) reads the durably acknowledged cursor from the broker.
//
// Where state lives (doc/events.md): the subscription's state record (epoch, barriers,
// committed cursors, recent ackIds, leases, owner) is the property map of a durable
// subscription on a topic in the policy's metadata scope, written with a compare-and-set on
// its version (admin API PUT .../properties?ifVersion=N); each source partition has a durable
// subscription whose mark-delete position follows the committed cursor, so the broker keeps
// the history not yet acknowledged and an admin skip/reset of it is seen as expiry. Two
// processes (or two event_subscriptions) sharing one identity see the same leases.
//
// Restart: register_subscription applies the policy's restart policy: RESUME continues after
// the committed cursor (a snapshot that was not completely acknowledged is retaken from its
// first page, same epoch and barrier, once its holder's lease expired: the image is replaced
// as a whole), SNAPSHOT always starts a new epoch (and so disturbs any process sharing it).
// The snapshot is leased to one holder at a time and delivered one page at a time: poll
// returns the same SNAPSHOT page until it is acked. EVENT pages: under the policy's default
// lease_order::per_partition at most one page per partition is leased at a time (the next one
// after the previous was acked; an expired page before anything later), so a projection's
// apply_once sees each partition in order; `unordered` leases pages independently. Expiry (the
// source subscription was deleted, its cursor moved past the committed one, or the history after it
// was trimmed): STOP → every poll/ack is errc::expired; RESNAPSHOT → a new epoch whose SNAPSHOT
// deliveries are marked. A timeout (errc::timeout) says nothing about expiry and changes nothing.
//
// Ownership: owns its client connection and readers. Thread-safety: thread-safe; calls are
//   serialised per instance (one mutex). Blocking: every call blocks the calling thread until
//   it completes or its deadline passes; never call it from the client's own threads.

#include "nereus/base/result.h"
#include "nereus/events/delivery.h"
#include "nereus/events/policy.h"
#include "nereus/events/projection_repository.h"

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace nereus::events {

using deadline_t = std::chrono::steady_clock::time_point;

struct host_options {
    std::string service_url = "pulsar://127.0.0.1:6650";  // the Pulsar binary protocol
    std::string admin_url = "http://127.0.0.1:8080";      // the broker's admin REST API
    // Identifies this process's leases (empty: "<hostname>-<pid>-<random>").
    std::string holder_id;
    // Bound on each admin request / client operation.
    std::chrono::milliseconds operation_timeout{30'000};
    // How long bootstrap waits for the broker's compaction to finish.
    std::chrono::milliseconds compaction_timeout{120'000};
};

// What bootstrap captured: the epoch and each partition's barrier (the last source sequence
// in the snapshot; nullopt: the partition was empty).
struct bootstrap_info {
    std::uint64_t epoch = 0;
    std::vector<std::optional<cursor>> barriers;
    bool resnapshot = false;
};

// The durably acknowledged position: per partition the committed cursor (nullopt: nothing
// committed in this epoch yet) and whether the epoch's snapshot was completely acknowledged.
struct subscription_position {
    std::uint64_t epoch = 0;
    bool snapshot_complete = false;
    std::vector<std::optional<cursor>> committed;
    // Pages leased (to any holder) and not acknowledged yet, the snapshot lease included.
    std::size_t leased_pages = 0;
};

// What an ack committed: the cursor recorded for ack_id (the same on a repeat) and whether
// this call was a repeat of an earlier ack with the same id.
struct ack_result {
    cursor committed;
    bool repeated = false;
};

class event_subscriptions {
public:
    // Connects the client; nothing is read yet. Errors: broker (unreachable service URL).
    [[nodiscard]] static result<std::unique_ptr<event_subscriptions>> open(host_options o);
    ~event_subscriptions();
    event_subscriptions(const event_subscriptions&) = delete;
    event_subscriptions& operator=(const event_subscriptions&) = delete;

    // Declares (or replaces) a named policy. Errors: invalid_argument (no source topic).
    [[nodiscard]] result<void> declare_policy(std::string name, policy p);

    // Registers a subscription value under a declared policy and applies its restart policy
    // (see above; may bootstrap). `store` is the projection store the handler writes to: RESUME
    // with a store that is not durable is refused (errc::resume_needs_durable_store); nullptr
    // means "the caller vouches nothing" and is refused for RESUME too.
    // Errors: unknown_policy, resume_needs_durable_store, ownership_denied, expired, timeout,
    // broker.
    [[nodiscard]] result<void> register_subscription(const registration& r,
                                                     const projection_repository* store,
                                                     deadline_t deadline);

    // Captures a fresh snapshot + barrier at a new epoch (explicitly managed subscriptions).
    [[nodiscard]] result<bootstrap_info> bootstrap(std::string_view subscription,
                                                   deadline_t deadline);

    // The next page (max deliveries, capped by the policy's page bounds); empty when nothing
    // arrived before `deadline`. Errors: not_registered, expired (STOP), fenced, conflict,
    // timeout, broker.
    [[nodiscard]] result<page> poll(std::string_view subscription,
                                    std::size_t max,
                                    deadline_t deadline);

    // Errors: ack_beyond_delivered / ack_behind_committed (the error is logged with the
    // committed cursor; position() returns it), epoch_mismatch (a stale epoch), lease_lost,
    // expired, fenced, timeout (outcome unknown: repeat with the same ack_id, or read
    // position()), broker.
    [[nodiscard]] result<ack_result> ack(std::string_view ack_id,
                                         std::string_view subscription,
                                         const cursor& through,
                                         std::chrono::milliseconds lease,
                                         deadline_t deadline);

    [[nodiscard]] result<subscription_position> position(std::string_view subscription,
                                                         deadline_t deadline);

    // Releases this process's leases and exclusive claim of `subscription` (best effort; an
    // unreleased lease simply expires).
    [[nodiscard]] result<void> release(std::string_view subscription, deadline_t deadline);

    [[nodiscard]] const std::string& holder_id() const noexcept;
    [[nodiscard]] const registration* find_registration(std::string_view subscription) const;

    struct impl;

private:
    explicit event_subscriptions(std::unique_ptr<impl> i);
    std::unique_ptr<impl> impl_;
};

}  // namespace nereus::events
