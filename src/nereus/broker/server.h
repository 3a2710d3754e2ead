#pragma once

// The broker's TCP server: options.io_threads io threads, each running its own io_context; an
// acceptor bound to options.bind_address:port (SO_REUSEADDR, so a restart right after a crash
// can bind again); one strand per accepted connection, on the io_contexts round-robin (a
// connection's work stays on one thread; topics get the io_contexts round-robin too); and a
// graceful stop.
//
// Ownership: owns the io_contexts, the threads, the blocking pool (blocking_pool.h), the topic
//   registry and every connection; borrows the backend, which must outlive the server.
// Thread-safety: start() and stop() are called from one controlling thread (not an io thread);
//   port() and connection_count() are thread-safe.
// Durability: stop() lets in-flight appends finish and be answered (bounded by
//   options.stop_timeout) before it closes connections, then waits for the blocking pool's
//   in-flight work (bounded by stop_timeout; a running call is joined) before it closes the
//   topic stores.

#include "nereus/base/latency_histogram.h"
#include "nereus/base/result.h"
#include "nereus/broker/options.h"
#include "nereus/broker/topic_backend.h"

#include <cstdint>
#include <memory>
#include <string>

namespace nereus::broker {

class topic_registry;

class server {
public:
    server(broker_options options, topic_backend& backend);
    server(const server&) = delete;
    server& operator=(const server&) = delete;
    server(server&&) = delete;
    server& operator=(server&&) = delete;
    // Stops if still running.
    ~server();

    // Binds, listens and starts the io threads. Errors: the bind/listen error.
    [[nodiscard]] result<void> start();
    // Graceful stop; idempotent; blocks until every thread has joined.
    void stop();

    // The bound port (useful with options.port == 0).
    std::uint16_t port() const;
    std::size_t connection_count() const;
    const broker_options& options() const;

    // For the admin API (same process): the topic registry (thread-safe, lives as long as the
    // server) and the pulsar://host:port this server advertises (valid after start()).
    topic_registry& topics();
    std::string service_url() const;
    // Every successful SEND's time in this broker, from the socket read that brought it to its
    // receipt's queueing for the write (any thread; summed over the io threads' histograms).
    latency_histogram::counts publish_latency() const;

private:
    struct impl;
    std::unique_ptr<impl> impl_;
};

}  // namespace nereus::broker
