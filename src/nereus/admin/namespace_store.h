#pragma once

// Tenants and namespaces, kept as admin records of the backend (topic_backend.h; the ledger
// backend stores them in the metadata store under "admin/", doc/format/admin.md):
//
//   tenants/<tenant>                 value: TenantInfo JSON
//   {"adminRoles":[...],"allowedClusters":[...]} namespaces/<tenant>/<namespace>  value: "{}"
//   (policies are not kept yet)
//
// components escaped with broker::escape_key_component. The tenant `public` and the namespace
// `public/default` always exist (Pulsar standalone creates them) and have no record.
//
// Thread-safety: thread-safe. Blocking: metadata-store requests.
// Durability: create_* / remove_* return after the record change is durable.

#include "nereus/base/result.h"
#include "nereus/broker/topic_backend.h"

#include <string>
#include <string_view>
#include <vector>

namespace nereus::admin {

// Pulsar's rule for tenant, namespace and cluster names: [-=:.\w]+ (ASCII word characters).
bool valid_name(std::string_view s);

[[nodiscard]] result<bool> tenant_exists(const broker::topic_backend& b, std::string_view tenant);
// The tenant's TenantInfo JSON; nullopt when the tenant does not exist.
[[nodiscard]] result<std::optional<std::string>> tenant_info(const broker::topic_backend& b,
                                                             std::string_view tenant);
[[nodiscard]] result<std::vector<std::string>> list_tenants(const broker::topic_backend& b);
// true: created; false: it existed.
[[nodiscard]] result<bool> create_tenant(broker::topic_backend& b,
                                         std::string_view tenant,
                                         const std::string& info_json);

[[nodiscard]] result<bool> namespace_exists(const broker::topic_backend& b,
                                            std::string_view tenant,
                                            std::string_view ns);
// "tenant/ns" names of the tenant's namespaces.
[[nodiscard]] result<std::vector<std::string>> list_namespaces(const broker::topic_backend& b,
                                                               std::string_view tenant);
[[nodiscard]] result<bool> create_namespace(broker::topic_backend& b,
                                            std::string_view tenant,
                                            std::string_view ns);

// true: removed; false: there was no record. The implicit `public` / `public/default` have no
// record and are never removed (callers refuse them first).
[[nodiscard]] result<bool> remove_tenant(broker::topic_backend& b, std::string_view tenant);
[[nodiscard]] result<bool> remove_namespace(broker::topic_backend& b,
                                            std::string_view tenant,
                                            std::string_view ns);
bool is_default_tenant(std::string_view tenant);
bool is_default_namespace(std::string_view tenant, std::string_view ns);

}  // namespace nereus::admin
