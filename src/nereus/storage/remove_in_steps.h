#pragma once

// Removing a large file without stalling the journal's commits.
//
// ext4 frees a file's blocks at its unlink in one go, and a concurrent O_DSYNC write of another
// file waits behind it: measured on this machine, unlinking a 64 MiB file held 5,000/s direct
// 4 KiB writes for 22-25 ms (their max; 1.7-4 ms with no unlink), and 1.7-3.2 ms when the file
// was first cut from its end in 1 MiB steps, for the same total time (doc/perf.md, "Short
// bursts, partial spares and the unlink stall").

#include "nereus/base/file_system.h"
#include "nereus/base/result.h"

#include <cstdint>
#include <string>

namespace nereus::storage {

inline constexpr std::uint64_t kRemoveStepBytes = 1ULL << 20;

// Cuts `path` from its end in kRemoveStepBytes steps (ftruncate), then removes it. Only for a
// file that nothing reads any more, nor has open: unlike an unlink, the cuts change what an
// open descriptor reads. A failure or crash part way leaves it shorter, never synced, and still
// named `path` (the caller's recovery must treat it as garbage). Not durable: the caller syncs
// the directory if the removal must be. Thread-safe as `fs` is.
//
// Used for journal files behind a durable checkpoint (only recovery reads journal files), for
// segments removed by a trim (renamed out of the segment names first) and for a deleted
// stream's files (after its tombstone is durable). A reader that held one of those open and
// reads it short answers errc::trimmed or errc::unknown_stream, not corruption
// (journaled_store::removed_since).
[[nodiscard]] result<void> remove_in_steps(file_system& fs, const std::string& path);

}  // namespace nereus::storage
