// The direct SEND encoder (send_encoder.h) must write exactly the bytes of the generic protobuf
// path (command_writer::send) for any field values and widths, producer name, payload, peer
// version (checksum or not) and frame limit, appended after existing bytes, with the same
// errors; and its frames decode (checksum verified) to what was asked.

#include "nereus/proto/send_encoder.h"

#include "nereus/proto/commands.h"
#include "nereus/proto/errc.h"
#include "nereus/proto/frame_decoder.h"
#include "nereus/proto/pulsar_api.h"

#include <gtest/gtest.h>

#include "support/bytes.h"
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

namespace nereus::proto {
namespace {

std::uint64_t gen_u64() {
    return *rc::gen::oneOf(
        rc::gen::arbitrary<std::uint64_t>(), rc::gen::inRange<std::uint64_t>(0, 300),
        rc::gen::element<std::uint64_t>(127, 128, 16383, 16384, ~std::uint64_t{0}));
}

std::int32_t gen_i32() {
    return *rc::gen::oneOf(rc::gen::arbitrary<std::int32_t>(), rc::gen::inRange(-2, 1001),
                           rc::gen::element<std::int32_t>(1, 127, 128, INT32_MAX, INT32_MIN));
}

// The generic path, as a producer fills it: the command's fields and the metadata's.
command_writer::written generic(command_writer& w,
                                frame_buffer& out,
                                const send_args& a,
                                std::string_view name,
                                const send_metadata& m,
                                std::span<const std::byte> payload) {
    pb::MessageMetadata md;
    md.set_producer_name(std::string(name));
    md.set_sequence_id(m.sequence_id);
    md.set_publish_time(m.publish_time_ms);
    if (m.num_messages_in_batch) {
        md.set_num_messages_in_batch(*m.num_messages_in_batch);
    }
    if (m.highest_sequence_id) {
        md.set_highest_sequence_id(*m.highest_sequence_id);
    }
    return w.send(out, a, md, payload);
}

RC_GTEST_PROP(SendEncoder, IsByteIdenticalToTheGenericPath, ()) {
    const auto name =
        *rc::gen::oneOf(rc::gen::arbitrary<std::string>(),
                        rc::gen::container<std::string>(*rc::gen::inRange<std::size_t>(120, 300),
                                                        rc::gen::arbitrary<char>()));
    send_args a;
    a.producer_id = gen_u64();
    a.sequence_id = gen_u64();
    a.num_messages = gen_i32();
    if (*rc::gen::arbitrary<bool>()) {
        a.highest_sequence_id = gen_u64();
    }
    send_metadata m;
    m.sequence_id = *rc::gen::arbitrary<bool>() ? a.sequence_id : gen_u64();
    m.publish_time_ms = *rc::gen::oneOf(rc::gen::just<std::uint64_t>(1'796'000'000'000),
                                        rc::gen::arbitrary<std::uint64_t>());
    if (*rc::gen::arbitrary<bool>()) {
        m.num_messages_in_batch = gen_i32();
    }
    if (*rc::gen::arbitrary<bool>()) {
        m.highest_sequence_id = gen_u64();
    }
    const auto payload =
        *rc::gen::oneOf(rc::gen::arbitrary<std::string>(),
                        rc::gen::container<std::string>(*rc::gen::inRange<std::size_t>(90, 2100),
                                                        rc::gen::arbitrary<char>()));
    command_writer w;
    encode_options o;
    o.peer_protocol_version = *rc::gen::element(0, 5, 6, 11, 19, 21);
    if (*rc::gen::arbitrary<bool>()) {
        o.max_frame_size = *rc::gen::inRange<std::uint32_t>(16, 4096);
    }
    w.options() = o;
    // Appended after bytes already in the buffer (a connection's pending writes).
    const auto before = *rc::gen::container<std::string>(rc::gen::arbitrary<char>());
    frame_buffer direct = test::bytes_of(before);
    frame_buffer via_protobuf = direct;

    const auto x = send_encoder(name).append(direct, a, m, test::bytes_of(payload), o);
    const auto y = generic(w, via_protobuf, a, name, m, test::bytes_of(payload));
    RC_ASSERT(x.has_value() == y.has_value());
    if (!x) {
        RC_ASSERT(x.error() == y.error());
        RC_ASSERT(direct.size() == before.size());  // unchanged on error
        return;
    }
    RC_ASSERT(*x == *y);
    RC_ASSERT(direct == via_protobuf);

    // And it decodes to what was asked, its checksum verified.
    frame_decoder d;
    const auto step = d.decode(std::span<const std::byte>(direct).subspan(before.size()));
    RC_ASSERT(step.has_value() && step->complete);
    RC_ASSERT(!step->frame.message_error);
    const auto& s = step->frame.command().send();
    RC_ASSERT(s.producer_id() == a.producer_id);
    RC_ASSERT(s.sequence_id() == a.sequence_id);
    RC_ASSERT(s.num_messages() == a.num_messages);
    const auto* md = step->frame.metadata();
    RC_ASSERT(md != nullptr);
    RC_ASSERT(md->producer_name() == name);
    RC_ASSERT(md->sequence_id() == m.sequence_id);
    RC_ASSERT(md->publish_time() == m.publish_time_ms);
}

// The producer name can change (a reconnect gets a new one); the next frames carry it.
TEST(SendEncoder, ProducerNameChangesApplyToLaterFrames) {
    send_encoder e("first");
    command_writer w;
    const std::string payload(100, 'x');
    for (const std::string& name :
         {std::string("standalone-0-1"), std::string(200, 'n'), std::string()}) {
        e.set_producer_name(name);
        frame_buffer direct;
        frame_buffer via_protobuf;
        const send_args a{.producer_id = 3, .sequence_id = 9};
        const send_metadata m{.sequence_id = 9, .publish_time_ms = 1'796'000'000'123};
        ASSERT_TRUE(e.append(direct, a, m, test::bytes_of(payload), w.options()));
        ASSERT_TRUE(generic(w, via_protobuf, a, name, m, test::bytes_of(payload)));
        EXPECT_EQ(direct, via_protobuf) << name;
    }
}

// Many SENDs appended to one buffer give the same stream as the generic path.
TEST(SendEncoder, AStreamOfSendsMatchesTheGenericPath) {
    send_encoder e("p");
    command_writer w;
    frame_buffer direct;
    frame_buffer via_protobuf;
    std::string payload(100, 'a');
    for (std::uint64_t i = 0; i < 2000; ++i) {
        payload[i % payload.size()] = static_cast<char>(i);
        const send_args a{.producer_id = 0, .sequence_id = i * 977};
        const send_metadata m{.sequence_id = i * 977, .publish_time_ms = 1'796'000'000'000 + i};
        ASSERT_TRUE(e.append(direct, a, m, test::bytes_of(payload), w.options()));
        ASSERT_TRUE(generic(w, via_protobuf, a, "p", m, test::bytes_of(payload)));
    }
    EXPECT_EQ(direct, via_protobuf);
}

}  // namespace
}  // namespace nereus::proto
