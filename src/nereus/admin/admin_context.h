#pragma once

// What the admin API's handlers share: the broker (its topic registry and backend, in the
// same process), the URLs it advertises, and one mutex that serialises state-changing admin
// requests (so "exists? then create" answers 409 to exactly one of two racing creators).
//
// Ownership: borrows the broker server and the backend; both outlive the admin server.
// Thread-safety: thread-safe (the registry and backend are; write_mu guards admin writes).
// Durability: see each handler; state-changing requests answer only after the change is
//   durable.

#include "nereus/admin/rate_sampler.h"
#include "nereus/broker/server.h"
#include "nereus/broker/topic.h"
#include "nereus/broker/topic_backend.h"

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>

namespace nereus::admin {

struct admin_context {
    admin_context(broker::server& s,
                  broker::topic_backend& b,
                  std::string http_host,
                  std::chrono::milliseconds stats_interval)
        : broker(s),
          topics(s.topics()),
          backend(b),
          host(std::move(http_host)),
          rates(s.topics(), stats_interval) {}

    broker::server& broker;
    broker::topic_registry& topics;
    broker::topic_backend& backend;
    std::string host;                         // advertised host of the HTTP URL
    std::atomic<std::uint16_t> http_port{0};  // set once the HTTP server is bound
    std::string cluster = "standalone";
    std::mutex write_mu;  // held by every state-changing request
    rate_sampler rates;   // msgRateIn/Out etc.; sampling while the admin server runs

    std::string http_url() const {
        return "http://" + host + ":" + std::to_string(http_port.load());
    }
};

}  // namespace nereus::admin
