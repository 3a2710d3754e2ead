#include "nereus/storage/segment_scan.h"

#include <algorithm>
#include <vector>

namespace nereus::storage {

result<segment_scan> scan_segment(file& f,
                                  std::uint64_t base,
                                  std::uint64_t index_interval,
                                  std::uint64_t limit,
                                  std::uint64_t start_pos,
                                  std::uint64_t start_offset) {
    auto size = f.size();
    if (!size) {
        return error(size.error());
    }
    segment_scan s;
    s.file_bytes = std::min(*size, limit);
    s.end_offset = start_offset == UINT64_MAX ? base : start_offset;
    s.valid_bytes = start_pos;

    constexpr std::size_t kChunk = 1U << 20;
    std::vector<std::byte> buf;
    std::uint64_t buf_pos = 0;  // file position of buf[0]
    // Makes [pos, pos + n) available in buf; false if the scanned range ends first.
    auto ensure = [&](std::uint64_t pos, std::uint64_t n) -> result<bool> {
        if (pos + n > s.file_bytes) {
            return false;
        }
        if (pos >= buf_pos && pos + n <= buf_pos + buf.size()) {
            return true;
        }
        const std::uint64_t want =
            std::min<std::uint64_t>(std::max<std::uint64_t>(n, kChunk), s.file_bytes - pos);
        buf.resize(want);
        buf_pos = pos;
        auto r = f.read_at(pos, buf);
        if (!r) {
            return error(r.error());
        }
        buf.resize(*r);
        return *r >= n;
    };

    std::uint64_t pos = start_pos;
    while (pos < s.file_bytes) {
        auto have = ensure(pos, format::kRecordHeaderSize);
        if (!have) {
            return error(have.error());
        }
        if (!*have) {
            s.defect = format::defect::incomplete;
            break;
        }
        const std::byte* hp = buf.data() + (pos - buf_pos);
        const format::record_header h = format::decode_record_header(hp);
        if (h.len > format::kMaxPayloadBytes) {
            s.defect = format::defect::bad_length;
            break;
        }
        have = ensure(pos, format::kRecordHeaderSize + h.len);
        if (!have) {
            return error(have.error());
        }
        if (!*have) {
            s.defect = format::defect::incomplete;
            break;
        }
        hp = buf.data() + (pos - buf_pos);
        if (!format::record_crc_ok(hp, hp + format::kRecordHeaderSize, h.len)) {
            s.defect = format::defect::bad_crc;
            break;
        }
        if (h.offset != s.end_offset) {
            s.defect = format::defect::bad_offset;
            break;
        }
        s.index.observe(h.offset, pos, index_interval);
        pos += format::kRecordHeaderSize + h.len;
        ++s.end_offset;
        ++s.records;
        s.valid_bytes = pos;
    }
    return s;
}

}  // namespace nereus::storage
