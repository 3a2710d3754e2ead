#pragma once

// Counters and histograms shared by the perf tool's producers, consumers and reporter, plus the
// payload header that carries the send time end to end.
//
// Payload header (first 24 bytes of every payload of at least that size, host byte order; the
// tool runs producer and consumer on one machine):
//   [0,4)  magic "NRPF"     [4,8)   run id (random per process)
//   [8,16) intended send time, CLOCK_REALTIME ns (the schedule's time in fixed-rate mode)
//   [16,20) producer index  [20,24) message index within that producer
// Shorter payloads carry no header; the consumer then measures from MessageMetadata.publish_time
// (ms resolution).
//
// Thread-safety: thread-compatible. With `produce --consume` on two threads the producer fields
// are written by the producers' thread and the consumer fields by the consumers' (perf.cc,
// run_state); each side reads the other's only after a release/acquire hand-off.

#include "apps/nereus/perf/histogram.h"
#include <chrono>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <vector>

namespace nereus::app::perf {

inline constexpr std::size_t payload_header_bytes = 24;
inline constexpr std::uint32_t payload_magic = 0x4652504e;  // "NRPF" little-endian

struct payload_header {
    std::uint32_t run_id = 0;
    std::uint64_t send_ns = 0;
    std::uint32_t producer = 0;
    std::uint32_t index = 0;
};

inline void write_payload_header(std::span<std::byte> p, const payload_header& h) noexcept {
    if (p.size() < payload_header_bytes) {
        return;
    }
    std::memcpy(p.data(), &payload_magic, 4);
    std::memcpy(p.data() + 4, &h.run_id, 4);
    std::memcpy(p.data() + 8, &h.send_ns, 8);
    std::memcpy(p.data() + 16, &h.producer, 4);
    std::memcpy(p.data() + 20, &h.index, 4);
}

inline std::optional<payload_header> read_payload_header(std::span<const std::byte> p) noexcept {
    if (p.size() < payload_header_bytes) {
        return std::nullopt;
    }
    std::uint32_t magic = 0;
    std::memcpy(&magic, p.data(), 4);
    if (magic != payload_magic) {
        return std::nullopt;
    }
    payload_header h;
    std::memcpy(&h.run_id, p.data() + 4, 4);
    std::memcpy(&h.send_ns, p.data() + 8, 8);
    std::memcpy(&h.producer, p.data() + 16, 4);
    std::memcpy(&h.index, p.data() + 20, 4);
    return h;
}

inline std::uint64_t realtime_ns() noexcept {
    return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                          std::chrono::system_clock::now().time_since_epoch())
                                          .count());
}

struct perf_stats {
    // ---- producers ----
    std::uint64_t sent = 0;       // messages handed to SEND frames
    std::uint64_t receipted = 0;  // messages whose SEND_RECEIPT arrived
    std::uint64_t receipted_bytes = 0;
    std::uint64_t send_errors = 0;  // SEND_ERROR (messages)
    histogram publish_total;        // ns from intended send to receipt
    // The split of publish_total: intended send -> the SEND frame is encoded (the tool's own
    // lag: timer wake-up, a full window), and that moment -> receipt (the broker's part plus
    // the two socket hops). Batched messages count from their batch's encoding.
    histogram send_lag;
    histogram publish_from_send;
    histogram publish_interval;
    std::chrono::steady_clock::time_point last_receipt{};

    // ---- consumers ---- (on their own cache lines: another thread may write them)
    alignas(64) std::uint64_t consumed =
        0;  // messages received (batch entries counted per message)
    std::uint64_t consumed_bytes = 0;
    std::uint64_t foreign = 0;     // produce --consume: messages of other runs (older backlog)
    std::uint64_t duplicates = 0;  // produce --consume: a message seen twice
    std::uint64_t distinct = 0;    // produce --consume: distinct messages of this run
    std::uint64_t acked = 0;       // messages covered by ACK frames sent
    std::uint64_t ack_requests = 0;
    std::uint64_t ack_responses = 0;
    std::uint64_t ack_errors = 0;
    std::uint64_t bad_messages = 0;  // checksum / metadata / batch problems
    histogram e2e_total;             // ns from intended send to receive
    histogram e2e_interval;
    std::chrono::steady_clock::time_point first_message{};
    std::chrono::steady_clock::time_point last_message{};

    // produce --consume with a known count: one flag per (producer, index).
    std::uint32_t run_id = 0;
    bool track = false;
    std::vector<std::uint64_t> first_index;  // per producer: offset into seen
    std::vector<std::uint64_t> quota;        // per producer: messages it sends
    std::vector<std::uint8_t> seen;
};

}  // namespace nereus::app::perf
