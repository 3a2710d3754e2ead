// Property tests (rapidcheck) of the validating readers: whatever the damage, the journal scanner
// tells a torn tail from corruption, and the segment scanner stops exactly at the damaged record.

#include "nereus/base/crc32c.h"
#include "nereus/base/fault_file_system.h"
#include "nereus/storage/format.h"
#include "nereus/storage/journal_scan.h"
#include "nereus/storage/segment_scan.h"

#include <gtest/gtest.h>

#include <rapidcheck.h>
#include <rapidcheck/gtest.h>
#include <vector>

namespace nereus::storage {
namespace {

std::vector<std::byte> record(std::uint64_t offset, std::size_t len, std::uint8_t fill) {
    std::vector<std::byte> r(format::kRecordHeaderSize + len, std::byte{fill});
    format::finish_record_header(r.data(), crc32c::value(r.data() + format::kRecordHeaderSize, len),
                                 static_cast<std::uint32_t>(len), offset);
    return r;
}

// Blocks of `sizes[i]` records each, sequence numbers from `first_seq`; returns the file bytes
// and each block's start.
std::pair<std::vector<std::byte>, std::vector<std::size_t>> journal(
    const std::vector<std::vector<std::size_t>>& sizes, std::uint64_t first_seq) {
    std::vector<std::byte> file;
    std::vector<std::size_t> starts;
    std::uint64_t off = 0;
    for (std::size_t b = 0; b < sizes.size(); ++b) {
        std::vector<std::byte> block(format::kBlockHeaderSize);
        for (const std::size_t len : sizes[b]) {
            const std::size_t at = block.size();
            block.resize(at + format::kJournalRecordPrefix);
            format::put_u64(block.data() + at, 7);
            const auto r = record(off++, len, static_cast<std::uint8_t>(b));
            block.insert(block.end(), r.begin(), r.end());
        }
        format::finish_block(block, first_seq + b, static_cast<std::uint32_t>(sizes[b].size()));
        starts.push_back(file.size());
        file.insert(file.end(), block.begin(), block.end());
    }
    return {file, starts};
}

std::unique_ptr<file> make_file(fault_file_system& fs, const std::vector<std::byte>& bytes) {
    auto f = fs.open("/f", open_mode::create);
    RC_ASSERT(f.has_value());
    RC_ASSERT((*f)->truncate(0).has_value());
    RC_ASSERT((*f)->write_at(0, bytes).has_value());
    return std::move(*f);
}

auto gen_blocks() {
    return rc::gen::resize(
        8, rc::gen::nonEmpty(rc::gen::container<std::vector<std::vector<std::size_t>>>(
               rc::gen::nonEmpty(rc::gen::container<std::vector<std::size_t>>(
                   rc::gen::inRange<std::size_t>(0, 300))))));
}

RC_GTEST_PROP(ScanProperty, TruncatedLastBlockIsATornTail, ()) {
    const auto sizes = *gen_blocks();
    const std::uint64_t first_seq = *rc::gen::inRange<std::uint64_t>(1, 1000);
    auto [bytes, starts] = journal(sizes, first_seq);
    const std::size_t last = starts.back();
    const std::size_t cut = *rc::gen::inRange<std::size_t>(last + 1, bytes.size());
    bytes.resize(cut);
    fault_file_system fs;
    auto f = make_file(fs, bytes);
    std::size_t delivered = 0;
    auto s = scan_journal_file(*f, 0, first_seq, [&](std::uint64_t pos, bytes_view) {
        RC_ASSERT(pos == starts[delivered]);
        ++delivered;
        return result<void>{};
    });
    RC_ASSERT(s.has_value());
    RC_ASSERT(delivered == starts.size() - 1);
    RC_ASSERT(s->defect.has_value());
    RC_ASSERT(s->defect->pos == last);
    RC_ASSERT(!s->defect->followed_by_valid);
}

RC_GTEST_PROP(ScanProperty, DamageBeforeTheLastBlockIsCorruption, ()) {
    auto sizes = *gen_blocks();
    sizes.push_back({5});  // at least two blocks
    const std::uint64_t first_seq = *rc::gen::inRange<std::uint64_t>(1, 1000);
    auto [bytes, starts] = journal(sizes, first_seq);
    const std::size_t victim = *rc::gen::inRange<std::size_t>(0, starts.size() - 1);
    const std::size_t pos = *rc::gen::inRange<std::size_t>(starts[victim], starts[victim + 1]);
    const auto flip = static_cast<std::byte>(*rc::gen::inRange<int>(1, 256));
    bytes[pos] ^= flip;
    fault_file_system fs;
    auto f = make_file(fs, bytes);
    auto s = scan_journal_file(*f, 0, first_seq, nullptr);
    RC_ASSERT(s.has_value());
    RC_ASSERT(s->defect.has_value());
    RC_ASSERT(s->defect->pos == starts[victim]);
    RC_ASSERT(s->defect->followed_by_valid);
}

RC_GTEST_PROP(ScanProperty, SegmentScanStopsAtTheDamagedRecord, ()) {
    const auto lens = *rc::gen::nonEmpty(
        rc::gen::container<std::vector<std::size_t>>(rc::gen::inRange<std::size_t>(0, 200)));
    const std::uint64_t base = *rc::gen::inRange<std::uint64_t>(0, 1U << 20);
    std::vector<std::byte> bytes;
    std::vector<std::size_t> starts;
    for (std::size_t i = 0; i < lens.size(); ++i) {
        starts.push_back(bytes.size());
        const auto r = record(base + i, lens[i], static_cast<std::uint8_t>(i));
        bytes.insert(bytes.end(), r.begin(), r.end());
    }
    const std::size_t pos = *rc::gen::inRange<std::size_t>(0, bytes.size());
    bytes[pos] ^= static_cast<std::byte>(*rc::gen::inRange<int>(1, 256));
    const std::size_t damaged =
        static_cast<std::size_t>(std::upper_bound(starts.begin(), starts.end(), pos) -
                                 starts.begin()) -
        1;
    fault_file_system fs;
    auto f = make_file(fs, bytes);
    auto s = scan_segment(*f, base, 64);
    RC_ASSERT(s.has_value());
    RC_ASSERT(!s->clean());
    RC_ASSERT(s->valid_bytes == starts[damaged]);
    RC_ASSERT(s->end_offset == base + damaged);
    RC_ASSERT(s->records == damaged);
}

}  // namespace
}  // namespace nereus::storage
