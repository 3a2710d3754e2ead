#pragma once

// wake_batch: one wake-up per target for a burst of completions run on one thread.
//
// A storage committer finishes a whole group (up to a window of appends) in one loop. Each
// completion hands its result to an io thread, and a post to an idle io thread is a wake-up
// (eventfd or futex write, then a context switch). The receivers coalesce their posts with a
// "posted" flag, but the flag is cleared when the posted handler starts, so while the committer
// is still completing the group the io thread woke for, it is woken again, several times per
// group. Inside a wake_batch scope a completion registers its wake-up with defer() instead of
// posting at once; the scope's end runs each registered wake-up once (the receiver's flag keeps
// it to one registration per target and scope).
//
// Ownership: a wake_batch is a stack object on the completing thread; defer() keeps a
//   shared_ptr to its target until the wake-up has run.
// Thread-safety: thread-local; defer() registers with the calling thread's innermost scope.
// Durability: none of its own. It only moves a wake-up to the end of the scope: the
//   completions have already run (their results are handed over), only the notification that
//   there is something to take waits, for the rest of the scope's completions (microseconds).

#include "nereus/base/deferred_scope.h"

namespace nereus {

struct wake_batch_tag;
// Scopes, defer() and active(): deferred_scope.h.
using wake_batch = deferred_scope<wake_batch_tag>;

}  // namespace nereus
