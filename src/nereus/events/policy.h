#pragma once

// Declared configuration of event subscriptions (seed 001, issue 6): a *policy* is a named,
// declared configuration (source topic and scope, subscription-metadata scope and stable
// namespace, admitted payload format, lease length, page bounds, restart and expiry policies,
// ownership); a *registration* binds a stable subscription value (e.g. "orders-projection") to
// a policy name and a filter (BATCH pages or SINGLE deliveries). The host declares policies and
// registers subscriptions; handlers only handle (host.h).
//
// Ownership: plain values, copied in by event_subscriptions. Thread-safety: thread-compatible.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

namespace nereus::events {

// What a restart (a new event_subscriptions on an existing identity) does.
enum class restart_policy {
    resume,    // continue after the last acked cursor: the projection store must be durable
    snapshot,  // rebuild: a fresh snapshot at a new epoch (the projection is replaced)
};

// What happens when the subscription's cursor expired or its history was trimmed.
enum class expiry_policy {
    stop,        // poll fails with errc::expired and delivers nothing
    resnapshot,  // a new snapshot at a new epoch, every delivery marked `resnapshot`
};

// Several processes sharing one subscription value.
enum class ownership {
    shared_leases,     // at-least-once: each poll leases a page; an expired lease is re-leased
    exclusive_fenced,  // one owner at a time (a Pulsar Exclusive consumer holds the claim); a
                       // second process gets errc::ownership_denied; every state write is fenced
};

// The only payloads that decode: messages carrying the property `format_property` with the
// value "<name>/v<version>" (e.g. "order/v1"). Anything else is errc::unadmitted_format.
// How the EVENT pages of one source partition are leased to the processes sharing an identity.
enum class lease_order {
    // The default. At most one leased, unacknowledged page per partition: the next page of a
    // partition is leased only after the previous one was acknowledged, and a page whose holder
    // died is redelivered (after its lease) before anything later. Required by a projection
    // that uses apply_once (projection_handler): its per-partition applied-cursor check would
    // take an earlier page that arrives after a later one for "already applied" and lose it.
    // Partitions are still leased to different processes in parallel.
    per_partition,
    // Several pages of one partition leased at once to different holders (more parallelism on
    // one partition). A page whose holder died can then come back after later pages were
    // applied: only for consumers that are idempotent per key without a cursor high-water mark.
    // projection_handler refuses such pages (errc::invalid_argument).
    unordered,
};

struct admitted_format {
    std::string name = "event";
    std::uint32_t version = 1;
    static constexpr const char* format_property = "nereus-event-format";
    [[nodiscard]] std::string tag() const { return name + "/v" + std::to_string(version); }
};

struct page_bounds {
    std::size_t max_events = 128;  // a page never has more deliveries (poll's max is capped)
    // A page ends at the first entry boundary at or after this many payload bytes.
    std::size_t max_bytes = 1 << 20;
};

struct policy {
    // Source: a keyed topic (partitioned or not) in `source_scope` ("tenant/namespace").
    std::string source_scope = "public/default";
    std::string source_topic;
    // Subscription metadata: the state record lives in `metadata_scope` ("tenant/namespace",
    // separate from the source's), under the stable `metadata_namespace` (prefixes every
    // identity, so two applications never share state by accident).
    std::string metadata_scope = "public/default";
    std::string metadata_namespace = "events";
    admitted_format format;
    std::chrono::milliseconds lease{30'000};  // a polled page is leased this long
    page_bounds pages;
    restart_policy restart = restart_policy::resume;
    expiry_policy expiry = expiry_policy::stop;
    ownership owner = ownership::shared_leases;
    lease_order order = lease_order::per_partition;
};

enum class filter_mode {
    batch,   // the handler gets a page of deliveries per call
    single,  // the handler gets one delivery per call
};

struct registration {
    std::string subscription;  // stable identity, e.g. "orders-projection"
    std::string policy;        // a declared policy's name
    filter_mode filter = filter_mode::batch;
};

}  // namespace nereus::events
