// Decoding one SEND frame (BaseCommand + MessageMetadata + checksum, as `nereus perf` and the
// Pulsar clients send it): the generic protobuf parse against the broker's fast_send scanners
// (proto/send_scan.h), same run.
#include "nereus/proto/commands.h"
#include "nereus/proto/frame_decoder.h"
#include "nereus/proto/pulsar_api.h"

#include <benchmark/benchmark.h>
#include <vector>

namespace {

std::vector<std::byte> send_frame(std::size_t payload_size) {
    nereus::proto::pb::MessageMetadata md;
    md.set_producer_name("perf-producer-0");
    md.set_sequence_id(123456);
    md.set_publish_time(1764528000000);
    md.set_uncompressed_size(static_cast<std::uint32_t>(payload_size));
    nereus::proto::command_writer w;
    nereus::proto::frame_buffer out;
    const std::vector<std::byte> payload(payload_size, std::byte{0x5a});
    if (!w.send(out, {.producer_id = 3, .sequence_id = 123456}, md, payload)) {
        std::abort();
    }
    return {out.begin(), out.end()};
}

void decode(benchmark::State& state, bool fast) {
    const auto frame = send_frame(static_cast<std::size_t>(state.range(0)));
    nereus::proto::frame_decoder d({.fast_send = fast});
    for (auto _ : state) {
        auto r = d.decode(frame);
        if (!r || !r->complete || r->frame.message_error) {
            state.SkipWithError("decode failed");
            break;
        }
        benchmark::DoNotOptimize(r->frame.send.sequence_id);
    }
}

void BM_DecodeSendGeneric(benchmark::State& state) {
    decode(state, false);
}
void BM_DecodeSendFast(benchmark::State& state) {
    decode(state, true);
}

}  // namespace

BENCHMARK(BM_DecodeSendGeneric)->Arg(100)->Arg(1024);
BENCHMARK(BM_DecodeSendFast)->Arg(100)->Arg(1024);
