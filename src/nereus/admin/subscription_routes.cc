// Subscriptions: list, create, delete, reset cursor (by time, by message id), skip, clear
// backlog, properties. On a partitioned topic an operation applies to every partition (as
// Pulsar does), except the ones that name one position or one cursor's properties.
//
// Reset, skip and clear go through broker::subscription::seek, exactly like a client SEEK:
// every consumer of the subscription is disconnected first (CLOSE_CONSUMER), then the cursor
// is reset durably with a new ackStateEpoch (so an ack stamped before it changes nothing),
// then the answer is sent.

#include "nereus/admin/errors.h"
#include "nereus/admin/routes.h"
#include "nereus/broker/partitioned_topics.h"

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <cstdint>
#include <limits>
#include <set>
#include <string_view>

namespace nereus::admin {

namespace json = boost::json;

namespace {

constexpr std::string_view base = "/admin/v2/persistent/{tenant}/{namespace}/{topic}";
constexpr std::string_view reserved_property_prefix = "#nereus.internal.";

std::string route(std::string_view suffix) {
    return std::string(base) + std::string(suffix);
}

// A MessageId body ({"ledgerId": L, "entryId": E, ...}) as a subscription start / seek target
// on `t`: L or E negative → earliest, L = INT64_MAX → latest, else entry E of ledger L (412
// when L is not the topic's ledger). `excluded`: start after E.
struct position_arg {
    enum class kind { earliest, latest, at } where = kind::latest;
    std::uint64_t entry = 0;
};

tl::expected<position_arg, http_response> message_id_from(const json::value& v, broker::topic& t) {
    if (!v.is_object()) {
        return tl::make_unexpected(error_response(400, "Invalid message id: not a JSON object"));
    }
    const auto& o = v.as_object();
    const auto* l = o.if_contains("ledgerId");
    const auto* e = o.if_contains("entryId");
    if (l == nullptr || e == nullptr) {
        return tl::make_unexpected(error_response(400,
                                                  "Invalid message id: ledgerId and "
                                                  "entryId are required"));
    }
    auto ledger = json_int(*l);
    auto entry = json_int(*e);
    if (!ledger || !entry) {
        return tl::make_unexpected(error_response(400, "Invalid message id: not integers"));
    }
    bool excluded = false;
    // ResetCursorData serialises the flag as "excluded"; "isExcluded" is accepted too.
    for (const char* key : {"excluded", "isExcluded"}) {
        if (const auto* x = o.if_contains(key); x != nullptr) {
            if (!x->is_bool()) {
                return tl::make_unexpected(error_response(400, "Invalid excluded flag"));
            }
            excluded = excluded || x->get_bool();
        }
    }
    position_arg p;
    if (*ledger < 0 || *entry < 0) {
        p.where = position_arg::kind::earliest;
        return p;
    }
    if (*ledger == std::numeric_limits<std::int64_t>::max()) {
        p.where = position_arg::kind::latest;
        return p;
    }
    if (static_cast<std::uint64_t>(*ledger) != t.store().ledger_id()) {
        return tl::make_unexpected(error_response(
            412, "Invalid message id: ledger " + std::to_string(*ledger) +
                     " is not the topic's ledger " + std::to_string(t.store().ledger_id())));
    }
    p.where = position_arg::kind::at;
    p.entry = static_cast<std::uint64_t>(*entry) + (excluded ? 1 : 0);
    return p;
}

// Runs `fn` on the named subscription of every target topic (404 when a target lacks it).
template <class Fn>
http_response for_each_subscription(admin_context& ctx, const path_params& p, Fn fn) {
    auto name = topic_from(ctx, p);
    if (!name) {
        return name.error();
    }
    const auto& sub = p.find("subscription")->second;
    std::lock_guard lock(ctx.write_mu);
    auto targets = open_targets(ctx, *name);
    if (!targets) {
        return targets.error();
    }
    std::vector<std::pair<std::shared_ptr<broker::topic>, std::shared_ptr<broker::subscription>>>
        found;
    for (auto& t : *targets) {
        auto s = find_subscription(*t, sub);
        if (!s) {
            return s.error();
        }
        found.emplace_back(t, std::move(*s));
    }
    for (auto& [t, s] : found) {
        if (auto e = fn(*t, s)) {
            return *e;
        }
    }
    return no_content();
}

std::optional<http_response> seek(broker::subscription& s, const broker::seek_target& target) {
    if (auto r = s.seek(target); !r) {
        return error_from(r.error());
    }
    return std::nullopt;
}

}  // namespace

void add_subscription_routes(router& r, admin_context& ctx) {
    r.add("GET", route("/subscriptions"), [&ctx](const http_request&, const path_params& p) {
        auto name = topic_from(ctx, p);
        if (!name) {
            return name.error();
        }
        auto targets = open_targets(ctx, *name);
        if (!targets) {
            return targets.error();
        }
        std::set<std::string> names;
        for (auto& t : *targets) {
            for (const auto& s : all_subscriptions(*t)) {
                names.insert(s->name());
            }
        }
        json::array a;
        for (const auto& n : names) {
            a.emplace_back(n);
        }
        return json_response(200, a);
    });

    // Creates a durable subscription at the body's message id (default: latest). Durable
    // before 204; 409 when it exists.
    r.add("PUT", route("/subscription/{subscription}"),
          [&ctx](const http_request& req, const path_params& p) {
              auto name = topic_from(ctx, p);
              if (!name) {
                  return name.error();
              }
              const auto& sub = p.find("subscription")->second;
              std::optional<json::value> body;
              if (!req.body.empty()) {
                  body = parse_json(req.body);
                  if (!body) {
                      return error_response(400, "Invalid message id: not JSON");
                  }
              }
              std::lock_guard lock(ctx.write_mu);
              auto targets = open_targets(ctx, *name);
              if (!targets) {
                  return targets.error();
              }
              std::vector<broker::subscription_start> starts;
              for (auto& t : *targets) {
                  for (const auto& s : all_subscriptions(*t)) {
                      if (s->name() == sub) {
                          return error_response(409, "Subscription already exists for topic");
                      }
                  }
                  broker::subscription_start start;
                  if (body && !body->is_null()) {
                      auto pos = message_id_from(*body, *t);
                      if (!pos && targets->size() > 1) {
                          // One message id cannot name a position in every partition: only
                          // earliest / latest are accepted there.
                          return error_response(412,
                                                "A message id on a partitioned topic must be "
                                                "earliest or latest");
                      }
                      if (!pos) {
                          return pos.error();
                      }
                      switch (pos->where) {
                          case position_arg::kind::earliest:
                              start.where = broker::subscription_start::kind::earliest;
                              break;
                          case position_arg::kind::latest:
                              start.where = broker::subscription_start::kind::latest;
                              break;
                          case position_arg::kind::at:
                              start.where = broker::subscription_start::kind::at_entry;
                              start.entry_id = pos->entry;
                              break;
                      }
                  }
                  starts.push_back(start);
              }
              for (std::size_t i = 0; i < targets->size(); ++i) {
                  if (auto s = (*targets)[i]->subscribe(sub, starts[i], true); !s) {
                      return error_from(s.error());
                  }
              }
              return no_content();
          });

    // Deletes the subscription (durable before 204); 412 while consumers are attached unless
    // ?force=true, which disconnects them first.
    r.add("DELETE", route("/subscription/{subscription}"),
          [&ctx](const http_request& req, const path_params& p) {
              const bool force = req.flag("force");
              return for_each_subscription(
                  ctx, p,
                  [force](broker::topic& t, const std::shared_ptr<broker::subscription>& s)
                      -> std::optional<http_response> {
                      if (s->consumer_count() > 0) {
                          if (!force) {
                              return error_response(412,
                                                    "Subscription has active connected consumers");
                          }
                          s->disconnect_consumers();
                      }
                      if (auto r = t.delete_subscription(s); !r) {
                          return error_from(r.error());
                      }
                      return std::nullopt;
                  });
          });

    // Reset to the first entry published at or after the timestamp (ms).
    r.add("POST", route("/subscription/{subscription}/resetcursor/{timestamp}"),
          [&ctx](const http_request&, const path_params& p) {
              auto ts = parse_int(p.find("timestamp")->second);
              if (!ts) {
                  return error_response(412, "Invalid timestamp");
              }
              broker::seek_target target;
              target.where = broker::seek_target::kind::to_time;
              target.publish_time = *ts;
              return for_each_subscription(
                  ctx, p, [&](broker::topic&, const std::shared_ptr<broker::subscription>& s) {
                      return seek(*s, target);
                  });
          });

    // Reset to a message id: body {"ledgerId": L, "entryId": E[, "isExcluded": b]}.
    r.add("POST", route("/subscription/{subscription}/resetcursor"),
          [&ctx](const http_request& req, const path_params& p) {
              auto body = parse_json(req.body);
              if (!body) {
                  return error_response(400, "Invalid message id: not JSON");
              }
              if (auto name = topic_from(ctx, p); name) {
                  auto n = broker::partition_count(ctx.backend, *name);
                  if (n && *n > 0) {
                      return error_response(412,
                                            "Reset by message id on a partitioned topic: "
                                            "name one partition");
                  }
              }
              return for_each_subscription(
                  ctx, p,
                  [&](broker::topic& t, const std::shared_ptr<broker::subscription>& s)
                      -> std::optional<http_response> {
                      auto pos = message_id_from(*body, t);
                      if (!pos) {
                          return pos.error();
                      }
                      broker::seek_target target;
                      switch (pos->where) {
                          case position_arg::kind::earliest:
                              target.where = broker::seek_target::kind::earliest;
                              break;
                          case position_arg::kind::latest:
                              target.where = broker::seek_target::kind::latest;
                              break;
                          case position_arg::kind::at:
                              target.where = broker::seek_target::kind::to_entry;
                              target.entry_id = pos->entry;
                              break;
                      }
                      return seek(*s, target);
                  });
          });

    // Acks the next n unacked entries from the mark-delete position.
    r.add("POST", route("/subscription/{subscription}/skip/{count}"),
          [&ctx](const http_request&, const path_params& p) {
              auto n = parse_int(p.find("count")->second);
              if (!n || *n < 0) {
                  return error_response(412, "Invalid number of messages to skip");
              }
              broker::seek_target target;
              target.where = broker::seek_target::kind::skip;
              target.count = static_cast<std::uint64_t>(*n);
              return for_each_subscription(
                  ctx, p, [&](broker::topic&, const std::shared_ptr<broker::subscription>& s) {
                      return seek(*s, target);
                  });
          });

    // Clears the backlog (acks everything up to the end).
    r.add("POST", route("/subscription/{subscription}/skip_all"),
          [&ctx](const http_request&, const path_params& p) {
              broker::seek_target target;
              target.where = broker::seek_target::kind::clear_backlog;
              return for_each_subscription(
                  ctx, p, [&](broker::topic&, const std::shared_ptr<broker::subscription>& s) {
                      return seek(*s, target);
                  });
          });

    r.add("GET", route("/subscription/{subscription}/properties"),
          [&ctx](const http_request&, const path_params& p) {
              auto name = topic_from(ctx, p);
              if (!name) {
                  return name.error();
              }
              auto targets = open_targets(ctx, *name);
              if (!targets) {
                  return targets.error();
              }
              json::object o;
              for (auto& t : *targets) {
                  auto s = find_subscription(*t, p.find("subscription")->second);
                  if (!s) {
                      return s.error();
                  }
                  for (const auto& [k, v] : (*s)->cursor().details().properties) {
                      if (!std::string_view(k).starts_with(reserved_property_prefix)) {
                          o[k] = v;
                      }
                  }
              }
              return json_response(200, o);
          });

    // Replaces the subscription's properties: body {"key": "value", ...}. Durable before 204.
    // Nereus extension (events/, doc/events.md): with ?ifVersion=N the replace is a
    // compare-and-set on the current property "version" (absent counts as "0"): 409 and no
    // change when it is not N. Atomic against every other admin write (ctx.write_mu).
    r.add("PUT", route("/subscription/{subscription}/properties"),
          [&ctx](const http_request& req, const path_params& p) {
              auto body = parse_json(req.body);
              if (!body || !body->is_object()) {
                  return error_response(400, "Invalid properties: not a JSON object");
              }
              std::map<std::string, std::string> props;
              for (const auto& [k, v] : body->as_object()) {
                  if (!v.is_string()) {
                      return error_response(400, "Invalid properties: values must be strings");
                  }
                  if (std::string_view(k).starts_with(reserved_property_prefix)) {
                      return error_response(412, "Property keys starting with " +
                                                     std::string(reserved_property_prefix) +
                                                     " are reserved");
                  }
                  props.emplace(std::string(k), std::string(v.as_string()));
              }
              const auto if_version = req.query.find("ifVersion");
              return for_each_subscription(
                  ctx, p,
                  [&](broker::topic&, const std::shared_ptr<broker::subscription>& s)
                      -> std::optional<http_response> {
                      if (if_version != req.query.end()) {
                          const auto current = s->cursor().details().properties;
                          const auto it = current.find("version");
                          const std::string have = it == current.end() ? "0" : it->second;
                          if (have != if_version->second) {
                              return error_response(409,
                                                    "Properties version mismatch: current " + have);
                          }
                      }
                      if (auto r = s->cursor().set_properties(props); !r) {
                          return error_from(r.error());
                      }
                      return std::nullopt;
                  });
          });
}

}  // namespace nereus::admin
