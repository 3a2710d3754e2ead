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

#include <cstddef>
#include <memory>

namespace nereus {

class flush_batch {
public:
    using flush_fn = void (*)(void* target);

    // Becomes the calling thread's current scope (scopes nest).
    flush_batch() noexcept;
    // Leaves the thread's scope stack first, then runs every registered function in
    // registration order (a function that defers again registers with the enclosing scope, or
    // is told there is none).
    ~flush_batch();
    flush_batch(const flush_batch&) = delete;
    flush_batch& operator=(const flush_batch&) = delete;
    flush_batch(flush_batch&&) = delete;
    flush_batch& operator=(flush_batch&&) = delete;

    // In a scope on this thread: fn(target.get()) runs at the scope's end; returns true.
    // Outside any scope: returns false and registers nothing (the caller does the work now).
    static bool defer(std::shared_ptr<void> target, flush_fn fn);
    // Whether the calling thread is inside a scope.
    static bool active() noexcept;

private:
    flush_batch* prev_;
    std::size_t begin_;  // this scope's first entry in the thread's list
};

}  // namespace nereus
