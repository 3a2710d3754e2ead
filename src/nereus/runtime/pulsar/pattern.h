#pragma once

// Pattern subscriptions over the binary protocol: the namespace a pattern names, and which of
// the namespace's topics (GET_TOPICS_OF_NAMESPACE) it matches — as Pulsar's clients resolve a
// regex subscription: the pattern is a regex over full topic names within one namespace
// ("persistent://tenant/ns/orders-.*"), partitions count as their partitioned topic.
// Thread-safety: pure functions.

#include "nereus/base/result.h"

#include <string>
#include <string_view>
#include <vector>

namespace nereus::runtime::pulsar {

// "tenant/ns" of a pattern "persistent://tenant/ns/<regex>"; errc::invalid_spec when the
// tenant or namespace is not literal or the domain is not persistent.
[[nodiscard]] result<std::string> pattern_namespace(std::string_view pattern);

// The topics of `listed` (as GET_TOPICS_OF_NAMESPACE answers: full names, partitions as
// "...-partition-N") whose topic name matches `pattern` (ECMAScript regex, whole name), each
// once, in the order listed. errc::invalid_spec for a bad regex.
[[nodiscard]] result<std::vector<std::string>> matching_topics(
    std::string_view pattern, const std::vector<std::string>& listed);

}  // namespace nereus::runtime::pulsar
