#pragma once

// The declared spec of a subscriber registration: what it subscribes to, how deliveries are
// dispatched into lanes, batches, and how failures settle. Validated once at registration
// (validate()); the runtime never changes a spec after start.
//
// A plain value. Thread-safety: thread-compatible.

#include "nereus/base/result.h"
#include "nereus/runtime/outcome.h"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace nereus::runtime {

enum class subscription_type : std::uint8_t { exclusive, shared, failover, key_shared };
const char* to_string(subscription_type t);

enum class initial_position : std::uint8_t { latest, earliest };

// One topic, a list of topics, or a pattern (an ECMAScript regex over full topic names, as
// Pulsar's regex subscriptions match "persistent://tenant/ns/.*").
struct topic_selector {
    enum class kind : std::uint8_t { one, list, pattern };
    kind of = kind::one;
    std::vector<std::string> names;  // one or list: full or short names
    std::string pattern;             // pattern

    static topic_selector one(std::string t) { return {kind::one, {std::move(t)}, {}}; }
    static topic_selector list(std::vector<std::string> ts) {
        return {kind::list, std::move(ts), {}};
    }
    static topic_selector matching(std::string regex) {
        return {kind::pattern, {}, std::move(regex)};
    }
};

// How deliveries of one subscription run:
//  sequential  - one at a time in arrival order;
//  workers(n)  - up to n handlers at once, no order;
//  by_key(n)   - n sequential lanes; a message's key picks its lane (same key, same lane, in
//                order). A delivery that ends in retry/retry_after blocks its lane (only its
//                lane) until its redelivery is handled or it is dead-lettered.
struct lanes {
    enum class kind : std::uint8_t { sequential, workers, by_key };
    kind of = kind::sequential;
    std::size_t n = 1;

    static lanes sequential() { return {kind::sequential, 1}; }
    static lanes workers(std::size_t n) { return {kind::workers, n}; }
    static lanes by_key(std::size_t n) { return {kind::by_key, n}; }
};

// Pulsar's client dead-letter policy: a delivery whose redelivery_count has reached
// max_redeliveries and would be retried again goes to `topic` instead. The runtime enforces it
// for every subscription type (the broker's own DLQ skips Exclusive/Failover, apache/pulsar#4100).
struct dead_letter_policy {
    std::uint32_t max_redeliveries = 3;
    std::string topic;  // empty: "<topic>-<subscription>-DLQ", Pulsar's default name
};

struct subscriber_spec {
    topic_selector topics;
    std::string subscription;
    subscription_type type = subscription_type::shared;
    initial_position initial = initial_position::latest;
    lanes dispatch = lanes::sequential();
    // 0: a handler per message. n > 0: a batch handler gets up to n messages at once.
    std::size_t batch_size = 0;
    // How long a batch waits (runtime clock) for more messages once it has one; 0: it takes
    // what is already buffered.
    std::chrono::milliseconds batch_linger{0};
    std::optional<dead_letter_policy> dead_letter;
    outcome on_exception = outcome::retry();      // the handler threw
    outcome on_decode_failure = outcome::drop();  // the codec refused the payload
    // Deliveries taken from the stream and not yet settled, outside blocked lanes; 0: the
    // larger of 16 (the channel) and the lanes' concurrency (times batch_size for batches).
    std::size_t max_in_flight = 0;
    // Deliveries held behind blocked by_key/sequential lanes before the stream stops being
    // pulled (a key that keeps failing then stalls the subscription until it is dead-lettered).
    std::size_t max_parked = 1024;
    std::string consumer_name;  // empty: "<subscription>-<n>"
    // Pulsar's ack timeout: a message received and not settled within it is redelivered by the
    // client consumer (0: off). Pulsar binding only — the test transport has no ack timeout (a
    // live-only behaviour of the conformance suite).
    std::chrono::milliseconds ack_timeout{0};
};

// Checks the spec (names non-empty, lanes n >= 1, by_key not with batches, a valid regex).
[[nodiscard]] result<void> validate(const subscriber_spec& s);

// Pulsar's topic-name completion: "t" -> "persistent://public/default/t",
// "tenant/ns/t" -> "persistent://tenant/ns/t"; full names are returned as they are.
[[nodiscard]] std::string full_topic_name(std::string_view name);

// The dead-letter topic of a subscription on `topic` (policy topic, or Pulsar's default).
[[nodiscard]] std::string dead_letter_topic(const subscriber_spec& s, std::string_view topic);

}  // namespace nereus::runtime
