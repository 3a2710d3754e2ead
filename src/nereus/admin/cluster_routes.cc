// Clusters, tenants, namespaces and the broker health check.

#include "nereus/admin/errors.h"
#include "nereus/admin/namespace_store.h"
#include "nereus/admin/routes.h"
#include "nereus/broker/partitioned_topics.h"

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/serialize.hpp>

namespace nereus::admin {

namespace json = boost::json;

namespace {

json::array to_array(const std::vector<std::string>& v) {
    json::array a;
    for (const auto& s : v) {
        a.emplace_back(s);
    }
    return a;
}

// A TenantInfo body: an object whose adminRoles / allowedClusters, when present, are arrays
// of strings, and whose clusters exist. Empty body: the defaults. Returns the normalised JSON.
tl::expected<std::string, http_response> tenant_body(const admin_context& ctx,
                                                     const std::string& body) {
    json::object info;
    info["adminRoles"] = json::array();
    info["allowedClusters"] = json::array{json::value(ctx.cluster)};
    if (body.empty()) {
        return json::serialize(info);
    }
    auto v = parse_json(body);
    if (!v || !v->is_object()) {
        return tl::make_unexpected(error_response(400, "Invalid TenantInfo JSON"));
    }
    for (const char* field : {"adminRoles", "allowedClusters"}) {
        const auto* f = v->as_object().if_contains(field);
        if (f == nullptr || f->is_null()) {
            continue;
        }
        if (!f->is_array()) {
            return tl::make_unexpected(
                error_response(400, std::string("Invalid TenantInfo JSON: ") + field));
        }
        for (const auto& e : f->as_array()) {
            if (!e.is_string()) {
                return tl::make_unexpected(
                    error_response(400, std::string("Invalid TenantInfo JSON: ") + field));
            }
            if (std::string_view(field) == "allowedClusters" && e.as_string() != ctx.cluster) {
                return tl::make_unexpected(error_response(412, "Clusters do not exist"));
            }
        }
        info[field] = *f;
    }
    return json::serialize(info);
}

}  // namespace

void add_cluster_routes(router& r, admin_context& ctx) {
    r.add("GET", "/admin/v2/clusters", [&ctx](const http_request&, const path_params&) {
        return json_response(200, json::array{json::value(ctx.cluster)});
    });
    r.add("GET", "/admin/v2/clusters/{cluster}", [&ctx](const http_request&, const path_params& p) {
        if (p.find("cluster")->second != ctx.cluster) {
            return error_response(404, "Cluster does not exist");
        }
        json::object o;
        o["serviceUrl"] = ctx.http_url();
        o["brokerServiceUrl"] = ctx.broker.service_url();
        return json_response(200, o);
    });

    r.add("GET", "/admin/v2/brokers/health", [](const http_request&, const path_params&) {
        return text_response(200, "ok", "text/plain");
    });

    // ---- tenants ----
    r.add("GET", "/admin/v2/tenants", [&ctx](const http_request&, const path_params&) {
        auto l = list_tenants(ctx.backend);
        if (!l) {
            return error_from(l.error());
        }
        return json_response(200, to_array(*l));
    });
    r.add("GET", "/admin/v2/tenants/{tenant}", [&ctx](const http_request&, const path_params& p) {
        const auto& t = p.find("tenant")->second;
        if (!valid_name(t)) {
            return error_response(412, "Tenant name is not valid");
        }
        auto info = tenant_info(ctx.backend, t);
        if (!info) {
            return error_from(info.error());
        }
        if (!*info) {
            return error_response(404, "Tenant does not exist");
        }
        auto v = parse_json(**info);
        return json_response(200, v ? *v : json::value(json::object()));
    });
    // Durable before 204: the tenant record's create is a synced metadata write.
    r.add("PUT", "/admin/v2/tenants/{tenant}",
          [&ctx](const http_request& req, const path_params& p) {
              const auto& t = p.find("tenant")->second;
              if (!valid_name(t)) {
                  return error_response(412, "Tenant name is not valid");
              }
              auto body = tenant_body(ctx, req.body);
              if (!body) {
                  return body.error();
              }
              std::lock_guard lock(ctx.write_mu);
              auto created = create_tenant(ctx.backend, t, *body);
              if (!created) {
                  return error_from(created.error());
              }
              if (!*created) {
                  return error_response(409, "Tenant already exists");
              }
              return no_content();
          });

    // Durable before 204. 409 while the tenant has namespaces; `public` cannot go.
    r.add("DELETE", "/admin/v2/tenants/{tenant}",
          [&ctx](const http_request&, const path_params& p) {
              const auto& t = p.find("tenant")->second;
              if (!valid_name(t)) {
                  return error_response(412, "Tenant name is not valid");
              }
              if (is_default_tenant(t)) {
                  return error_response(412, "The default tenant cannot be deleted");
              }
              std::lock_guard lock(ctx.write_mu);
              auto e = tenant_exists(ctx.backend, t);
              if (!e) {
                  return error_from(e.error());
              }
              if (!*e) {
                  return error_response(404, "Tenant does not exist");
              }
              auto l = list_namespaces(ctx.backend, t);
              if (!l) {
                  return error_from(l.error());
              }
              if (!l->empty()) {
                  return error_response(409, "The tenant still has active namespaces");
              }
              if (auto removed = remove_tenant(ctx.backend, t); !removed) {
                  return error_from(removed.error());
              }
              return no_content();
          });

    // ---- namespaces ----
    r.add("GET", "/admin/v2/namespaces/{tenant}",
          [&ctx](const http_request&, const path_params& p) {
              const auto& t = p.find("tenant")->second;
              if (!valid_name(t)) {
                  return error_response(412, "Tenant name is not valid");
              }
              auto e = tenant_exists(ctx.backend, t);
              if (!e) {
                  return error_from(e.error());
              }
              if (!*e) {
                  return error_response(404, "Tenant does not exist");
              }
              auto l = list_namespaces(ctx.backend, t);
              if (!l) {
                  return error_from(l.error());
              }
              return json_response(200, to_array(*l));
          });
    r.add("GET", "/admin/v2/namespaces/{tenant}/{namespace}",
          [&ctx](const http_request&, const path_params& p) {
              if (auto e =
                      check_namespace(ctx, p.find("tenant")->second, p.find("namespace")->second)) {
                  return *e;
              }
              // Policies are not kept yet: the defaults, as an empty policies object.
              return json_response(200, json::object());
          });
    // Durable before 204.
    r.add("PUT", "/admin/v2/namespaces/{tenant}/{namespace}",
          [&ctx](const http_request& req, const path_params& p) {
              const auto& t = p.find("tenant")->second;
              const auto& ns = p.find("namespace")->second;
              if (!valid_name(t)) {
                  return error_response(412, "Tenant name is not valid");
              }
              if (!valid_name(ns)) {
                  return error_response(412, "Namespace name is not valid");
              }
              if (!req.body.empty()) {
                  auto v = parse_json(req.body);
                  if (!v || !v->is_object()) {
                      return error_response(400, "Invalid Policies JSON");
                  }
              }
              std::lock_guard lock(ctx.write_mu);
              auto e = tenant_exists(ctx.backend, t);
              if (!e) {
                  return error_from(e.error());
              }
              if (!*e) {
                  return error_response(404, "Tenant does not exist");
              }
              auto created = create_namespace(ctx.backend, t, ns);
              if (!created) {
                  return error_from(created.error());
              }
              if (!*created) {
                  return error_response(409, "Namespace already exists");
              }
              return no_content();
          });
    // Durable before 204. 409 while the namespace has topics or partitioned topics;
    // `public/default` cannot go.
    r.add("DELETE", "/admin/v2/namespaces/{tenant}/{namespace}",
          [&ctx](const http_request&, const path_params& p) {
              const auto& t = p.find("tenant")->second;
              const auto& ns = p.find("namespace")->second;
              if (auto e = check_namespace(ctx, t, ns)) {
                  return *e;
              }
              if (is_default_namespace(t, ns)) {
                  return error_response(412, "The default namespace cannot be deleted");
              }
              std::lock_guard lock(ctx.write_mu);
              auto partitioned = broker::list_partitioned_topics(ctx.backend, t, ns);
              if (!partitioned) {
                  return error_from(partitioned.error());
              }
              if (!ctx.topics.topics_in_namespace(t + "/" + ns).empty() || !partitioned->empty()) {
                  return error_response(409, "Cannot delete non empty namespace");
              }
              auto removed = remove_namespace(ctx.backend, t, ns);
              if (!removed) {
                  return error_from(removed.error());
              }
              if (!*removed) {
                  return error_response(404, "Namespace does not exist");
              }
              return no_content();
          });
}

}  // namespace nereus::admin
