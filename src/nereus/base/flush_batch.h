#pragma once

// flush_batch: work deferred to the end of an io thread's read batch.
//
// A broker io thread decodes every complete frame of one socket read, then reads again. Work
// a frame starts but that is cheaper done once for the whole batch registers here; the scope's
// end runs it. The storage store uses it for its leader commit (storage/journaled_store.h): at
// low rates, the io thread that appended the batch's records writes the group itself at the
// end of the batch instead of waking the committer thread (and being woken again for the
// completions).
//
// A scope must not span a suspension point (co_await): other work on the thread would register
// with it. Close it (destroy it) before suspending.
//
// Ownership: a flush_batch is a stack (or optional<>) object on the io thread; defer() keeps a
//   shared_ptr to its target until its function has run.
// Thread-safety: thread-local; defer() registers with the calling thread's innermost scope.
// Durability: none of its own.

#include "nereus/base/deferred_scope.h"

namespace nereus {

struct flush_batch_tag;
// Scopes, defer() and active(): deferred_scope.h.
using flush_batch = deferred_scope<flush_batch_tag>;

}  // namespace nereus
