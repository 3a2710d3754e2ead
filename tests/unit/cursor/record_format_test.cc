// Codecs: round trips, and every byte flip and every truncation of a root, a snapshot and a
// delta fails closed with the record's typed error (never decodes as another valid state).

#include "nereus/cursor/record_format.h"

#include "nereus/base/crc32c.h"
#include "nereus/cursor/errc.h"

#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <random>

namespace nereus::cursor::format {
namespace {

cursor_state sample_state() {
    cursor_state s(100);
    for (offset x = 105; x < 200; x += 3) {
        s.apply(ack_range_op{x, x + 1});
    }
    s.apply(ack_range_op{300, 310});
    auto acked = batch_bits::none_set(70);
    acked.set(1);
    acked.set(65);
    s.apply(ack_cumulative_op{102, 3, 10, {{"seq", "42"}}});  // MDO 102, indices 0..2 of 102
    s.apply(ack_batch_op{151, acked});
    s.apply(put_property_op{"a", "1"});
    s.apply(put_property_op{"b", std::string(40, 'x')});
    s.set_redelivery(103, 2);
    s.set_redelivery(104, 7);
    return s;
}

root_record sample_root(bool spilled) {
    root_record r;
    r.generation = 3;
    r.epoch = 9;
    r.life = lifecycle::active;
    r.commit_seq = 77;
    r.writer = 5;
    r.spilled = spilled;
    if (spilled) {
        r.snapshot = snapshot_ref{
            .seq = 70, .writer = 4, .nonce = 300, .size = 1234, .checksum = 0xdeadbeef};
    } else {
        r.state = sample_state();
    }
    return r;
}

delta_record sample_delta() {
    delta_record d;
    d.generation = 3;
    d.seq = 12;
    d.ops.emplace_back(ack_range_op{5, 9});
    auto acked = batch_bits::none_set(10);
    acked.set(3);
    d.ops.emplace_back(ack_batch_op{11, acked});
    d.ops.emplace_back(ack_cumulative_op{4, 2, 10, {{"k", "v"}}});
    d.ops.emplace_back(ack_cumulative_op{4, std::nullopt, 0, {}});
    d.ops.emplace_back(put_property_op{"p", "q"});
    d.ops.emplace_back(remove_property_op{"p"});
    d.ops.emplace_back(replace_properties_op{{{"x", "y"}}});
    d.ops.emplace_back(redelivery_op{13, 4});
    return d;
}

TEST(CursorRecordFormat, RootRoundTrip) {
    for (bool spilled : {false, true}) {
        const root_record r = sample_root(spilled);
        auto d = decode_root(encode_root(r));
        ASSERT_TRUE(d.has_value()) << d.error().message();
        EXPECT_EQ(d->generation, r.generation);
        EXPECT_EQ(d->epoch, r.epoch);
        EXPECT_EQ(d->life, r.life);
        EXPECT_EQ(d->commit_seq, r.commit_seq);
        EXPECT_EQ(d->writer, r.writer);
        EXPECT_EQ(d->spilled, r.spilled);
        EXPECT_EQ(d->snapshot, r.snapshot);
        EXPECT_EQ(d->delta_count(), r.delta_count());
        EXPECT_TRUE(d->state == r.state);
    }
}

// The spilled root names its snapshot by a short id, not a string: a few varints + a crc.
TEST(CursorRecordFormat, SpilledRootIsCompact) {
    root_record r;
    r.generation = 1;
    r.epoch = 3;
    r.life = lifecycle::active;
    r.commit_seq = 1'500'000;
    r.writer = 17;
    r.spilled = true;
    r.snapshot = snapshot_ref{
        .seq = 1'400'000, .writer = 17, .nonce = 90'000, .size = 20'000'000, .checksum = 7};
    const std::string b = encode_root(r);
    EXPECT_LE(b.size(), header_size + trailer_size + 24U) << b.size();
    auto d = decode_root(b);
    ASSERT_TRUE(d.has_value());
    EXPECT_EQ(d->snapshot, r.snapshot);
    EXPECT_EQ(d->delta_count(), 100'000U);
}

TEST(CursorRecordFormat, SpilledRootWithMoreDeltasThanCommitsIsCorrupt) {
    root_record r = sample_root(true);
    r.snapshot.seq = r.commit_seq + 1;  // encodes as a huge delta count (wraps)
    auto d = decode_root(encode_root(r));
    ASSERT_FALSE(d.has_value());
    EXPECT_EQ(d.error(), errc::corrupt_root);
}

// One merged range op: the per-CAS delta of a group of in-order acks stays a dozen bytes.
TEST(CursorRecordFormat, DeltaIsCompact) {
    delta_record d;
    d.generation = 1;
    d.seq = 1'500'000;
    d.ops.emplace_back(ack_range_op{2'000'000, 2'000'064});
    EXPECT_LE(encode_delta(d).size(), delta_overhead + 6U);
}

TEST(CursorRecordFormat, DeltaOfAnotherKeyOrGenerationIsCorrupt) {
    const delta_record d = sample_delta();
    const std::string b = encode_delta(d);
    ASSERT_TRUE(decode_delta(b, d.generation, d.seq).has_value());
    for (auto [g, q] : {std::pair<std::uint64_t, std::uint64_t>{d.generation + 1, d.seq},
                        {d.generation, d.seq + 1},
                        {d.generation, d.seq - 1},
                        {0, 0}}) {
        auto r = decode_delta(b, g, q);
        ASSERT_FALSE(r.has_value());
        EXPECT_EQ(r.error(), errc::corrupt_delta);
    }
}

TEST(CursorRecordFormat, SnapshotAndDeltaRoundTrip) {
    const cursor_state s = sample_state();
    auto snap = decode_snapshot(encode_snapshot({"cursors/l/c", 3, 70}, s));
    ASSERT_TRUE(snap.has_value());
    EXPECT_EQ(snap->first.identity, "cursors/l/c");
    EXPECT_EQ(snap->first.generation, 3U);
    EXPECT_EQ(snap->first.seq, 70U);
    EXPECT_TRUE(snap->second == s);
    const delta_record d = sample_delta();
    auto back = decode_delta(encode_delta(d), d.generation, d.seq);
    ASSERT_TRUE(back.has_value());
    EXPECT_EQ(back->generation, d.generation);
    EXPECT_EQ(back->seq, d.seq);
    EXPECT_EQ(back->ops, d.ops);
}

// Every single-byte flip (all 8 bit positions plus 0xff) and every truncation fails closed.
void expect_fails_closed(const std::string& good,
                         errc bad,
                         const std::function<std::error_code(std::string_view)>& decode) {
    ASSERT_FALSE(decode(good)) << "the good record must decode";
    for (std::size_t i = 0; i < good.size(); ++i) {
        for (unsigned mask : {0x01U, 0x02U, 0x04U, 0x08U, 0x10U, 0x20U, 0x40U, 0x80U, 0xffU}) {
            std::string b = good;
            b[i] = static_cast<char>(static_cast<unsigned char>(b[i]) ^ mask);
            const std::error_code ec = decode(b);
            ASSERT_TRUE(ec == bad || ec == errc::unsupported_format)
                << "flip at " << i << " mask " << mask << " gave '" << ec.message() << "'";
        }
    }
    for (std::size_t n = 0; n < good.size(); ++n) {
        ASSERT_EQ(decode(std::string_view(good).substr(0, n)), make_error_code(bad))
            << "truncation to " << n;
    }
    ASSERT_EQ(decode(good + std::string(1, '\0')), make_error_code(bad)) << "extension";
}

TEST(CursorRecordFormat, RootByteFlipsAndTruncationsFailClosed) {
    for (bool spilled : {false, true}) {
        expect_fails_closed(encode_root(sample_root(spilled)), errc::corrupt_root,
                            [](std::string_view b) {
                                auto r = decode_root(b);
                                return r ? std::error_code() : r.error();
                            });
    }
}

TEST(CursorRecordFormat, SnapshotByteFlipsAndTruncationsFailClosed) {
    expect_fails_closed(encode_snapshot({"cursors/l/c", 3, 70}, sample_state()),
                        errc::corrupt_snapshot, [](std::string_view b) {
                            auto r = decode_snapshot(b);
                            return r ? std::error_code() : r.error();
                        });
}

TEST(CursorRecordFormat, DeltaByteFlipsAndTruncationsFailClosed) {
    const delta_record d = sample_delta();
    expect_fails_closed(encode_delta(d), errc::corrupt_delta, [&](std::string_view b) {
        auto r = decode_delta(b, d.generation, d.seq);
        return r ? std::error_code() : r.error();
    });
    // A one-op delta (the common case) too.
    delta_record one;
    one.generation = 1;
    one.seq = 1'500'000;
    one.ops.emplace_back(ack_range_op{2'000'000, 2'000'064});
    expect_fails_closed(encode_delta(one), errc::corrupt_delta, [&](std::string_view b) {
        auto r = decode_delta(b, one.generation, one.seq);
        return r ? std::error_code() : r.error();
    });
}

TEST(CursorRecordFormat, UnknownVersionWithValidChecksumIsUnsupported) {
    // A delta whose tag names version 3 (kind stays "delta"), with a matching checksum.
    const delta_record d = sample_delta();
    std::string b = encode_delta(d);
    b[0] = static_cast<char>((static_cast<unsigned>(record_kind::delta) << 4U) | 3U);
    std::string bound;
    bound.push_back(static_cast<char>(d.generation));  // both < 128: one-byte varints
    bound.push_back(static_cast<char>(d.seq));
    const std::uint32_t crc =
        crc32c::extend(crc32c::value(bound.data(), bound.size()), b.data(), b.size() - 4);
    for (int i = 0; i < 4; ++i) {
        b[b.size() - 4 + static_cast<std::size_t>(i)] = static_cast<char>((crc >> (8 * i)) & 0xff);
    }
    auto r = decode_delta(b, d.generation, d.seq);
    ASSERT_FALSE(r.has_value());
    EXPECT_EQ(r.error(), errc::unsupported_format);
    // A root of format version 1 (the layout before the compact root) is unsupported too.
    std::string root = encode_root(sample_root(true));
    root[4] = 1;
    const std::uint32_t rc = crc32c::value(root.data(), root.size() - 4);
    for (int i = 0; i < 4; ++i) {
        root[root.size() - 4 + static_cast<std::size_t>(i)] =
            static_cast<char>((rc >> (8 * i)) & 0xff);
    }
    auto rr = decode_root(root);
    ASSERT_FALSE(rr.has_value());
    EXPECT_EQ(rr.error(), errc::unsupported_format);
}

// 10M holes: encode + decode well under 2 s (the recovery target).
TEST(CursorRecordFormat, TenMillionHoleSnapshotDecodesFast) {
    cursor_state s(0);
    for (offset i = 0; i < 10'000'000; ++i) {
        s.mutable_ranges().append(2 * i + 1, 2 * i + 2);
    }
    const std::string bytes = encode_snapshot({"cursors/l/c", 1, 1}, s);
    const auto t0 = std::chrono::steady_clock::now();
    auto back = decode_snapshot(bytes);
    const auto dt = std::chrono::steady_clock::now() - t0;
    ASSERT_TRUE(back.has_value());
    EXPECT_EQ(back->second.ranges().size(), 10'000'000U);
#ifndef NEREUS_SANITIZER_BUILD
    // A speed bound: not asserted under ASan/TSan (several times slower by design).
    EXPECT_LT(std::chrono::duration<double>(dt).count(), 2.0);
#endif
    RecordProperty("decode_10M_seconds", std::to_string(std::chrono::duration<double>(dt).count()));
    RecordProperty("snapshot_10M_bytes", std::to_string(bytes.size()));
}

}  // namespace
}  // namespace nereus::cursor::format
