#pragma once

// scan_segment: reads a segment file front to back, validating every record (length, offset
// sequence, CRC32C), and builds its sparse index. Used by recovery (active segment), by the first
// read of a sealed segment, and by verify(). Never modifies the file.
//
// Thread-safety: thread-safe (no shared state); the file must not shrink during the scan.

#include "nereus/base/file_system.h"
#include "nereus/base/result.h"
#include "nereus/storage/format.h"
#include "nereus/storage/segment_index.h"

#include <cstdint>

namespace nereus::storage {

struct segment_scan {
    std::uint64_t file_bytes = 0;   // bytes scanned (the file size, or the limit)
    std::uint64_t valid_bytes = 0;  // end of the valid record prefix
    std::uint64_t end_offset = 0;   // offset after the last valid record
    std::uint64_t records = 0;
    format::defect defect = format::defect::none;  // why the record at valid_bytes is invalid
    sparse_index index;

    [[nodiscard]] bool clean() const { return defect == format::defect::none; }
};

// Scans records of a segment whose first record has offset `base`, up to `limit` bytes
// (UINT64_MAX = the whole file), starting at byte `start_pos` where offset `start_offset`
// begins (a record boundary; 0 and `base` for the whole segment). I/O errors are returned;
// invalid records are reported in the result, never as an error. Requires: the file holds at
// least `start_pos` bytes.
[[nodiscard]] result<segment_scan> scan_segment(file& f,
                                                std::uint64_t base,
                                                std::uint64_t index_interval,
                                                std::uint64_t limit = UINT64_MAX,
                                                std::uint64_t start_pos = 0,
                                                std::uint64_t start_offset = UINT64_MAX);

}  // namespace nereus::storage
