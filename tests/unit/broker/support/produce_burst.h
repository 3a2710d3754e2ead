#pragma once

// Sends `count` 100 B SENDs (producer 0, sequence ids from `first`) in one write, then reads
// their receipts and checks they come back in sequence order. For the allocation tests, whose
// measured loops must not allocate on the test thread's behalf beyond this.
//
// Ownership: uses the caller's client. Thread-safety: the caller's thread only.

#include "nereus/proto/commands.h"

#include <gtest/gtest.h>

#include "support/wire_client.h"
#include <chrono>
#include <cstdint>
#include <span>
#include <string>

namespace nereus::broker::test {

inline void produce_burst(wire_client& c, std::uint64_t first, std::uint64_t count) {
    proto::frame_buffer b;
    const std::string payload(100, 'x');
    const auto bytes = std::as_bytes(std::span(payload.data(), payload.size()));
    for (std::uint64_t i = first; i < first + count; ++i) {
        proto::pb::MessageMetadata md;
        md.set_producer_name("alloc");
        md.set_sequence_id(i);
        md.set_publish_time(1'700'000'000'000ULL + i);
        proto::send_args s;
        s.producer_id = 0;
        s.sequence_id = i;
        s.num_messages = 1;
        ASSERT_TRUE(c.writer().send(b, s, md, bytes).has_value());
    }
    ASSERT_TRUE(c.send_raw(b));
    for (std::uint64_t i = first; i < first + count; ++i) {
        auto r = c.expect(proto::command_type::send_receipt, std::chrono::seconds(60));
        ASSERT_TRUE(r) << "receipt " << i;
        ASSERT_EQ(r->cmd.send_receipt().sequence_id(), i);
    }
}

}  // namespace nereus::broker::test
