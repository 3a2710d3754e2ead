#pragma once

// The admin API's routes, one file per group (doc/admin-api.md has the table):
//   cluster_routes.cc       clusters, tenants, namespaces, broker health
//   topic_routes.cc         topics list/create/delete, partitioned topics, HTTP lookup
//   subscription_routes.cc  subscriptions: list/create/delete, reset cursor, skip, clear
//                           backlog, properties
//   stats_routes.cc         stats, internalStats, /metrics
//   compaction_routes.cc    topic compaction: trigger and status
// and the helpers they share (route_support.cc).
//
// Thread-safety: handlers run concurrently on the HTTP server's threads; state-changing ones
//   hold admin_context::write_mu.
// Durability: a state-changing handler returns only after its change is durable.

#include "nereus/admin/admin_context.h"
#include "nereus/admin/http_message.h"
#include "nereus/admin/router.h"
#include "nereus/base/result.h"
#include "nereus/broker/topic.h"
#include "nereus/broker/topic_name.h"

#include <boost/json/value.hpp>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace nereus::admin {

void add_cluster_routes(router& r, admin_context& ctx);
void add_topic_routes(router& r, admin_context& ctx);
void add_subscription_routes(router& r, admin_context& ctx);
void add_stats_routes(router& r, admin_context& ctx);
void add_compaction_routes(router& r, admin_context& ctx);

// ---- shared helpers (route_support.cc) ----

// 404 "Tenant does not exist" / "Namespace does not exist", 412 for invalid names, or nullopt
// when tenant/ns exists.
std::optional<http_response> check_namespace(admin_context& ctx,
                                             const std::string& tenant,
                                             const std::string& ns);
// persistent://{tenant}/{namespace}/{topic} from the path, validated; an error answer
// (412 invalid name, 404 unknown namespace) otherwise.
tl::expected<broker::topic_name, http_response> topic_from(admin_context& ctx,
                                                           const path_params& p);
// The body parsed as JSON; nullopt when it is not valid JSON.
std::optional<boost::json::value> parse_json(const std::string& body);
// An integer JSON value as int64 (also accepts a whole-number double); nullopt otherwise.
std::optional<std::int64_t> json_int(const boost::json::value& v);
// A decimal path parameter; nullopt when it is not one.
std::optional<std::int64_t> parse_int(const std::string& s);
// Pulsar's "ledgerId:entryId" text.
std::string position_text(std::uint64_t ledger_id, std::int64_t entry_id);

// The topics an operation on `name` applies to: the partitions of a partitioned topic (opened,
// created if missing), else the topic itself (404 when it does not exist).
tl::expected<std::vector<std::shared_ptr<broker::topic>>, http_response> open_targets(
    admin_context& ctx, const broker::topic_name& name);
// The topic's subscription (opened in the broker if only the store knows it), or 404.
tl::expected<std::shared_ptr<broker::subscription>, http_response> find_subscription(
    broker::topic& t, const std::string& sub);
// Every subscription of the topic: durable ones from the store (opened in the broker) and
// non-durable ones the broker holds.
std::vector<std::shared_ptr<broker::subscription>> all_subscriptions(broker::topic& t);

}  // namespace nereus::admin
