#pragma once

// The orders source's admitted, versioned value format, "orders/v1": one JSON object per order,
//
//   {"schema":"orders/v1","id":"o-00017","version":3,"status":"paid","amount_cents":1250}
//
// keyed by `id` on the source topic (the message key), with an empty payload as the tombstone
// of a deleted order. `version` counts the order's states since it was (re)created: 1 on
// create, +1 per update. decode_order accepts exactly this format (every field, right types,
// schema "orders/v1"); anything else is an error value, never a default-filled order.
// encode_order writes the canonical form (this field order, no spaces), so two equal orders
// encode to the same bytes: the dumps and digests compare encodings.
//
// Ownership: plain values. Thread-safety: thread-compatible; the functions are pure.

#include "nereus/base/result.h"

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <system_error>

namespace orders {

inline constexpr std::string_view schema_v1 = "orders/v1";

struct order {
    std::string id;
    std::uint64_t version = 0;
    std::string status;
    std::int64_t amount_cents = 0;
    friend bool operator==(const order&, const order&) = default;
};

// Error codes of the example (values are stable).
enum class errc {
    success = 0,
    not_json,        // the payload is not a JSON object
    unknown_schema,  // "schema" is absent or not "orders/v1"
    bad_field,       // a field is missing or has the wrong type
};
const std::error_category& orders_category() noexcept;
inline std::error_code make_error_code(errc e) noexcept {
    return {static_cast<int>(e), orders_category()};
}

[[nodiscard]] std::string encode_order(const order& o);
[[nodiscard]] nereus::result<order> decode_order(std::string_view json);
[[nodiscard]] nereus::result<order> decode_order(std::span<const std::byte> payload);

}  // namespace orders

template <>
struct std::is_error_code_enum<orders::errc> : std::true_type {};
