#pragma once

// Partitioned-topic metadata: `persistent://t/ns/name` with N partitions is served as the N
// non-partitioned topics `name-partition-0` .. `name-partition-<N-1>`; the broker keeps only N,
// as an admin record of the backend (topic_backend.h), which the ledger backend stores in the
// metadata store. Key layout (doc/format/admin.md):
//
//   partitioned/<tenant>/<namespace>/<local name>   value: N in decimal ASCII
//
// each component escaped by escape_key_component ([A-Za-z0-9-] kept, every other byte `_hh`),
// so no key holds a stray '/'. PARTITIONED_METADATA (handlers/discovery.cc) answers N for such
// a topic and 0 for every other one; the admin API creates, lists and deletes the records.
//
// Thread-safety: thread-safe (the backend is). Blocking: each call is one metadata-store
//   request.
// Durability: create/remove return after the record change is durable.

#include "nereus/base/result.h"
#include "nereus/broker/topic_backend.h"
#include "nereus/broker/topic_name.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace nereus::broker {

// Pulsar's default upper bound on partitions per topic is unbounded; we keep it sane.
inline constexpr std::uint32_t max_partitions = 10'000;

struct partitioned_topic {
    std::string full;  // persistent://tenant/ns/name (without a partition suffix)
    std::uint32_t partitions = 0;
};

// [A-Za-z0-9-] kept, any other byte as `_hh` (lower-case hex).
std::string escape_key_component(std::string_view raw);
std::optional<std::string> unescape_key_component(std::string_view escaped);

// The metadata key of a partitioned topic (the partition suffix, if any, is part of the name).
std::string partitioned_key(const topic_name& n);

// N when `n` names a partitioned topic, 0 otherwise (including a partition of one).
[[nodiscard]] result<std::uint32_t> partition_count(const topic_backend& b, const topic_name& n);
// Records N partitions. true: created; false: a partitioned topic of that name exists already.
// Errors: proto::error_kind::bad_request when n is 0 or above max_partitions.
[[nodiscard]] result<bool> create_partitioned_metadata(topic_backend& b,
                                                       const topic_name& n,
                                                       std::uint32_t partitions);
// Raises N from `from` to `to` (a compare-and-set on the record). true: updated; false: the
// record is absent or no longer holds `from`. Errors: bad_request unless from < to <=
// max_partitions.
[[nodiscard]] result<bool> update_partitioned_metadata(topic_backend& b,
                                                       const topic_name& n,
                                                       std::uint32_t from,
                                                       std::uint32_t to);
// true: removed; false: there was none.
[[nodiscard]] result<bool> remove_partitioned_metadata(topic_backend& b, const topic_name& n);
// The partitioned topics of namespace tenant/ns, by name.
[[nodiscard]] result<std::vector<partitioned_topic>> list_partitioned_topics(
    const topic_backend& b, std::string_view tenant, std::string_view ns);

}  // namespace nereus::broker
