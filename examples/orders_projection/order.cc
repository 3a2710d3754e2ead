#include "order.h"

#include <boost/json.hpp>

namespace orders {

namespace {

class category final : public std::error_category {
public:
    const char* name() const noexcept override { return "orders"; }
    std::string message(int c) const override {
        switch (static_cast<errc>(c)) {
            case errc::success:
                return "success";
            case errc::not_json:
                return "payload is not a JSON object";
            case errc::unknown_schema:
                return "schema is not orders/v1";
            case errc::bad_field:
                return "a field is missing or has the wrong type";
        }
        return "unknown orders error";
    }
};

}  // namespace

const std::error_category& orders_category() noexcept {
    static const category c;
    return c;
}

std::string encode_order(const order& o) {
    // boost::json::object keeps insertion order, so this is the canonical field order.
    boost::json::object j;
    j["schema"] = schema_v1;
    j["id"] = o.id;
    j["version"] = o.version;
    j["status"] = o.status;
    j["amount_cents"] = o.amount_cents;
    return boost::json::serialize(j);
}

nereus::result<order> decode_order(std::string_view json) {
    boost::system::error_code ec;
    const boost::json::value v = boost::json::parse(json, ec);
    if (ec || !v.is_object()) {
        return nereus::error(errc::not_json);
    }
    const auto& j = v.get_object();
    const auto* schema = j.if_contains("schema");
    if (schema == nullptr || !schema->is_string() || schema->get_string() != schema_v1) {
        return nereus::error(errc::unknown_schema);
    }
    const auto* id = j.if_contains("id");
    const auto* version = j.if_contains("version");
    const auto* status = j.if_contains("status");
    const auto* amount = j.if_contains("amount_cents");
    if (id == nullptr || !id->is_string() || id->get_string().empty() || version == nullptr ||
        status == nullptr || !status->is_string() || amount == nullptr || j.size() != 5) {
        return nereus::error(errc::bad_field);
    }
    order o;
    o.id = std::string(id->get_string());
    o.status = std::string(status->get_string());
    if (version->is_uint64()) {
        o.version = version->get_uint64();
    } else if (version->is_int64() && version->get_int64() > 0) {
        o.version = static_cast<std::uint64_t>(version->get_int64());
    } else {
        return nereus::error(errc::bad_field);
    }
    if (amount->is_int64()) {
        o.amount_cents = amount->get_int64();
    } else {
        return nereus::error(errc::bad_field);
    }
    if (o.version == 0) {
        return nereus::error(errc::bad_field);
    }
    return o;
}

nereus::result<order> decode_order(std::span<const std::byte> payload) {
    return decode_order(
        std::string_view(reinterpret_cast<const char*>(payload.data()), payload.size()));
}

}  // namespace orders
