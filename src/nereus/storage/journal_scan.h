#pragma once

// scan_journal_file: walks the commit blocks of one journal file, validating each (magic, length,
// CRC32C, record framing, sequence number), and hands every valid block to a callback. Stops at
// the first defect and says whether a valid block with the next sequence number follows it — the
// difference between a torn tail (nothing valid after it) and corruption. An all-zero remainder
// after the last valid block is the file's end, not a defect: journal files are prepared
// zero-filled (doc/format/segment.md, "Prepared journal files"). Never modifies the file.
//
// Thread-safety: thread-safe (no shared state).

#include "nereus/base/file_system.h"
#include "nereus/base/result.h"
#include "nereus/storage/format.h"

#include <cstdint>
#include <functional>
#include <optional>

namespace nereus::storage {

struct journal_defect {
    std::uint64_t pos = 0;  // byte position of the bad block
    format::defect what = format::defect::none;
    bool followed_by_valid = false;  // a valid block with the next seq comes after it
};

struct journal_file_scan {
    std::uint64_t file_bytes = 0;
    std::uint64_t end_pos = 0;   // end of the last valid block (the defect's position if any)
    std::uint64_t blocks = 0;    // valid blocks seen
    std::uint64_t next_seq = 0;  // seq the next block must have (0 = unknown)
    // [end_pos, file_bytes) is all zero (the unused part of a prepared file); no defect then.
    bool zero_tail = false;
    std::optional<journal_defect> defect;
};

using block_fn = std::function<result<void>(std::uint64_t pos, bytes_view block)>;

// Scans from byte `start` (a block boundary). `expected_seq` is the seq of the first block
// (0 = accept any). `limit`: treat the file as ending there (a second pass over a file whose
// end an earlier scan found, so its zero tail is not read again). Errors: I/O errors, and
// errors returned by `fn` (which stop the scan).
[[nodiscard]] result<journal_file_scan> scan_journal_file(file& f,
                                                          std::uint64_t start,
                                                          std::uint64_t expected_seq,
                                                          const block_fn& fn,
                                                          std::uint64_t limit = UINT64_MAX);

// True if [pos, end) of `f` is all zero bytes. Reads in 1 MiB chunks (I/O errors are errors).
[[nodiscard]] result<bool> all_zero(file& f, std::uint64_t pos, std::uint64_t end);

}  // namespace nereus::storage
