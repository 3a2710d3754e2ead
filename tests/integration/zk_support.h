#pragma once

// Support for the ZooKeeper integration tests: a `nereus standalone` process with arbitrary
// flags (tests/support/standalone_process.h: free ports, stopped by its PID; SIGKILL /
// SIGSTOP / SIGCONT on demand), and the wire-level steps the tests repeat (lookup, producer,
// subscribe, send, ack) on the test driver `wire_client`. The ZooKeeper server itself is
// tests/unit/meta/support/zk_server.h (Debian's zookeeper, tickTime=200, a free port, stopped
// by PID).
// Ownership: broker_proc owns its child (SIGKILLed and reaped on destruction).
// Thread-safety: thread-compatible (one test thread).

#include "support/standalone_process.h"
#include "support/wire_client.h"
#include <chrono>
#include <optional>
#include <signal.h>
#include <string>
#include <vector>

namespace nereus::broker::test {

// `nereus standalone ARGS` (ARGS carry --data-dir / --metadata / --config) with stdout and
// stderr appended to `log`; --port and --http-port are added (free ports).
class broker_proc : public nereus::test::standalone_process {
public:
    broker_proc(std::vector<std::string> args, std::string log)
        : standalone_process(
              {.binary = NEREUS_BINARY, .log = std::move(log), .args = std::move(args)}) {}
};

// ---- wire steps ----

struct lookup_answer {
    bool connect = false;   // Connect (this broker serves it)
    bool redirect = false;  // Redirect to broker_url
    std::string broker_url;
};

inline std::optional<lookup_answer> lookup(wire_client& c,
                                           std::string_view topic,
                                           std::uint64_t req) {
    c.send([&](proto::frame_buffer& b) { return c.writer().lookup(b, topic, req).has_value(); });
    auto r = c.expect(proto::command_type::lookup_response);
    if (!r) {
        return std::nullopt;
    }
    const auto& l = r->cmd.lookuptopicresponse();
    lookup_answer a;
    a.connect = l.response() == proto::pb::CommandLookupTopicResponse::Connect;
    a.redirect = l.response() == proto::pb::CommandLookupTopicResponse::Redirect;
    a.broker_url = l.brokerserviceurl();
    return a;
}

// PRODUCER → true on PRODUCER_SUCCESS; `error` gets the server error of an ERROR answer.
inline bool create_producer(wire_client& c,
                            std::string_view topic,
                            std::uint64_t producer_id,
                            std::uint64_t req,
                            int* error = nullptr) {
    proto::producer_args p;
    p.topic = topic;
    p.producer_id = producer_id;
    p.request_id = req;
    c.send([&](proto::frame_buffer& b) { return c.writer().producer(b, p).has_value(); });
    for (;;) {
        auto r = c.next(std::chrono::seconds(10));
        if (!r) {
            return false;
        }
        if (r->type == proto::command_type::producer_success) {
            return true;
        }
        if (r->type == proto::command_type::error) {
            if (error != nullptr) {
                *error = r->cmd.error().error();
            }
            return false;
        }
    }
}

// SUBSCRIBE (Shared, earliest) → true on SUCCESS; `error` as above.
inline bool subscribe_shared(wire_client& c,
                             std::string_view topic,
                             std::string_view sub,
                             std::uint64_t consumer_id,
                             std::uint64_t req,
                             int* error = nullptr) {
    proto::subscribe_args a;
    a.topic = topic;
    a.subscription = sub;
    a.sub_type = 1;  // Shared
    a.consumer_id = consumer_id;
    a.request_id = req;
    a.initial_position = 1;  // Earliest
    c.send([&](proto::frame_buffer& b) { return c.writer().subscribe(b, a).has_value(); });
    for (;;) {
        auto r = c.next(std::chrono::seconds(10));
        if (!r) {
            return false;
        }
        if (r->type == proto::command_type::success) {
            return true;
        }
        if (r->type == proto::command_type::error) {
            if (error != nullptr) {
                *error = r->cmd.error().error();
            }
            return false;
        }
    }
}

}  // namespace nereus::broker::test
