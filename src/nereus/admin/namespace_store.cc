#include "nereus/admin/namespace_store.h"

#include "nereus/broker/partitioned_topics.h"

#include <algorithm>
#include <set>

namespace nereus::admin {

namespace {

using broker::escape_key_component;
using broker::unescape_key_component;

constexpr std::string_view default_tenant = "public";
constexpr std::string_view default_namespace = "default";
constexpr std::string_view default_tenant_info =
    R"({"adminRoles":[],"allowedClusters":["standalone"]})";

std::string tenant_key(std::string_view t) {
    return "tenants/" + escape_key_component(t);
}
std::string namespaces_prefix(std::string_view t) {
    return "namespaces/" + escape_key_component(t) + "/";
}

}  // namespace

bool valid_name(std::string_view s) {
    if (s.empty() || s.size() > 256) {
        return false;
    }
    return std::all_of(s.begin(), s.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
               c == '_' || c == '-' || c == '=' || c == ':' || c == '.';
    });
}

result<std::optional<std::string>> tenant_info(const broker::topic_backend& b,
                                               std::string_view tenant) {
    auto r = b.get_admin_record(tenant_key(tenant));
    if (!r) {
        return nereus::error(r.error());
    }
    if (!*r && tenant == default_tenant) {
        return std::optional<std::string>(std::string(default_tenant_info));
    }
    return *r;
}

result<bool> tenant_exists(const broker::topic_backend& b, std::string_view tenant) {
    auto r = tenant_info(b, tenant);
    if (!r) {
        return nereus::error(r.error());
    }
    return r->has_value();
}

result<std::vector<std::string>> list_tenants(const broker::topic_backend& b) {
    auto recs = b.list_admin_records("tenants/");
    if (!recs) {
        return nereus::error(recs.error());
    }
    std::set<std::string> names{std::string(default_tenant)};
    for (const auto& [k, v] : *recs) {
        if (auto n = unescape_key_component(std::string_view(k).substr(8))) {
            names.insert(std::move(*n));
        }
    }
    return std::vector<std::string>(names.begin(), names.end());
}

result<bool> create_tenant(broker::topic_backend& b,
                           std::string_view tenant,
                           const std::string& info_json) {
    if (tenant == default_tenant) {
        return false;
    }
    return b.create_admin_record(tenant_key(tenant), info_json);
}

result<bool> namespace_exists(const broker::topic_backend& b,
                              std::string_view tenant,
                              std::string_view ns) {
    if (tenant == default_tenant && ns == default_namespace) {
        return true;
    }
    auto r = b.get_admin_record(namespaces_prefix(tenant) + escape_key_component(ns));
    if (!r) {
        return nereus::error(r.error());
    }
    return r->has_value();
}

result<std::vector<std::string>> list_namespaces(const broker::topic_backend& b,
                                                 std::string_view tenant) {
    const std::string prefix = namespaces_prefix(tenant);
    auto recs = b.list_admin_records(prefix);
    if (!recs) {
        return nereus::error(recs.error());
    }
    std::set<std::string> names;
    if (tenant == default_tenant) {
        names.insert(std::string(default_tenant) + "/" + std::string(default_namespace));
    }
    for (const auto& [k, v] : *recs) {
        if (auto n = unescape_key_component(std::string_view(k).substr(prefix.size()))) {
            names.insert(std::string(tenant) + "/" + *n);
        }
    }
    return std::vector<std::string>(names.begin(), names.end());
}

result<bool> create_namespace(broker::topic_backend& b,
                              std::string_view tenant,
                              std::string_view ns) {
    if (tenant == default_tenant && ns == default_namespace) {
        return false;
    }
    return b.create_admin_record(namespaces_prefix(tenant) + escape_key_component(ns), "{}");
}

result<bool> remove_tenant(broker::topic_backend& b, std::string_view tenant) {
    return b.remove_admin_record(tenant_key(tenant));
}

result<bool> remove_namespace(broker::topic_backend& b,
                              std::string_view tenant,
                              std::string_view ns) {
    return b.remove_admin_record(namespaces_prefix(tenant) + escape_key_component(ns));
}

bool is_default_tenant(std::string_view tenant) {
    return tenant == default_tenant;
}

bool is_default_namespace(std::string_view tenant, std::string_view ns) {
    return tenant == default_tenant && ns == default_namespace;
}

}  // namespace nereus::admin
