#pragma once

// Pattern (regex) subscriptions, as Pulsar's clients resolve them: the pattern is an ECMAScript
// regex over full topic names within one namespace ("persistent://tenant/ns/orders-.*"; the
// tenant and namespace are literal), matched against the namespace's topics as
// GET_TOPICS_OF_NAMESPACE lists them; a partition ("...-partition-N") matches when its
// partitioned topic's name does.
// Used by consumer_options::topics_pattern (the consumer lists the namespace again every
// pattern_auto_discovery_period) and by the runtime's Pulsar binding.
//
// Ownership: topic_pattern is a value (it owns its compiled regex).
// Thread-safety: the functions are pure; a topic_pattern is immutable after compile() and may be
//   used from any thread.

#include "nereus/base/result.h"

#include <regex>
#include <string>
#include <string_view>
#include <vector>

namespace nereus::client {

// "tenant/ns" of a pattern "persistent://tenant/ns/<regex>"; errc::invalid_argument when the
// tenant or namespace is not literal ([A-Za-z0-9_-]+) or the domain is not persistent.
[[nodiscard]] result<std::string> pattern_namespace(std::string_view pattern);

// "...-partition-N" -> "...", anything else unchanged.
[[nodiscard]] std::string partitioned_topic_of(std::string_view full_topic);

class topic_pattern {
public:
    // errc::invalid_argument for a bad regex or namespace (pattern_namespace).
    static result<topic_pattern> compile(std::string_view pattern);

    [[nodiscard]] const std::string& pattern() const noexcept { return pattern_; }
    [[nodiscard]] const std::string& namespace_name() const noexcept { return ns_; }
    // Whether the full topic name `topic` (or its partitioned topic, for a partition) matches
    // the whole pattern. A short name is completed to persistent://... first.
    [[nodiscard]] bool matches(std::string_view topic) const;

private:
    std::string pattern_;
    std::string ns_;
    std::regex re_;
};

// The topics of `listed` (GET_TOPICS_OF_NAMESPACE's answer: full names, partitions as
// "...-partition-N") whose topic name matches `pattern`, partitions folded into their
// partitioned topic, each once, in the order listed. errc::invalid_argument for a bad regex.
[[nodiscard]] result<std::vector<std::string>> matching_topics(
    std::string_view pattern, const std::vector<std::string>& listed);

}  // namespace nereus::client
