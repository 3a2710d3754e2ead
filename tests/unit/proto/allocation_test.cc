// R7: steady-state decoding and encoding of recurring frames performs no heap allocation.
// Counts calls of the global operator new in this test binary around the measured loops.

#include "nereus/proto/commands.h"
#include "nereus/proto/frame_decoder.h"
#include "nereus/proto/pulsar_api.h"

#include <gtest/gtest.h>

#include "support/bytes.h"
#include <atomic>
#include <cstdlib>
#include <new>

namespace {
std::atomic<long> allocations{0};
}  // namespace

void* operator new(std::size_t n) {
    allocations.fetch_add(1, std::memory_order_relaxed);
    if (void* p = std::malloc(n == 0 ? 1 : n)) {
        return p;
    }
    throw std::bad_alloc();
}
void operator delete(void* p) noexcept {
    std::free(p);
}
void operator delete(void* p, std::size_t) noexcept {
    std::free(p);
}

namespace nereus::proto {
namespace {

TEST(Allocation, SteadyStateDecodeAndEncodeDoNotAllocate) {
    command_writer w;
    frame_buffer stream;
    pb::MessageMetadata md;
    md.set_producer_name("producer-with-a-name-longer-than-sso");
    md.set_sequence_id(1);
    md.set_publish_time(2);
    auto* kv = md.add_properties();
    kv->set_key("a-property-key-longer-than-sso-buffer");
    kv->set_value("a-property-value-longer-than-sso-buffer");
    const std::string payload(300, 'p');
    ASSERT_TRUE(w.send(stream, {.producer_id = 1, .sequence_id = 1}, md, test::bytes_of(payload)));
    ASSERT_TRUE(w.flow(stream, 1, 1000));
    ASSERT_TRUE(w.ping(stream));

    frame_decoder d;
    frame_buffer out;
    out.reserve(4096);
    const std::int64_t ack_set[] = {5};
    auto round = [&] {
        std::span<const std::byte> rest(stream);
        while (!rest.empty()) {
            auto r = d.decode(rest);
            ASSERT_TRUE(r && r->complete);
            if (r->frame.type() == command_type::send) {
                out.clear();
                ASSERT_TRUE(w.send_receipt(out, 1, r->frame.command().send().sequence_id(), 0,
                                           {.ledger_id = 1, .entry_id = 2}));
                out.clear();
                ASSERT_TRUE(w.message(out, 1, {.ledger_id = 1, .entry_id = 2}, 1, ack_set,
                                      r->frame.headers_and_payload));
            }
            rest = rest.subspan(r->frame.size);
        }
        out.clear();
        ASSERT_TRUE(w.pong(out));
    };
    const long at_start = allocations.load();
    round();  // warm up: the decoder's and writer's messages grow to their working shape
    round();
    EXPECT_GT(allocations.load(), at_start);  // the counter does see protobuf's allocations
    const long before = allocations.load();
    for (int i = 0; i < 100; ++i) {
        round();
    }
    EXPECT_EQ(allocations.load() - before, 0);
}

}  // namespace
}  // namespace nereus::proto
