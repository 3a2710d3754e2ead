#pragma once

// Error codes of the subscriber runtime and its transports (style R4).
//
// The refusals (message_too_large, consumer_busy, shut_down) are the same category whichever
// transport produced them: the in-process test transport refuses exactly what a server does, and
// the conformance suite asserts the same code against both.
// Thread-safety: thread-safe (constants and a stateless category).

#include <system_error>

namespace nereus::runtime {

enum class errc {
    success = 0,
    message_too_large,  // a payload over the broker's max_message_size (the server refuses it)
    consumer_busy,      // a second consumer of an Exclusive subscription
    shut_down,          // a handle (publisher, seeker, subscription, transport) used after shutdown
    invalid_spec,       // a registration whose declared spec is inconsistent (see spec.h)
    already_started,    // registration or a hook added after start()
    not_started,        // publish/seek before start()
    settle_failed,      // the broker did not confirm an ack/nack/dead-letter (injected or real)
    seek_failed,        // the broker refused a seek
    publish_failed,     // the broker did not confirm a publish
    topic_not_found,    // a seek or subscribe on a topic the broker does not know
    unsupported,        // the transport cannot do this (e.g. no client in this build)
};

const std::error_category& runtime_category() noexcept;

inline std::error_code make_error_code(errc e) noexcept {
    return {static_cast<int>(e), runtime_category()};
}

}  // namespace nereus::runtime

template <>
struct std::is_error_code_enum<nereus::runtime::errc> : std::true_type {};
