#pragma once

// Settings of the client and of each producer, consumer and reader. Plain values with
// Pulsar's defaults (the Java client's, unless a line says otherwise); copied in at creation.
// Thread-safety: thread-compatible values.

#include "nereus/client/message.h"
#include "nereus/client/message_id.h"

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace nereus::client {

using namespace std::chrono_literals;

// ---- client ----

// Reconnect pacing: first retry after `initial`, doubling up to `max` (Pulsar: 100 ms .. 60 s).
struct backoff_policy {
    std::chrono::milliseconds initial{100};
    std::chrono::milliseconds max{60'000};
};

struct client_options {
    // "pulsar://host:port" (one host; TLS is not supported).
    std::string service_url = "pulsar://127.0.0.1:6650";
    // Bound on every request: lookup, producer/consumer creation, ack receipts, seeks, close.
    std::chrono::milliseconds operation_timeout{30'000};
    std::chrono::milliseconds connection_timeout{10'000};
    // PING after this much silence; the connection is dropped after twice as much.
    std::chrono::milliseconds keep_alive_interval{30'000};
    // LOOKUP Redirect hops followed before the lookup fails (errc::lookup_failed).
    std::uint32_t max_lookup_redirects = 20;
    backoff_policy reconnect_backoff;
    // Threads of the io_context the client owns (ignored when the client is given an executor).
    std::uint32_t io_threads = 1;
    std::string client_version = "Nereus-Client-CPP";
};

// ---- producer ----

enum class compression_type : std::int32_t { none = 0, lz4 = 1, zlib = 2, zstd = 3, snappy = 4 };

// What send() does when max_pending_messages are already pending.
enum class queue_full_policy : std::uint8_t {
    block,  // the send waits for room (up to send_timeout when set)
    fail,   // the send completes at once with errc::producer_queue_full
};

// Partitioned topics: which partition a message goes to. A message with a key always goes to
// partition murmur3_32(key) % partitions, as Pulsar's Java client routes it.
enum class routing_mode : std::uint8_t {
    round_robin,       // keyless messages: next partition per batch (Java: RoundRobinPartition)
    single_partition,  // keyless messages: one partition picked at random when created
};

struct producer_options {
    std::string topic;  // "name", "tenant/ns/name" or "persistent://tenant/ns/name"
    std::optional<std::string> producer_name;  // absent: the broker names it
    // A send not receipted within this completes with errc::timeout (0: never).
    std::chrono::milliseconds send_timeout{30'000};
    std::uint32_t max_pending_messages = 1000;  // over all partitions of the topic
    queue_full_policy queue_full = queue_full_policy::block;
    bool batching = true;
    std::uint32_t batch_max_messages = 1000;
    std::uint32_t batch_max_bytes = 128 * 1024;
    std::chrono::microseconds batch_max_delay{10'000};
    compression_type compression = compression_type::none;
    routing_mode routing = routing_mode::round_robin;
    // Sequence id of the first message (absent: one after the broker's last for this name).
    std::optional<std::uint64_t> initial_sequence_id;
    std::vector<property> properties;
};

// ---- consumer ----

enum class subscription_type : std::int32_t {
    exclusive = 0,
    shared = 1,
    failover = 2,
    key_shared = 3
};

enum class initial_position : std::int32_t { latest = 0, earliest = 1 };

// The Java client's DeadLetterPolicy. A message whose redelivery_count reaches
// max_redeliver_count is, instead of being delivered again, published to the dead-letter topic
// (with the properties REAL_TOPIC, ORIGIN_MESSAGE_ID and the original key) and then
// acknowledged on its own subscription — only after the dead-letter publish was receipted.
// Note the Pulsar trap: the broker's redelivery count is in memory only (see message.h).
struct dead_letter_policy {
    std::uint32_t max_redeliver_count = 0;  // must be > 0
    std::string dead_letter_topic;          // empty: "<topic>-<subscription>-DLQ"
    std::string retry_letter_topic;         // empty: "<topic>-<subscription>-RETRY"
};

struct consumer_options {
    // One topic, or several (the consumer receives from all of them; a partitioned topic counts
    // as all its partitions).
    std::vector<std::string> topics;
    // Or a pattern subscription (Pulsar's topicsPattern; `topics` must then be empty): an
    // ECMAScript regex over full topic names of one namespace, "persistent://tenant/ns/orders-.*"
    // (client/pattern.h). The consumer subscribes to every matching topic the namespace lists
    // (none is fine), and lists it again every pattern_auto_discovery_period: it subscribes to
    // topics that appeared (at `start`: a new topic is joined after it was created, so use
    // initial_position::earliest to get the messages published before the consumer noticed it)
    // and closes its consumers of topics no longer listed; the other topics are not disturbed.
    std::string topics_pattern;
    // Java's patternAutoDiscoveryPeriod (1 minute). Paced by the client's 100 ms tick.
    std::chrono::milliseconds pattern_auto_discovery_period{60'000};
    std::string subscription;
    subscription_type type = subscription_type::exclusive;
    std::string consumer_name;  // empty: a generated one
    initial_position start = initial_position::latest;
    // Messages the broker may push ahead of receive() (FLOW permits), per topic partition.
    std::uint32_t receiver_queue_size = 1000;
    // Unacknowledged messages are redelivered after this (0: off; Pulsar's minimum is 1 s).
    std::chrono::milliseconds ack_timeout{0};
    // A negatively acknowledged message is redelivered after this delay.
    std::chrono::milliseconds nack_redelivery_delay{60'000};
    // Ack grouping (consumer.h): individual acks made while an ACK of the same topic partition
    // awaits its answer go out together, as one ACK of at most this many ids, when it is
    // answered (a full group goes at once). 1: every ack is its own ACK.
    std::uint32_t max_acks_per_request = 1000;
    std::optional<dead_letter_policy> dead_letter;
    // Enables reconsume_later(): failed messages go to the retry-letter topic, which this
    // consumer also subscribes to (Java: enableRetry). Needs `dead_letter` for the topic names
    // and the redelivery limit (defaults apply when it is absent).
    bool retry_enable = false;
    std::int32_t priority_level = 0;
    std::vector<property> properties;
    // Read the topic's compacted view first, then the log after its horizon (Pulsar's
    // readCompacted; Exclusive/Failover only). doc/compaction.md.
    bool read_compacted = false;
};

// ---- reader ----

struct reader_options {
    std::string topic;  // one non-partitioned topic, or one partition
    message_id start_message_id = message_id::earliest();
    bool start_inclusive = false;  // also deliver the message at start_message_id
    std::uint32_t receiver_queue_size = 1000;
    std::string reader_name;      // empty: a generated one
    bool read_compacted = false;  // as consumer_options::read_compacted
};

}  // namespace nereus::client
