#pragma once

// The one public header that exposes the generated protobuf types (nereus::proto::pb::*).
//
// Chosen design (style R13): generated headers stay inside proto/. The codec headers
// (frame_decoder.h, frame_encoder.h, commands.h, batch_codec.h) only forward-declare pb types;
// code that must READ decoded command fields (the broker's handlers, the client) includes this
// header and uses frame_view::command(). Nothing outside broker/ and client/ should include it.
// Thread-safety: generated messages are thread-compatible.

#include "nereus/proto/command_type.h"
#include "nereus/proto/pulsar_api.pb.h"  // IWYU pragma: export

#include <cstdint>
#include <span>

namespace nereus::proto {

// True when `cmd` holds the sub-message that matches `t` (PING/PONG are empty messages but
// must still be present when we send them).
bool has_body(const pb::BaseCommand& cmd, command_type t) noexcept;

// Clears `cmd`, sets its type and returns nothing; the caller then fills mutable_<body>().
// Always creates the matching (possibly empty) sub-message.
void reset_command(pb::BaseCommand& cmd, command_type t);

// The batch-index ack bitset of a message id as a view (1 bits = not yet acknowledged).
inline std::span<const std::int64_t> ack_set_of(const pb::MessageIdData& id) noexcept {
    return {id.ack_set().data(), static_cast<std::size_t>(id.ack_set_size())};
}

}  // namespace nereus::proto
