#pragma once

// Broker configuration (the `nereus standalone` options and the limits of a connection).
// Thread-safety: plain values.

#include "nereus/proto/frame_format.h"

#include <chrono>
#include <cstdint>
#include <string>

namespace nereus::broker {

struct broker_options {
    std::string bind_address = "127.0.0.1";
    std::uint16_t port = 6650;  // 0: pick a free port (tests); server::port() tells which
    // Host put into LOOKUP answers (pulsar://host:port); empty: bind_address.
    std::string advertised_host;
    unsigned io_threads = 2;
    // Threads of the blocking pool (topic opens, subscription create/delete/seek, dispatch
    // cursor reads run there, never on an io thread).
    unsigned blocking_threads =
        16;  // mostly waiting for fsyncs: more overlap, larger group commits
    std::string server_version = "Nereus 0.1.0";

    // A connection must complete CONNECT within this, or it is closed.
    std::chrono::milliseconds handshake_timeout{10'000};
    // PING every interval; a connection silent for two intervals is closed (Java: 30 s).
    std::chrono::milliseconds keepalive_interval{30'000};
    // A frame that has started arriving must make progress within this, else the connection
    // is closed (a truncated frame followed by silence is answered within this time).
    std::chrono::milliseconds frame_stall_timeout{2'000};
    // Graceful stop: how long connections may take to finish in-flight appends and writes.
    std::chrono::milliseconds stop_timeout{5'000};

    // Advertised in CONNECTED; a frame above max_message_size + padding closes the connection.
    std::uint32_t max_message_size = proto::default_max_message_size;
    // Bytes queued for writing on one connection before it is closed as too slow.
    std::size_t max_write_queue_bytes = std::size_t{64} << 20;
    // Entries read from a cursor per dispatch round (and at most the consumers' permits). A
    // read that goes to the blocking pool is one hand-off and one back to the io thread: 1,000 (a
    // Pulsar client's receiver queue) drains a backlog in 2-4x fewer reads than 256 did, as far as
    // the permits allow (doc/perf.md, "Consume + ack path, round 3").
    std::size_t dispatch_batch = 1'000;
    // true: dispatch reads are tried on the io thread first without waiting (subscription_cursor::
    // try_read: open segment files, page-cache hits, free locks) and go to the blocking pool
    // only when that would block. At the tail this saves two thread wake-ups per read and a
    // quarter to a half of the broker's CPU at 5,000 msg/s, but on this loaded 2-core machine
    // the publish latency got worse (doc/perf.md, "Publish latency at 5,000 msg/s, round 4"),
    // so it is off by default: every read on the pool, as before.
    bool inline_reads = false;
    // A consumer stops receiving while it holds this many unacked messages (Pulsar's default).
    std::uint32_t max_unacked_per_consumer = 50'000;
    // Key_Shared look-ahead: entries (and their bytes) the dispatcher holds in memory while
    // they wait for a slot held by another consumer or not covered by any; other keys keep
    // flowing until either bound is reached, then reading stops until acks free slots.
    std::size_t key_shared_max_waiting = 20'000;
    std::size_t key_shared_max_waiting_bytes = std::size_t{64} << 20;

    bool auto_create_topics = true;
};

}  // namespace nereus::broker
