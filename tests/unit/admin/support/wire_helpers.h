#pragma once

// Wire-level conversations the admin tests need (a producer, a consumer, acks, partitioned
// metadata), over the broker tests' wire_client. Every wait is bounded by the client.

#include "support/wire_client.h"
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace nereus::admin::test {

using broker::test::wire_client;
using proto::command_type;

// PRODUCER → PRODUCER_SUCCESS.
inline bool create_producer(wire_client& c, std::string_view topic, std::uint64_t id) {
    proto::producer_args a;
    a.topic = topic;
    a.producer_id = id;
    a.request_id = 1000 + id;
    c.send([&](proto::frame_buffer& b) { return c.writer().producer(b, a).has_value(); });
    return c.expect(command_type::producer_success).has_value();
}

// n SENDs with payloads "m<first>".."m<first+n-1>", each receipted in order.
inline int produce(wire_client& c, std::uint64_t producer_id, int n, int first = 0) {
    for (int i = 0; i < n; ++i) {
        c.send_message(producer_id, static_cast<std::uint64_t>(first + i),
                       "m" + std::to_string(first + i));
    }
    int ok = 0;
    for (int i = 0; i < n; ++i) {
        auto r = c.expect(command_type::send_receipt);
        if (!r) {
            return ok;
        }
        ++ok;
    }
    return ok;
}

// SUBSCRIBE (Exclusive unless `type`), answered SUCCESS; then FLOW `permits`.
inline bool subscribe(wire_client& c,
                      std::string_view topic,
                      std::string_view sub,
                      std::uint64_t consumer_id,
                      std::uint32_t permits,
                      bool earliest = true,
                      std::int32_t type = 0) {
    proto::subscribe_args a;
    a.topic = topic;
    a.subscription = sub;
    a.sub_type = type;
    a.consumer_id = consumer_id;
    a.request_id = 2000 + consumer_id;
    a.consumer_name = "c";
    a.initial_position = earliest ? 1 : 0;
    c.send([&](proto::frame_buffer& b) { return c.writer().subscribe(b, a).has_value(); });
    auto r = c.expect(command_type::success);
    if (!r) {
        return false;
    }
    return c.send([&](proto::frame_buffer& b) {
        return c.writer().flow(b, consumer_id, permits).has_value();
    });
}

struct got_message {
    std::uint64_t ledger_id = 0;
    std::uint64_t entry_id = 0;
    std::string payload;
};

// Exactly n MESSAGEs (fewer on timeout).
inline std::vector<got_message> receive(wire_client& c, int n) {
    std::vector<got_message> out;
    for (int i = 0; i < n; ++i) {
        auto m = c.expect(command_type::message);
        if (!m) {
            break;
        }
        const auto& id = m->cmd.message().message_id();
        out.push_back({id.ledgerid(), id.entryid(), m->payload});
    }
    return out;
}

inline std::vector<std::string> payloads(const std::vector<got_message>& v) {
    std::vector<std::string> out;
    for (const auto& m : v) {
        out.push_back(m.payload);
    }
    return out;
}

// ACK (individual, or cumulative) with a request id; true when ACK_RESPONSE has no error.
inline bool ack(wire_client& c,
                std::uint64_t consumer_id,
                std::uint64_t ledger_id,
                std::uint64_t entry_id,
                bool cumulative = false) {
    static std::uint64_t request = 5000;
    proto::message_id id;
    id.ledger_id = ledger_id;
    id.entry_id = entry_id;
    proto::ack_args a;
    a.consumer_id = consumer_id;
    a.cumulative = cumulative;
    a.ids = std::span(&id, 1);
    a.request_id = ++request;
    c.send([&](proto::frame_buffer& b) { return c.writer().ack(b, a).has_value(); });
    auto r = c.expect(command_type::ack_response);
    return r && !r->cmd.ackresponse().has_error();
}

// PARTITIONED_METADATA → the partition count (nullopt on failure).
inline std::optional<std::uint32_t> partitioned_metadata(wire_client& c, std::string_view topic) {
    static std::uint64_t request = 7000;
    const auto req = ++request;
    c.send([&](proto::frame_buffer& b) {
        return c.writer().partitioned_metadata(b, topic, req).has_value();
    });
    auto r = c.expect(command_type::partitioned_metadata_response);
    if (!r || r->cmd.partitionmetadataresponse().has_error()) {
        return std::nullopt;
    }
    return r->cmd.partitionmetadataresponse().partitions();
}

}  // namespace nereus::admin::test
