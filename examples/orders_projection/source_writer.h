#pragma once

// The orders source's writer: creates, updates and deletes orders on a keyed topic (key = order
// id, value = orders/v1 JSON, delete = tombstone, i.e. an empty payload), choosing mutations
// with a seeded PRNG. It tracks what it wrote (per id: version and whether alive) only to pick
// the next valid mutation; the self-check never compares against this memory — it reads the
// topic back (source_dump.h).
//
// Every mutate() call returns once the broker receipted each message it sent (send receipts
// are sent once the message is durable), so "committed" below means receipted.
//
// Ownership: owns its producer (closed by close() or the destructor's best effort).
// Thread-safety: thread-compatible: one thread at a time (the self-check's writer thread).

#include "nereus/base/result.h"
#include "nereus/client/client.h"

#include "order.h"
#include <chrono>
#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <vector>

namespace orders {

struct writer_counts {
    std::uint64_t creates = 0;
    std::uint64_t updates = 0;
    std::uint64_t deletes = 0;
    std::uint64_t total() const { return creates + updates + deletes; }
};

class source_writer {
public:
    // Creates the producer (batching off: one entry per mutation). Errors: the client's.
    [[nodiscard]] static nereus::result<source_writer> open(const nereus::client::client& c,
                                                            const std::string& topic,
                                                            std::uint64_t seed,
                                                            std::uint32_t id_space);

    // Creates orders o-00000 .. o-<n-1> (version 1). Blocks until all are receipted.
    [[nodiscard]] nereus::result<nereus::client::message_id> create_initial(std::uint32_t n);
    // Sends `n` random mutations (about 70% updates, 15% deletes, 15% creates or re-creates of
    // deleted ids) in flight together, and returns the last receipted id.
    [[nodiscard]] nereus::result<nereus::client::message_id> mutate(std::uint32_t n);

    // One update of a live order (a create when none is live).
    [[nodiscard]] nereus::result<nereus::client::message_id> update_one();
    // One delete (a tombstone) of a live order (an update when none is live). The self-check
    // ends the source on it: a snapshot whose barrier is a tombstone dropped by compaction
    // must still complete while the topic stays idle (the broker's GET_LAST_MESSAGE_ID for
    // read_compacted readers, doc/events.md).
    [[nodiscard]] nereus::result<nereus::client::message_id> delete_one();

    [[nodiscard]] const writer_counts& counts() const { return counts_; }
    void close();

private:
    struct tracked {
        std::uint64_t version = 0;
        bool alive = false;
    };
    source_writer(nereus::client::producer p, std::uint64_t seed, std::uint32_t id_space)
        : producer_(std::move(p)), rng_(seed), id_space_(id_space) {}
    nereus::client::outgoing_message next();
    nereus::client::outgoing_message upsert(const std::string& id, tracked& t);
    nereus::result<nereus::client::message_id> send_all(
        std::vector<nereus::client::outgoing_message> ms);

    nereus::client::producer producer_;
    std::mt19937_64 rng_;
    std::uint32_t id_space_;
    std::map<std::string, tracked> orders_;
    writer_counts counts_;
};

[[nodiscard]] std::string order_id(std::uint32_t i);

}  // namespace orders
