#include "nereus/storage/format.h"

#include "nereus/base/crc32c.h"

#include <gtest/gtest.h>

#include "support/payloads.h"
#include <vector>

namespace nereus::storage {
namespace {

using testing::payload;

// Builds a block the way the committer does: records {stream id, segment record} after the
// header space.
std::vector<std::byte> make_block(
    std::uint64_t seq,
    const std::vector<std::pair<std::uint64_t, std::vector<std::byte>>>& recs,
    std::uint64_t first_offset = 0) {
    std::vector<std::byte> b(format::kBlockHeaderSize);
    std::uint64_t off = first_offset;
    for (const auto& [sid, p] : recs) {
        const std::size_t at = b.size();
        b.resize(at + format::kJournalRecordPrefix + format::kRecordHeaderSize + p.size());
        format::put_u64(b.data() + at, sid);
        std::byte* h = b.data() + at + format::kJournalRecordPrefix;
        format::finish_record_header(h, crc32c::value(p.data(), p.size()),
                                     static_cast<std::uint32_t>(p.size()), off++);
        std::copy(p.begin(), p.end(), h + format::kRecordHeaderSize);
    }
    format::finish_block(b, seq, static_cast<std::uint32_t>(recs.size()));
    return b;
}

TEST(Format, FinishBlockFromRecordsCrcWritesTheSameHeader) {
    for (const std::size_t n : {0, 1, 3}) {
        std::vector<std::pair<std::uint64_t, std::vector<std::byte>>> recs;
        for (std::size_t i = 0; i < n; ++i) {
            recs.emplace_back(i + 1, payload(i + 1, i, 100 + 900 * i));
        }
        auto b = make_block(9, recs);
        const auto want = b;
        std::fill(b.begin(), b.begin() + format::kBlockHeaderSize, std::byte{0});
        const std::uint32_t records_crc =
            crc32c::value(b.data() + format::kBlockHeaderSize, b.size() - format::kBlockHeaderSize);
        format::finish_block(b, 9, static_cast<std::uint32_t>(n), records_crc);
        EXPECT_EQ(b, want) << n;
        EXPECT_EQ(format::check_block(b), format::defect::none);
        format::finish_block(b, 9, static_cast<std::uint32_t>(n), records_crc ^ 1);
        EXPECT_EQ(format::check_block(b), format::defect::bad_crc);  // a wrong fold fails closed
    }
}

TEST(Format, RecordHeaderRoundTrip) {
    const auto p = payload(1, 2, 100);
    std::byte hdr[format::kRecordHeaderSize];
    format::finish_record_header(hdr, crc32c::value(p.data(), p.size()), 100, 42);
    const auto h = format::decode_record_header(hdr);
    EXPECT_EQ(h.len, 100U);
    EXPECT_EQ(h.offset, 42U);
    EXPECT_TRUE(format::record_crc_ok(hdr, p.data(), 100));
    auto bad = p;
    bad[50] ^= std::byte{1};
    EXPECT_FALSE(format::record_crc_ok(hdr, bad.data(), 100));
    hdr[8] ^= std::byte{1};  // offset field is covered too
    EXPECT_FALSE(format::record_crc_ok(hdr, p.data(), 100));
}

TEST(Format, ZeroLengthRecord) {
    std::byte hdr[format::kRecordHeaderSize];
    format::finish_record_header(hdr, crc32c::value(nullptr, 0), 0, 7);
    EXPECT_TRUE(format::record_crc_ok(hdr, nullptr, 0));
}

TEST(Format, BlockRoundTrip) {
    const auto b =
        make_block(9, {{1, payload(1, 0, 10)}, {2, payload(2, 0, 0)}, {1, payload(1, 1, 300)}});
    EXPECT_EQ(format::check_block(b), format::defect::none);
    const auto h = format::decode_block_header(b.data());
    EXPECT_EQ(h.seq, 9U);
    EXPECT_EQ(h.count, 3U);
    EXPECT_EQ(h.length, b.size());
    std::vector<std::uint64_t> sids;
    std::vector<std::size_t> lens;
    format::for_each_block_record(b, [&](std::uint64_t sid, bytes_view rec) {
        sids.push_back(sid);
        lens.push_back(rec.size() - format::kRecordHeaderSize);
    });
    EXPECT_EQ(sids, (std::vector<std::uint64_t>{1, 2, 1}));
    EXPECT_EQ(lens, (std::vector<std::size_t>{10, 0, 300}));
}

TEST(Format, BlockDefects) {
    const auto b = make_block(1, {{1, payload(1, 0, 64)}, {1, payload(1, 1, 64)}});
    auto torn = b;
    torn.resize(b.size() - 5);
    EXPECT_EQ(format::check_block(torn), format::defect::incomplete);
    torn.resize(10);
    EXPECT_EQ(format::check_block(torn), format::defect::incomplete);
    auto flipped = b;
    flipped[b.size() - 1] ^= std::byte{0x40};
    EXPECT_EQ(format::check_block(flipped), format::defect::bad_crc);
    auto magic = b;
    magic[0] ^= std::byte{1};
    EXPECT_EQ(format::check_block(magic), format::defect::bad_magic);
    auto count = b;
    format::put_u32(count.data() + 20, 3);  // wrong count, crc recomputed
    format::put_u32(count.data() + 8, crc32c::value(count.data() + 12, count.size() - 12));
    EXPECT_EQ(format::check_block(count), format::defect::bad_records);
    const std::vector<std::byte> zeros(64);
    EXPECT_EQ(format::check_block(zeros), format::defect::bad_magic);
}

TEST(Format, CheckpointRoundTrip) {
    const format::journal_position p{12, 4096, 77};
    const std::vector<format::stream_mark> marks{{1, 0, 500, 9}, {7, 1000, 32, 1002}};
    auto b = format::encode_checkpoint(p, marks);
    EXPECT_EQ(b.size(), format::kCheckpointHeaderSize + 2 * format::kStreamMarkSize + 4);
    auto d = format::decode_checkpoint(b);
    ASSERT_TRUE(d);
    EXPECT_EQ(d->pos, p);
    EXPECT_EQ(d->marks, marks);
    auto empty = format::decode_checkpoint(format::encode_checkpoint(p, {}));
    ASSERT_TRUE(empty);
    EXPECT_TRUE(empty->marks.empty());
    b[17] ^= std::byte{1};
    EXPECT_FALSE(format::decode_checkpoint(b));
    b[17] ^= std::byte{1};
    b[60] ^= std::byte{1};  // inside a mark
    EXPECT_FALSE(format::decode_checkpoint(b));
    EXPECT_FALSE(format::decode_checkpoint(bytes_view(b.data(), 20)));
    EXPECT_FALSE(format::decode_checkpoint(bytes_view(b.data(), b.size() - 1)));
}

TEST(Format, Names) {
    EXPECT_EQ(format::journal_file_name(3), "00000000000000000003.journal");
    EXPECT_EQ(format::segment_file_name(1234), "00000000000000001234.log");
    EXPECT_EQ(format::stream_dir_name(0xabc), "0000000000000abc");
    EXPECT_EQ(format::parse_journal_file_name("00000000000000000003.journal"), 3U);
    EXPECT_EQ(format::parse_segment_file_name("00000000000000001234.log"), 1234U);
    EXPECT_EQ(format::parse_stream_dir_name("0000000000000abc"), 0xabcU);
    EXPECT_EQ(format::parse_stream_dir_name("ffffffffffffffff"), UINT64_MAX);
    EXPECT_FALSE(format::parse_segment_file_name("0000000000000001234.log"));
    EXPECT_FALSE(format::parse_segment_file_name("99999999999999999999.log"));  // > 2^64
    EXPECT_FALSE(format::parse_journal_file_name("00000000000000000003.journal.tmp"));
    EXPECT_FALSE(format::parse_stream_dir_name("0000000000000ABC"));
}

}  // namespace
}  // namespace nereus::storage
