#pragma once

// The admin REST API of one broker: Pulsar's /admin/v2 subset, the HTTP lookup, /metrics and
// the health check (doc/admin-api.md), served over HTTP/1.1 (http_server.h) by its own
// threads, working directly on the broker's topic registry and backend in the same process.
//
// Ownership: borrows the broker server and the backend (both must outlive it); owns the HTTP
//   server, the router and the shared context.
// Thread-safety: start()/stop() from one controlling thread; requests are handled
//   concurrently; state-changing requests are serialised among themselves.
// Durability: every state-changing endpoint answers only after its change is durable
//   (applied in the broker, durable in the metadata store / stream log, then confirmed by the
//   HTTP response).

#include "nereus/admin/http_server.h"
#include "nereus/base/result.h"
#include "nereus/broker/server.h"
#include "nereus/broker/standalone.h"
#include "nereus/broker/topic_backend.h"

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

namespace nereus::admin {

struct admin_context;
class rate_sampler;
class router;

struct admin_options {
    http_server_options http;
    // Host put into httpUrl answers (lookup, clusters); empty: http.bind_address.
    std::string advertised_host;
    // How often topic counters are sampled for the stats' rates (Pulsar's
    // statsUpdateFrequencyInSecs).
    std::chrono::milliseconds stats_interval{60'000};
};

class admin_server {
public:
    admin_server(broker::server& broker, broker::topic_backend& backend, admin_options options);
    admin_server(const admin_server&) = delete;
    admin_server& operator=(const admin_server&) = delete;
    ~admin_server();

    // Binds and serves. Errors: the bind/listen error.
    [[nodiscard]] result<void> start();
    // Graceful (http_server::stop); idempotent.
    void stop();
    std::uint16_t port() const;
    // The stats' rate sampler (tests sample it at chosen times).
    rate_sampler& rates();

private:
    std::unique_ptr<admin_context> ctx_;
    std::unique_ptr<router> router_;
    std::unique_ptr<http_server> http_;
};

// For `nereus standalone`: the admin API on standalone_options.bind_address:http_port.
broker::standalone_service_factory standalone_admin();

}  // namespace nereus::admin
