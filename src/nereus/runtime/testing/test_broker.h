#pragma once

// The in-process test transport (compiled only with the CMake option NEREUS_TESTING): a broker
// model that takes the Pulsar client's place under the runtime, with the production
// descriptors, policies and settings.
//
// It models: full topic names (short names completed as the server does); subscriptions over a
// topic, a list or a pattern (a pattern also picks up topics created later); the four
// subscription types (Exclusive refuses a second consumer; Failover delivers to the first
// consumer by name, the next one takes over when it closes; Shared round-robin; Key_Shared by a
// hash of the key); initial position; individual acks; nacks (redelivered at once with
// redelivery_count + 1); a closed consumer's unacked messages going back to the subscription;
// the retained log a seek moves over (earliest, latest, message id, publish time: acks at or
// after the position are forgotten, as Pulsar's cursor reset does); publish times from the
// runtime's (virtual) clock. The dead-letter policy and delayed retries are the runtime's own
// (driver.h, runtime.h), so they run here exactly as in production.
// It refuses what a server refuses: a payload over max_message_size (errc::message_too_large),
// a second consumer of an Exclusive subscription or a consumer of another type
// (errc::consumer_busy), any handle of a connection used after its shutdown (errc::shut_down).
// Fault injection: fail_next_acks(n) makes the next n acks unconfirmed (errc::settle_failed).
//
// What is the server's own is left to a live run (see the conformance suite's feature flags):
// Key_Shared hash ranges, which Shared consumer the server picks, ack-timeout redelivery,
// partitioned topics.
//
// Ownership: a test_broker is shared (shared_ptr) by every test_connection on it; a connection
// by its transport handle and the consumers/producers opened through it.
// Thread-safety: strand-confined to the one executor the runtimes run on.
// Durability: in memory; everything is confirmed at once (there is nothing to wait for).

#include "nereus/base/result.h"
#include "nereus/runtime/clock.h"
#include "nereus/runtime/ports.h"
#include "nereus/runtime/spec.h"

#include <boost/asio/any_io_executor.hpp>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

namespace nereus::runtime::testing {

struct broker_settings {
    std::size_t max_message_size = 5 * 1024 * 1024;  // Pulsar's maxMessageSize default
};

class test_consumer;

class test_broker : public std::enable_shared_from_this<test_broker> {
public:
    test_broker(clock& clk, broker_settings s = {}) : clock_(&clk), settings_(s) {}

    [[nodiscard]] const broker_settings& settings() const { return settings_; }

    // --- what the test transport calls ---
    result<std::unique_ptr<consumer_port>> subscribe(const boost::asio::any_io_executor& ex,
                                                     const subscriber_spec& spec,
                                                     std::string consumer_name,
                                                     std::shared_ptr<bool> connection_closed);
    result<message_id> publish(const std::string& topic, const outgoing& m);

    // --- inspection for tests ---
    // Every message retained on `topic` (full or short name), in order.
    [[nodiscard]] std::vector<std::string> retained_payloads(const std::string& topic) const;
    // Messages of `subscription` on `topic` not yet acknowledged.
    [[nodiscard]] std::size_t backlog(const std::string& topic,
                                      const std::string& subscription) const;
    [[nodiscard]] std::size_t consumers(const std::string& topic,
                                        const std::string& subscription) const;
    void fail_next_acks(std::size_t n) { fail_acks_ = n; }
    [[nodiscard]] std::size_t producers_opened() const { return producers_opened_; }
    void count_producer() { ++producers_opened_; }

    // --- used by test_consumer ---
    struct stored {
        message_id id;
        std::optional<std::string> key;
        std::string payload;
        std::vector<property> properties;
        publish_time published{0};
    };
    struct sub_state {
        subscription_type type = subscription_type::shared;
        std::vector<test_consumer*> consumers;
        std::size_t mark = 0;                               // every index below is acknowledged
        std::set<std::size_t> acked;                        // individual acks at or above mark
        std::size_t read = 0;                               // next index never dispatched
        std::map<std::size_t, test_consumer*> outstanding;  // dispatched, unacked
        std::set<std::size_t> redeliver;                    // to dispatch again, lowest first
        std::map<std::size_t, std::uint32_t> redeliveries;
        std::size_t rr = 0;
    };
    struct topic_state {
        std::string name;
        std::int64_t ledger = 0;
        std::vector<stored> log;
        std::map<std::string, sub_state> subs;
    };

    result<void> ack(test_consumer& c, const message& m);
    result<void> nack(test_consumer& c, const message& m);
    result<void> seek(test_consumer& c, const position& p);
    void detach(test_consumer& c);

private:
    topic_state& topic(const std::string& full);
    void attach(test_consumer& c, topic_state& t);
    void dispatch(topic_state& t, sub_state& s);
    [[nodiscard]] bool is_acked(const sub_state& s, std::size_t i) const {
        return i < s.mark || s.acked.count(i) != 0;
    }

    clock* clock_;
    broker_settings settings_;
    std::map<std::string, topic_state> topics_;
    std::vector<test_consumer*> pattern_consumers_;
    std::int64_t next_ledger_ = 100;
    std::size_t fail_acks_ = 0;
    std::size_t producers_opened_ = 0;
};

// A connection to the test broker: what a test transport handle holds. Its shutdown makes every
// handle opened through it refuse further use.
class test_connection {
public:
    explicit test_connection(std::shared_ptr<test_broker> b)
        : broker_(std::move(b)), closed_(std::make_shared<bool>(false)) {}
    [[nodiscard]] const std::shared_ptr<test_broker>& broker() const { return broker_; }
    [[nodiscard]] const std::shared_ptr<bool>& closed() const { return closed_; }
    void shutdown() { *closed_ = true; }

private:
    std::shared_ptr<test_broker> broker_;
    std::shared_ptr<bool> closed_;
};

// The producer port over a test connection.
std::unique_ptr<producer_port> make_test_producer(std::shared_ptr<test_broker> b,
                                                  std::shared_ptr<bool> connection_closed,
                                                  std::string topic);

}  // namespace nereus::runtime::testing
