#pragma once

// The raw group-commit fdatasync ceiling of a directory's file system, measured the way
// `nereus storage bench` measures its "raw" side (apps/nereus/storage_bench.cc, raw_writer): one
// thread writes G CRC32C-framed records (24-byte header + record) into a fresh file with one
// write and one fdatasync per group, back to back. G is the perf run's in-flight window, so the
// figure is what the disk allows for that record size and window with no network, no broker.
// raw_method::direct_prepared measures the other durable write Nereus's journal uses: each group
// one O_DSYNC direct write, padded to whole pages, into a file zero-filled beforehand (see the
// enum). Thread-safety: thread-safe (no shared state); blocks the calling thread for `seconds`.

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

enum class raw_method {
    // write + fdatasync appended to a growing file (the definition of the ceiling).
    append_fdatasync,
    // A 64 MiB file zero-filled and synced before the clock starts, then opened with
    // file_system::open_direct (O_DIRECT | O_DSYNC): one aligned write per group, padded to
    // kDirectIoAlign, durable when it returns, wrapping to offset 0 at the file's end. This is
    // the journal's write on a prepared file (doc/format/segment.md) without the zero-fill's
    // own cost, so an upper bound for it. Fails (EINVAL) where the file system has no direct
    // I/O (tmpfs).
    direct_prepared,
};

// Uses a fresh file in `dir` (created if missing, the file removed afterwards).
[[nodiscard]] result<raw_baseline> measure_raw_baseline(
    const std::string& dir,
    std::size_t record_bytes,
    std::uint32_t group,
    double seconds,
    raw_method method = raw_method::append_fdatasync);

}  // namespace nereus::app::perf
