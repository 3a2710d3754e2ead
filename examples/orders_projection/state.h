#pragma once

// One side of the comparison (the source's final state or the projection's rows) as the
// example prints and compares it: order id → canonical orders/v1 JSON (order.h), sorted by id.
// `lines` are the dump format (one JSON object per line, sorted by id; the same bytes on both
// sides when the states are equal), `digest` a 64-bit FNV-1a over those lines (each followed by
// '\n'), printed as 16 hex digits, so `sha256sum`-style comparisons of two dumps and the
// self-check's last line agree.
//
// Ownership: a plain value. Thread-safety: thread-compatible.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace orders {

using state = std::map<std::string, std::string>;  // id -> canonical JSON

[[nodiscard]] std::vector<std::string> lines(const state& s);
[[nodiscard]] std::string digest(const state& s);

// At most `limit` human-readable differences ("missing o-1 ...", "extra ...", "differs ...").
[[nodiscard]] std::vector<std::string> differences(const state& projection,
                                                   const state& source,
                                                   std::size_t limit);

}  // namespace orders
