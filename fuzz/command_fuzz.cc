// libFuzzer target: arbitrary bytes as a serialized BaseCommand, the way the broker receives
// one, through every parsing step that does not need a live connection:
//   1. pb::BaseCommand::ParsePartialFromArray (what frame_decoder does), re-serialized and
//      parsed again: the second serialization must equal the first (a parsed command is stable);
//   2. the same bytes wrapped in a frame ([totalSize][commandSize][command], optionally followed
//      by a payload section from the input's tail) through frame_decoder: a success consumes
//      exactly the frame, reports the type our .proto parsed (or find_varint_field's raw value
//      for unknown types), and the payload views stay inside the frame;
//   3. the topic names of LOOKUP / PARTITIONED_METADATA / PRODUCER / SUBSCRIBE through
//      broker::parse_topic_name (what every handler does first); a parsed name re-parses from
//      full() to the same name.
// The per-command handlers themselves (broker/connection.cc) need a running broker: not here.

#include "nereus/broker/topic_name.h"
#include "nereus/proto/command_type.h"
#include "nereus/proto/frame_decoder.h"
#include "nereus/proto/pulsar_api.h"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace {

namespace pb = nereus::proto::pb;

void check(bool ok) {
    if (!ok) {
        std::abort();
    }
}

void put_u32_be(std::vector<std::byte>& out, std::uint32_t v) {
    for (int shift = 24; shift >= 0; shift -= 8) {
        out.push_back(static_cast<std::byte>((v >> static_cast<unsigned>(shift)) & 0xffU));
    }
}

void check_topic(const std::string& s) {
    auto t = nereus::broker::parse_topic_name(s);
    if (!t) {
        return;
    }
    const std::string full = t->full();
    auto again = nereus::broker::parse_topic_name(full);
    check(again.has_value());
    check(again->full() == full);
    check(again->partition == t->partition);
    check(again->namespace_name() == t->namespace_name());
}

void check_topics(const pb::BaseCommand& c) {
    if (c.has_lookuptopic()) {
        check_topic(c.lookuptopic().topic());
    }
    if (c.has_partitionmetadata()) {
        check_topic(c.partitionmetadata().topic());
    }
    if (c.has_producer()) {
        check_topic(c.producer().topic());
    }
    if (c.has_subscribe()) {
        check_topic(c.subscribe().topic());
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size == 0) {
        return 0;
    }
    // Byte 0: how many of the trailing bytes form a payload section (0 = a simple command).
    const std::size_t payload_len = data[0] % (size);
    const std::span<const std::byte> all(reinterpret_cast<const std::byte*>(data + 1), size - 1);
    const auto command = all.first(all.size() - payload_len);
    const auto payload = all.subspan(command.size());

    // 1. protobuf parse, re-serialize, parse again.
    pb::BaseCommand parsed;
    const bool parsed_ok =
        parsed.ParsePartialFromArray(command.data(), static_cast<int>(command.size()));
    if (parsed_ok) {
        const std::string once = parsed.SerializePartialAsString();
        pb::BaseCommand again;
        check(again.ParsePartialFromString(once));
        check(again.SerializePartialAsString() == once);
        check(again.type() == parsed.type());
        check_topics(parsed);
    }

    // 2. the same bytes as a frame.
    std::vector<std::byte> frame;
    put_u32_be(frame, static_cast<std::uint32_t>(4 + command.size() + payload.size()));
    put_u32_be(frame, static_cast<std::uint32_t>(command.size()));
    frame.insert(frame.end(), command.begin(), command.end());
    frame.insert(frame.end(), payload.begin(), payload.end());
    nereus::proto::frame_decoder decoder({.max_frame_size = 1 << 20});
    auto step = decoder.decode(frame);
    if (!step) {
        return 0;
    }
    check(step->complete);  // the whole frame is there
    const auto& f = step->frame;
    check(f.size == frame.size());
    check(f.command_bytes.size() == command.size());
    const auto* lo = frame.data();
    const auto* hi = frame.data() + frame.size();
    for (auto view : {f.headers_and_payload, f.checksummed, f.metadata_bytes, f.payload,
                      f.broker_entry_metadata}) {
        check(view.empty() || (view.data() >= lo && view.data() + view.size() <= hi));
    }
    if (f.known_type) {
        static_cast<void>(nereus::proto::to_string(f.type()));
        check_topics(f.command());
    } else if (auto raw = nereus::proto::find_varint_field(command, 1)) {
        check(!nereus::proto::is_known_command_type(static_cast<std::int32_t>(*raw)));
    }
    return 0;
}
