#pragma once

// snapshot_guard — the process-wide set of snapshot objects whose root CAS may still be in
// flight. A snapshot is protected from before its put until its CAS has resolved either way
// (an unknown outcome is first resolved by re-reading the root); garbage collection never
// removes a protected snapshot, even one that looks orphaned because the root does not
// reference it yet. Process-wide because two handles of one cursor may live in one process.
//
// Thread-safety: thread-safe (one mutex). Durability: none; after a crash no CAS of this
// process is in flight, and a superseded owner's late CAS is fenced by its session.

#include <string>
#include <string_view>

namespace nereus::cursor::snapshot_guard {

void protect(const std::string& name);
void release(const std::string& name);
[[nodiscard]] bool is_protected(std::string_view name);

}  // namespace nereus::cursor::snapshot_guard
