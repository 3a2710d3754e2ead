#pragma once

// The projection process of the worked scenario (seed 001): it registers the subscription
// value `orders-projection` under the policy `order-events` (source: the orders topic,
// admitted format orders/v1, restart RESUME or SNAPSHOT, expiry STOP) with the events API, and
// runs the explicit loop
//
//   page = poll(subscription, page_size, deadline)      // acknowledges nothing
//   SNAPSHOT page: stage its rows; at snapshot_complete replace_atomically(barriers, image)
//   EVENT page:    apply_once(cursor, operation, payload) for each delivery
//   ack("ack-<epoch>-<partition>-<sequence>", subscription, page.through, lease, deadline)
//
// into the SQLite projection (order_projection.h). The ack id is derived from the page's end,
// so an ack whose reply was lost is repeated with the same id (the events API answers the
// committed cursor without applying anything twice). A SNAPSHOT page is acked once staged in
// memory: if the process dies before the snapshot completed, RESUME retakes the snapshot at a
// new epoch (event_subscriptions.h), so nothing staged-only is ever trusted.
//
// It talks to its parent (the self-check) in lines: on stdout READY, SNAPSHOT-PAGE,
// EVENT-PAGE, PAUSED, CRASH-POINT, CAUGHT-UP, ERROR; on stdin `continue` (leave PAUSED) and
// `drain <sequence>` (exit 0 once everything through that source sequence is applied and
// acked). Run by hand without a parent it simply follows the source until stdin closes.
//
// Fault injection (only for showing that the self-check can fail):
//   crash_after_event_pages = N: after applying the N-th non-empty EVENT page and before its
//     ack, print CRASH-POINT and wait for the parent's SIGKILL (bounded: exit 3 after 5 min).
//   crash_before_apply_event_pages = N: the same after polling the N-th EVENT page, before
//     applying it (its lease keeps it from the next process for a while: the page-order guard
//     below is what keeps the next process from applying later pages first).
//   debug_ack_before_apply: ack each page BEFORE applying it (the bug the seed warns of), so
//     the same crash point loses the page.
//
// Ownership: the process's main. Thread-safety: single-threaded (the client has its own).

#include "nereus/events/policy.h"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

namespace orders {

struct projector_options {
    std::string service_url = "pulsar://127.0.0.1:6650";
    std::string admin_url = "http://127.0.0.1:8080";
    std::string topic = "orders";
    std::string subscription = "orders-projection";
    // The stable namespace of the subscription's state on the broker (policy
    // metadata_namespace); the self-check uses a fresh one per run, so runs never share state.
    std::string metadata_namespace = "orders-example";
    std::string db_path;  // the SQLite projection
    nereus::events::restart_policy restart = nereus::events::restart_policy::resume;
    std::size_t page_size = 64;
    // A polled page is leased this long (the policy's lease): after a crash, the next process
    // gets the unacked page again once it expired. Short for a quick self-check; an ack after
    // the lease expired still succeeds unless another holder took the page meanwhile (only one
    // projection process runs at a time here).
    std::chrono::milliseconds lease{5'000};
    std::uint32_t pause_after_snapshot_pages = 0;      // 0: never pause
    std::uint32_t crash_after_event_pages = 0;         // 0: never
    std::uint32_t crash_before_apply_event_pages = 0;  // 0: never
    bool debug_ack_before_apply = false;
};

// The process's exit code: 0 after a drain (or stdin closed), 1 on an error (an ERROR line
// says which), 3 when a crash point was not killed in time.
int run_projector(const projector_options& o);

}  // namespace orders
