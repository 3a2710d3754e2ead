// Topics (list, create, delete), partitioned topics (create, metadata, list, delete) and the
// HTTP lookup.

#include "nereus/admin/errors.h"
#include "nereus/admin/routes.h"
#include "nereus/broker/partitioned_topics.h"
#include "nereus/proto/server_error.h"

#include <algorithm>
#include <boost/json/array.hpp>
#include <boost/json/object.hpp>

namespace nereus::admin {

namespace json = boost::json;

namespace {

// The partition count in a request body: a JSON integer in 1..max_partitions, else the answer
// Pulsar gives (400 not an integer, 406 out of range).
tl::expected<std::uint32_t, http_response> partition_count_of(const http_request& req) {
    auto v = parse_json(req.body);
    if (!v) {
        return tl::unexpected(error_response(400, "Invalid number of partitions: not JSON"));
    }
    auto n = json_int(*v);
    if (!n) {
        return tl::unexpected(error_response(400, "Invalid number of partitions: not an integer"));
    }
    if (*n <= 0) {
        return tl::unexpected(error_response(406, "Number of partitions should be more than 0"));
    }
    if (*n > static_cast<std::int64_t>(broker::max_partitions)) {
        return tl::unexpected(
            error_response(406, "Number of partitions should be less than or equal to " +
                                    std::to_string(broker::max_partitions)));
    }
    return *n;
}

bool topic_exists(admin_context& ctx, const std::string& full) {
    const auto names = ctx.backend.topic_names();
    return std::find(names.begin(), names.end(), full) != names.end();
}

// Opens, creating them, the partitions [from, to) of `name`; each ledger is durable before it
// returns. The answer on the first failure, nothing on success.
std::optional<http_response> create_partitions(admin_context& ctx,
                                               const broker::topic_name& name,
                                               std::uint32_t from,
                                               std::uint32_t to) {
    for (std::uint32_t i = from; i < to; ++i) {
        auto pn = broker::parse_topic_name(name.full() + "-partition-" + std::to_string(i));
        if (!pn) {
            return error_from(pn.error());
        }
        if (auto t = ctx.topics.open(*pn, true, true); !t) {
            return error_from(t.error());
        }
    }
    return std::nullopt;
}

// Deletes one non-partitioned topic through the registry: 412 while it has producers or
// consumers unless `force` (then the topic is marked lost and its clients closed through the
// "lost ownership" path: CLOSE_CONSUMER and CLOSE_PRODUCER, before the delete; a send arriving
// after that gets an error or is dropped, never receipted). Durable before it returns.
std::optional<http_response> delete_one(admin_context& ctx, const std::string& full, bool force) {
    bool busy = false;
    auto r = ctx.topics.remove(full, [&](const std::shared_ptr<broker::topic>& t) -> result<void> {
        if (!t) {
            return {};
        }
        auto subs = t->open_subscriptions();
        std::size_t consumers = 0;
        for (const auto& s : subs) {
            consumers += s->consumer_count();
        }
        if ((consumers > 0 || t->producer_count() > 0) && !force) {
            busy = true;
            return nereus::error(proto::error_kind::consumer_busy);
        }
        if (force) {
            t->mark_lost();
            t->close_clients();
        }
        return {};
    });
    if (!r) {
        if (busy) {
            return error_response(412, "Topic has active producers/subscriptions");
        }
        return error_from(r.error());
    }
    return std::nullopt;
}

}  // namespace

void add_topic_routes(router& r, admin_context& ctx) {
    // Non-partitioned topics and every partition of the partitioned ones, as full names.
    r.add("GET", "/admin/v2/persistent/{tenant}/{namespace}",
          [&ctx](const http_request&, const path_params& p) {
              const auto& t = p.find("tenant")->second;
              const auto& ns = p.find("namespace")->second;
              if (auto e = check_namespace(ctx, t, ns)) {
                  return *e;
              }
              auto names = ctx.topics.topics_in_namespace(t + "/" + ns);
              std::sort(names.begin(), names.end());
              json::array a;
              for (const auto& n : names) {
                  a.emplace_back(n);
              }
              return json_response(200, a);
          });
    r.add("GET", "/admin/v2/persistent/{tenant}/{namespace}/partitioned",
          [&ctx](const http_request&, const path_params& p) {
              const auto& t = p.find("tenant")->second;
              const auto& ns = p.find("namespace")->second;
              if (auto e = check_namespace(ctx, t, ns)) {
                  return *e;
              }
              auto l = broker::list_partitioned_topics(ctx.backend, t, ns);
              if (!l) {
                  return error_from(l.error());
              }
              json::array a;
              for (const auto& pt : *l) {
                  a.emplace_back(pt.full);
              }
              return json_response(200, a);
          });

    // ---- partitioned topics ----
    // Body: the number of partitions (a JSON integer). The metadata record, then every
    // partition's ledger, each durable before 204.
    r.add("PUT", "/admin/v2/persistent/{tenant}/{namespace}/{topic}/partitions",
          [&ctx](const http_request& req, const path_params& p) {
              auto name = topic_from(ctx, p);
              if (!name) {
                  return name.error();
              }
              auto n = partition_count_of(req);
              if (!n) {
                  return n.error();
              }
              if (name->partition) {
                  return error_response(412,
                                        "Partitioned topic name must not carry a "
                                        "-partition- suffix");
              }
              std::lock_guard lock(ctx.write_mu);
              if (topic_exists(ctx, name->full())) {
                  return error_response(409, "This topic already exists");
              }
              auto created = broker::create_partitioned_metadata(ctx.backend, *name, *n);
              if (!created) {
                  return error_from(created.error());
              }
              if (!*created) {
                  return error_response(409, "Partitioned topic already exists");
              }
              if (auto failed = create_partitions(ctx, *name, 0, *n)) {
                  return *failed;
              }
              return no_content();
          });
    // Raises the partition count (Pulsar's updatePartitionedTopic; it never shrinks). The new
    // partitions' ledgers first, then the count by compare-and-set, each durable before 204: a
    // crash in between leaves unused partitions that clients do not see yet, and a retry
    // finishes the job.
    r.add("POST", "/admin/v2/persistent/{tenant}/{namespace}/{topic}/partitions",
          [&ctx](const http_request& req, const path_params& p) {
              auto name = topic_from(ctx, p);
              if (!name) {
                  return name.error();
              }
              auto n = partition_count_of(req);
              if (!n) {
                  return n.error();
              }
              std::lock_guard lock(ctx.write_mu);
              auto cur = broker::partition_count(ctx.backend, *name);
              if (!cur) {
                  return error_from(cur.error());
              }
              if (*cur == 0) {
                  return error_response(404, "Partitioned topic does not exist");
              }
              if (*cur >= *n) {
                  return error_response(409,
                                        "Number of new partitions must be greater than existing "
                                        "number of partitions");
              }
              if (auto failed = create_partitions(ctx, *name, *cur, *n)) {
                  return *failed;
              }
              auto updated = broker::update_partitioned_metadata(ctx.backend, *name, *cur, *n);
              if (!updated) {
                  return error_from(updated.error());
              }
              if (!*updated) {
                  return error_response(409, "The partitioned topic changed meanwhile");
              }
              return no_content();
          });
    r.add("GET", "/admin/v2/persistent/{tenant}/{namespace}/{topic}/partitions",
          [&ctx](const http_request&, const path_params& p) {
              auto name = topic_from(ctx, p);
              if (!name) {
                  return name.error();
              }
              auto n = broker::partition_count(ctx.backend, *name);
              if (!n) {
                  return error_from(n.error());
              }
              json::object o;
              o["partitions"] = *n;
              return json_response(200, o);
          });
    r.add("DELETE", "/admin/v2/persistent/{tenant}/{namespace}/{topic}/partitions",
          [&ctx](const http_request& req, const path_params& p) {
              auto name = topic_from(ctx, p);
              if (!name) {
                  return name.error();
              }
              std::lock_guard lock(ctx.write_mu);
              auto n = broker::partition_count(ctx.backend, *name);
              if (!n) {
                  return error_from(n.error());
              }
              if (*n == 0) {
                  return error_response(404, "Partitioned topic does not exist");
              }
              const bool force = req.flag("force");
              for (std::uint32_t i = 0; i < *n; ++i) {
                  const auto full = name->full() + "-partition-" + std::to_string(i);
                  if (!topic_exists(ctx, full)) {
                      continue;
                  }
                  if (auto e = delete_one(ctx, full, force)) {
                      return *e;
                  }
              }
              if (auto r = broker::remove_partitioned_metadata(ctx.backend, *name); !r) {
                  return error_from(r.error());
              }
              return no_content();
          });

    // ---- non-partitioned topics ----
    // Creates the topic's ledger (durable before 204). 409 when it, or a partitioned topic of
    // that name, exists.
    r.add("PUT", "/admin/v2/persistent/{tenant}/{namespace}/{topic}",
          [&ctx](const http_request&, const path_params& p) {
              auto name = topic_from(ctx, p);
              if (!name) {
                  return name.error();
              }
              std::lock_guard lock(ctx.write_mu);
              auto n = broker::partition_count(ctx.backend, *name);
              if (!n) {
                  return error_from(n.error());
              }
              if (*n > 0 || topic_exists(ctx, name->full())) {
                  return error_response(409, "This topic already exists");
              }
              if (auto t = ctx.topics.open(*name, true, true); !t) {
                  return error_from(t.error());
              }
              return no_content();
          });
    // Deletes the topic, its subscriptions and its entries (durable before 204).
    r.add("DELETE", "/admin/v2/persistent/{tenant}/{namespace}/{topic}",
          [&ctx](const http_request& req, const path_params& p) {
              auto name = topic_from(ctx, p);
              if (!name) {
                  return name.error();
              }
              std::lock_guard lock(ctx.write_mu);
              auto n = broker::partition_count(ctx.backend, *name);
              if (!n) {
                  return error_from(n.error());
              }
              if (*n > 0) {
                  return error_response(409,
                                        "Topic is a partitioned topic: delete it with "
                                        "DELETE .../partitions");
              }
              if (auto e = delete_one(ctx, name->full(), req.flag("force"))) {
                  return *e;
              }
              return no_content();
          });

    // ---- retention ----
    // Pulsar's trimTopic: one retention pass on the topic now, as the periodic pass does every
    // retentionCheckIntervalInSeconds (data below every durable subscription's mark-delete
    // position and outside the retention policy goes; doc/ledger.md). 204 once durable.
    r.add("POST", "/admin/v2/persistent/{tenant}/{namespace}/{topic}/trim",
          [&ctx](const http_request&, const path_params& p) {
              auto name = topic_from(ctx, p);
              if (!name) {
                  return name.error();
              }
              auto n = broker::partition_count(ctx.backend, *name);
              if (!n) {
                  return error_from(n.error());
              }
              if (*n > 0) {
                  return error_response(412, "Topic is partitioned: trim a partition");
              }
              auto t = ctx.topics.open(*name, false);
              if (!t) {
                  return error_from(t.error());
              }
              auto r = (*t)->store().trim();
              if (!r) {
                  if (r.error() == std::errc::operation_not_supported) {
                      return error_response(405, "This backend keeps every entry (no trim)");
                  }
                  return error_from(r.error());
              }
              return no_content();
          });

    // ---- lookup ----
    // This broker, unless a shared metadata store names another owner (doc/ownership.md).
    r.add("GET", "/lookup/v2/topic/persistent/{tenant}/{namespace}/{topic}",
          [&ctx](const http_request&, const path_params& p) {
              auto name = topic_from(ctx, p);
              if (!name) {
                  return name.error();
              }
              std::string broker_url = ctx.broker.service_url();
              std::string http_url = ctx.http_url();
              auto owner = ctx.topics.backend().owner_of(name->full());
              if (!owner) {
                  return error_response(503, "ownership lookup failed: " + owner.error().message());
              }
              if (!owner->here) {
                  broker_url = owner->broker_url;
                  http_url = owner->http_url;
              }
              json::object o;
              o["brokerUrl"] = broker_url;
              o["brokerUrlTls"] = "";
              o["httpUrl"] = http_url;
              o["httpUrlTls"] = "";
              o["nativeUrl"] = broker_url;
              return json_response(200, o);
          });
}

}  // namespace nereus::admin
