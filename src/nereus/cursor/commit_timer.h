#pragma once

// commit_timer — the process-wide timer thread of the cursor engine. It ends group-commit
// lingers (cursor.h): a handle that waits for its queue to refill schedules a wake-up here
// instead of blocking the metadata store's callback thread.
//
// Ownership: one lazily started thread per process, stopped and joined at static destruction
//   (tasks not yet due are dropped then).
// Thread-safety: thread-safe. Tasks run on the timer thread, one at a time, in deadline order,
//   never with the timer's lock held; a task may schedule another.

#include <chrono>
#include <functional>

namespace nereus::cursor::commit_timer {

using clock = std::chrono::steady_clock;

// Runs `task` on the timer thread at or soon after `at`.
void schedule(clock::time_point at, std::function<void()> task);

}  // namespace nereus::cursor::commit_timer
