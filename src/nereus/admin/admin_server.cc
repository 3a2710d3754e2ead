#include "nereus/admin/admin_server.h"

#include "nereus/admin/admin_context.h"
#include "nereus/admin/logger.h"
#include "nereus/admin/router.h"
#include "nereus/admin/routes.h"

namespace nereus::admin {

admin_server::admin_server(broker::server& broker,
                           broker::topic_backend& backend,
                           admin_options options)
    : ctx_(std::make_unique<admin_context>(
          broker,
          backend,
          options.advertised_host.empty() ? options.http.bind_address : options.advertised_host,
          options.stats_interval)),
      router_(std::make_unique<router>()) {
    add_cluster_routes(*router_, *ctx_);
    add_topic_routes(*router_, *ctx_);
    add_subscription_routes(*router_, *ctx_);
    add_stats_routes(*router_, *ctx_);
    add_compaction_routes(*router_, *ctx_);
    http_ = std::make_unique<http_server>(
        std::move(options.http), [r = router_.get()](const http_request& req) {
            auto res = r->route(req);
            NEREUS_LOG(admin_log(), debug, "admin {} {} -> {}", req.method, req.target, res.status);
            return res;
        });
}

admin_server::~admin_server() {
    stop();
}

result<void> admin_server::start() {
    if (auto r = http_->start(); !r) {
        return r;
    }
    ctx_->http_port = http_->port();
    ctx_->rates.start();
    return {};
}

void admin_server::stop() {
    http_->stop();
    ctx_->rates.stop();
}

rate_sampler& admin_server::rates() {
    return ctx_->rates;
}

std::uint16_t admin_server::port() const {
    return http_->port();
}

namespace {

class standalone_admin_service final : public broker::standalone_service {
public:
    standalone_admin_service(broker::server& s, broker::topic_backend& b, admin_options o)
        : admin_(s, b, std::move(o)) {}
    result<void> start() override { return admin_.start(); }
    void stop() override { admin_.stop(); }

private:
    admin_server admin_;
};

}  // namespace

broker::standalone_service_factory standalone_admin() {
    return [](broker::server& s, broker::topic_backend& b, const broker::standalone_options& o)
               -> result<std::unique_ptr<broker::standalone_service>> {
        admin_options ao;
        ao.http.bind_address = o.bind_address;
        ao.http.port = o.http_port;
        ao.advertised_host = o.advertised_address;
        ao.stats_interval = std::chrono::seconds(o.stats_interval_s);
        return std::unique_ptr<broker::standalone_service>(
            std::make_unique<standalone_admin_service>(s, b, std::move(ao)));
    };
}

}  // namespace nereus::admin
