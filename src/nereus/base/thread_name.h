#pragma once

// Names the calling thread, so `top -H`, `ps -L`, perf and gdb tell Nereus' threads apart
// (io threads, the committer, the blocking pool, the metadata store's threads...).
//
// Linux keeps at most 15 bytes of a thread name: longer names are cut to their first 15
// bytes. A failure to set the name is ignored (it is a diagnostic, nothing depends on it).
// Thread-safety: names the calling thread only; safe from any thread.

#include <string_view>

namespace nereus {

void set_thread_name(std::string_view name) noexcept;

}  // namespace nereus
