#pragma once

// The handler-driven loop over event_subscriptions (seed 001's @EventSubscription): the host
// supplies the event source, metadata backend, filter and identity (a registration); the
// handler only handles. For each page polled: BATCH calls the handler once with the page,
// SINGLE once per delivery; the handler returns owned asynchronous work (std::future) and the
// ack is sent only after that work completed successfully — not when the callback returns. A
// handler error (or a failed future) leaves the page unacked: it is redelivered after its
// lease (at-least-once), and run() returns the error.
//
// projection_handler(repo) is the standard handler of the worked scenario: SNAPSHOT pages are
// collected and, at snapshot_complete, replace_atomically(barriers, image); EVENTs go through
// apply_once (so a redelivery after a crash between apply and ack changes nothing). It needs
// the policy's default lease_order::per_partition (pages of a partition applied in order; a
// page leased under `unordered` fails with errc::invalid_argument and is never applied).
//
// Ownership: run() borrows the event_subscriptions and the handler for its duration.
// Thread-safety: one run() per registration at a time; it blocks its thread.

#include "nereus/base/result.h"
#include "nereus/events/delivery.h"
#include "nereus/events/event_subscriptions.h"
#include "nereus/events/projection_repository.h"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <future>
#include <string>

namespace nereus::events {

using batch_handler = std::function<std::future<result<void>>(const page&)>;
using single_handler = std::function<std::future<result<void>>(const delivery&)>;

// Wraps a synchronous callback as owned work that is already complete.
inline std::future<result<void>> completed(result<void> r) {
    std::promise<result<void>> p;
    p.set_value(std::move(r));
    return p.get_future();
}

struct run_options {
    std::size_t max_per_poll = 128;
    std::chrono::milliseconds poll_wait{1'000};  // per poll
    std::chrono::milliseconds ack_timeout{30'000};
    // Stop after this many pages acked (0: no limit) / when `stop` becomes true / after
    // `idle_polls` consecutive empty polls once the snapshot is complete and no page is
    // leased to anyone (caught up; 0: never).
    std::uint64_t max_pages = 0;
    const std::atomic<bool>* stop = nullptr;
    std::uint32_t idle_polls = 0;
    // Tests: called after the handler's work completed and before the ack (crash injection).
    std::function<void(const page&)> before_ack;
};

struct run_report {
    std::uint64_t pages_acked = 0;
    std::uint64_t deliveries = 0;
    std::uint64_t snapshots_completed = 0;
};

// BATCH: one handler call per page. Errors: those of poll/ack, or the handler's.
[[nodiscard]] result<run_report> run(event_subscriptions& subs,
                                     const std::string& subscription,
                                     const batch_handler& handler,
                                     const run_options& o = {});
// SINGLE: one handler call per delivery (all of a page's work completes before its ack).
[[nodiscard]] result<run_report> run(event_subscriptions& subs,
                                     const std::string& subscription,
                                     const single_handler& handler,
                                     const run_options& o = {});

// The worked scenario's handler over a projection repository (see above). Upsert payloads are
// decoded with delivery::payload() (an unadmitted format fails the page). The returned
// handler keeps a reference to `repo` and owns the snapshot rows collected so far.
[[nodiscard]] batch_handler projection_handler(projection_repository& repo);

}  // namespace nereus::events
