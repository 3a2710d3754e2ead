#include "nereus/runtime/spec.h"

#include "nereus/runtime/errc.h"

#include <regex>

namespace nereus::runtime {

const char* to_string(subscription_type t) {
    switch (t) {
        case subscription_type::exclusive:
            return "Exclusive";
        case subscription_type::shared:
            return "Shared";
        case subscription_type::failover:
            return "Failover";
        case subscription_type::key_shared:
            return "Key_Shared";
    }
    return "?";
}

const char* to_string(outcome::kind k) {
    switch (k) {
        case outcome::kind::ack:
            return "ack";
        case outcome::kind::retry:
            return "retry";
        case outcome::kind::retry_after:
            return "retry_after";
        case outcome::kind::dead_letter:
            return "dead_letter";
        case outcome::kind::drop:
            return "drop";
    }
    return "?";
}

result<void> validate(const subscriber_spec& s) {
    if (s.subscription.empty() || s.dispatch.n == 0) {
        return error(errc::invalid_spec);
    }
    if (s.batch_size > 0 && s.dispatch.of == lanes::kind::by_key) {
        return error(errc::invalid_spec);  // a batch mixes keys; lanes by key cannot hold it
    }
    switch (s.topics.of) {
        case topic_selector::kind::one:
            if (s.topics.names.size() != 1 || s.topics.names[0].empty()) {
                return error(errc::invalid_spec);
            }
            break;
        case topic_selector::kind::list:
            if (s.topics.names.empty())
                return error(errc::invalid_spec);
            for (const auto& n : s.topics.names) {
                if (n.empty())
                    return error(errc::invalid_spec);
            }
            break;
        case topic_selector::kind::pattern:
            try {
                std::regex re(s.topics.pattern);
            } catch (const std::regex_error&) {
                return error(errc::invalid_spec);
            }
            break;
    }
    if (s.dead_letter && s.dead_letter->max_redeliveries == 0) {
        return error(errc::invalid_spec);  // Pulsar requires maxRedeliverCount > 0
    }
    return {};
}

std::string full_topic_name(std::string_view name) {
    if (name.find("://") != std::string_view::npos) {
        return std::string(name);
    }
    if (name.find('/') != std::string_view::npos) {
        return "persistent://" + std::string(name);
    }
    return "persistent://public/default/" + std::string(name);
}

std::string dead_letter_topic(const subscriber_spec& s, std::string_view topic) {
    if (s.dead_letter && !s.dead_letter->topic.empty()) {
        return full_topic_name(s.dead_letter->topic);
    }
    return full_topic_name(topic) + "-" + s.subscription + "-DLQ";
}

}  // namespace nereus::runtime
