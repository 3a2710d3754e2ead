#pragma once

// A minimal, blocking Pulsar wire client for broker tests: plain POSIX socket, frames built
// with proto::command_writer and read with proto::frame_decoder, every wait bounded by a
// timeout. Not a Pulsar client: it never reconnects, batches or retries.
// Thread-safety: thread-compatible (one test thread).

#include "nereus/proto/commands.h"
#include "nereus/proto/frame_decoder.h"
#include "nereus/proto/pulsar_api.h"

#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace nereus::broker::test {

using namespace std::chrono_literals;

struct received {
    proto::command_type type{};
    std::int32_t raw_type = 0;
    proto::pb::BaseCommand cmd;
    std::vector<std::byte> stored;  // headers_and_payload of a MESSAGE
    std::string payload;            // the message payload (MESSAGE)
};

class wire_client {
public:
    // Connects to 127.0.0.1:port; nullptr on failure.
    static std::unique_ptr<wire_client> open(std::uint16_t port);
    ~wire_client();
    wire_client(const wire_client&) = delete;
    wire_client& operator=(const wire_client&) = delete;

    // CONNECT → CONNECTED. Returns the CONNECTED command, or nullopt.
    std::optional<received> handshake(std::int32_t protocol_version = 20);

    proto::command_writer& writer() { return writer_; }

    // Builds a frame with the writer and sends it.
    template <class F>
    bool send(F&& build) {
        proto::frame_buffer b;
        if (!build(b)) {
            return false;
        }
        return send_raw(b);
    }
    bool send_raw(std::span<const std::byte> bytes);
    bool send_text(std::string_view s);

    // SEND of one message with `payload` (checksum included).
    bool send_message(std::uint64_t producer_id,
                      std::uint64_t sequence_id,
                      std::string_view payload,
                      std::int32_t batch = 0,
                      std::string_view key = {});

    // The next frame, or nullopt on timeout/EOF (closed() tells which).
    std::optional<received> next(std::chrono::milliseconds timeout = 5s);
    // The next frame of type `t`; frames of other types are kept for later next() calls...
    // except PINGs, which are answered. nullopt on timeout/EOF.
    std::optional<received> expect(proto::command_type t, std::chrono::milliseconds timeout = 5s);
    // True when the peer closed the connection within `timeout` (frames before are dropped).
    bool wait_closed(std::chrono::milliseconds timeout = 5s);
    bool closed() const { return eof_; }

private:
    explicit wire_client(int fd);
    std::optional<received> read_frame(std::chrono::milliseconds timeout);

    int fd_ = -1;
    bool eof_ = false;
    proto::frame_decoder decoder_;
    proto::command_writer writer_;
    std::vector<std::byte> buf_;
    std::deque<received> held_;
};

}  // namespace nereus::broker::test
