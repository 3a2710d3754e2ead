// libFuzzer target: arbitrary bytes into frame_decoder, as a connection's receive loop would
// feed them (whole buffer, then again in two pieces), plus batch_reader over any payload.
// Invariants checked: no crash/UB/leak (sanitizers), a complete frame never claims more bytes
// than given, "need more" always asks for more than given, and a frame decoded from the whole
// buffer decodes identically when the bytes arrive split.

#include "nereus/proto/batch_codec.h"
#include "nereus/proto/frame_decoder.h"
#include "nereus/proto/pulsar_api.h"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>
#include <vector>

namespace {

using nereus::proto::frame_decoder;

void check(bool ok) {
    if (!ok) {
        std::abort();
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::span<const std::byte> input(reinterpret_cast<const std::byte*>(data), size);
    frame_decoder whole({.max_frame_size = 1 << 20});
    std::span<const std::byte> rest = input;
    std::vector<std::size_t> sizes;
    while (!rest.empty()) {
        auto r = whole.decode(rest);
        if (!r) {
            break;
        }
        if (!r->complete) {
            check(r->bytes_needed > rest.size());
            break;
        }
        const auto& f = r->frame;
        check(f.size > 0 && f.size <= rest.size());
        check(f.payload.size() <= f.size);
        if (f.metadata() != nullptr && f.metadata()->has_num_messages_in_batch()) {
            nereus::proto::batch_reader br;
            br.reset(f.payload, f.metadata()->num_messages_in_batch());
            for (int i = 0; i < 10000; ++i) {
                auto more = br.next();
                if (!more || !*more) {
                    break;
                }
            }
        }
        sizes.push_back(f.size);
        rest = rest.subspan(f.size);
    }
    // Same bytes, delivered in two pieces: the first frame must come out the same size.
    if (!sizes.empty() && size > 1) {
        frame_decoder split({.max_frame_size = 1 << 20});
        const std::size_t cut = data[0] % size;
        auto first = split.decode(input.first(cut));
        check(first.has_value());  // the whole-buffer decode of this frame succeeded
        if (first->complete) {
            check(first->frame.size == sizes[0]);
        } else {
            auto second = split.decode(input);
            check(second && second->complete && second->frame.size == sizes[0]);
        }
    }
    return 0;
}
