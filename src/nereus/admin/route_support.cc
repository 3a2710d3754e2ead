#include "nereus/admin/errors.h"
#include "nereus/admin/namespace_store.h"
#include "nereus/admin/routes.h"
#include "nereus/broker/partitioned_topics.h"
#include "nereus/proto/server_error.h"

#include <boost/json/parse.hpp>
#include <charconv>
#include <cmath>
#include <set>

namespace nereus::admin {

std::optional<http_response> check_namespace(admin_context& ctx,
                                             const std::string& tenant,
                                             const std::string& ns) {
    if (!valid_name(tenant)) {
        return error_response(412, "Tenant name is not valid");
    }
    if (!valid_name(ns)) {
        return error_response(412, "Namespace name is not valid");
    }
    auto t = tenant_exists(ctx.backend, tenant);
    if (!t) {
        return error_from(t.error());
    }
    if (!*t) {
        return error_response(404, "Tenant does not exist");
    }
    auto n = namespace_exists(ctx.backend, tenant, ns);
    if (!n) {
        return error_from(n.error());
    }
    if (!*n) {
        return error_response(404, "Namespace does not exist");
    }
    return std::nullopt;
}

tl::expected<broker::topic_name, http_response> topic_from(admin_context& ctx,
                                                           const path_params& p) {
    const auto& tenant = p.find("tenant")->second;
    const auto& ns = p.find("namespace")->second;
    if (auto e = check_namespace(ctx, tenant, ns)) {
        return tl::make_unexpected(std::move(*e));
    }
    const auto& local = p.find("topic")->second;
    auto n = broker::parse_topic_name("persistent://" + tenant + "/" + ns + "/" + local);
    if (!n || n->tenant != tenant || n->ns != ns || n->local != local) {
        return tl::make_unexpected(error_response(412, "Invalid topic name"));
    }
    return *n;
}

std::optional<boost::json::value> parse_json(const std::string& body) {
    boost::system::error_code ec;
    auto v = boost::json::parse(body, ec);
    if (ec) {
        return std::nullopt;
    }
    return v;
}

std::optional<std::int64_t> json_int(const boost::json::value& v) {
    if (v.is_int64()) {
        return v.get_int64();
    }
    if (v.is_uint64() && v.get_uint64() <= static_cast<std::uint64_t>(INT64_MAX)) {
        return static_cast<std::int64_t>(v.get_uint64());
    }
    if (v.is_double()) {
        const double d = v.get_double();
        if (std::isfinite(d) && std::trunc(d) == d && std::fabs(d) < 9.0e18) {
            return static_cast<std::int64_t>(d);
        }
    }
    return std::nullopt;
}

std::optional<std::int64_t> parse_int(const std::string& s) {
    std::int64_t v = 0;
    const auto* end = s.data() + s.size();
    auto [p, ec] = std::from_chars(s.data(), end, v);
    if (s.empty() || ec != std::errc() || p != end) {
        return std::nullopt;
    }
    return v;
}

std::string position_text(std::uint64_t ledger_id, std::int64_t entry_id) {
    return std::to_string(ledger_id) + ":" + std::to_string(entry_id);
}

tl::expected<std::vector<std::shared_ptr<broker::topic>>, http_response> open_targets(
    admin_context& ctx, const broker::topic_name& name) {
    std::vector<std::shared_ptr<broker::topic>> out;
    auto n = broker::partition_count(ctx.backend, name);
    if (!n) {
        return tl::make_unexpected(error_from(n.error()));
    }
    if (*n == 0) {
        auto t = ctx.topics.open(name, false);
        if (!t) {
            return tl::make_unexpected(error_from(t.error()));
        }
        out.push_back(std::move(*t));
        return out;
    }
    for (std::uint32_t i = 0; i < *n; ++i) {
        auto pn = broker::parse_topic_name(name.full() + "-partition-" + std::to_string(i));
        if (!pn) {
            return tl::make_unexpected(error_from(pn.error()));
        }
        // A partition of an existing partitioned topic: created even with auto-creation off.
        auto t = ctx.topics.open(*pn, true, true);
        if (!t) {
            return tl::make_unexpected(error_from(t.error()));
        }
        out.push_back(std::move(*t));
    }
    return out;
}

tl::expected<std::shared_ptr<broker::subscription>, http_response> find_subscription(
    broker::topic& t, const std::string& sub) {
    for (auto& s : t.open_subscriptions()) {
        if (s->name() == sub) {
            return s;
        }
    }
    const auto names = t.store().subscription_names();
    if (std::find(names.begin(), names.end(), sub) == names.end()) {
        return tl::make_unexpected(error_response(404, "Subscription not found"));
    }
    auto s = t.subscribe(sub, broker::subscription_start{}, true);
    if (!s) {
        return tl::make_unexpected(error_from(s.error()));
    }
    return *s;
}

std::vector<std::shared_ptr<broker::subscription>> all_subscriptions(broker::topic& t) {
    auto out = t.open_subscriptions();
    std::set<std::string> seen;
    for (const auto& s : out) {
        seen.insert(s->name());
    }
    for (const auto& n : t.store().subscription_names()) {
        if (seen.contains(n)) {
            continue;
        }
        if (auto s = t.subscribe(n, broker::subscription_start{}, true)) {
            out.push_back(std::move(*s));
        }
    }
    return out;
}

}  // namespace nereus::admin
