#pragma once

// The raw group-commit fdatasync ceiling of a directory's file system, measured the way
// `nereus storage bench` measures its "raw" side (apps/nereus/storage_bench.cc, raw_writer): one
// thread writes G CRC32C-framed records (24-byte header + record) into a fresh file with one
// write and one fdatasync per group, back to back. G is the perf run's in-flight window, so the
// figure is what the disk allows for that record size and window with no network, no broker.
// Thread-safety: thread-safe (no shared state); blocks the calling thread for `seconds`.

#include "nereus/base/result.h"

#include <cstddef>
#include <cstdint>
#include <string>

namespace nereus::app::perf {

struct raw_baseline {
    double records_per_s = 0;
    double mb_per_s = 0;  // record payload bytes (10^6 B/s)
    double sync_p50_ms = 0;
    double sync_p99_ms = 0;
    std::uint64_t syncs = 0;
};

// Uses a fresh file in `dir` (created if missing, the file removed afterwards).
[[nodiscard]] result<raw_baseline> measure_raw_baseline(const std::string& dir,
                                                        std::size_t record_bytes,
                                                        std::uint32_t group,
                                                        double seconds);

}  // namespace nereus::app::perf
