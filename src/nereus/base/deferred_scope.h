#pragma once

// deferred_scope<Tag>: a thread's stack of scopes that collect work and run it once, at the
// scope's end. wake_batch.h (one wake-up per target for a burst of completions) and
// flush_batch.h (work deferred to the end of an io thread's read batch) are its two uses; each
// Tag has its own thread-local stack, so their scopes never see each other's work.
//
// Ownership: a scope is a stack (or optional<>) object on its thread; defer() keeps a
//   shared_ptr to its target until its function has run.
// Thread-safety: thread-local; defer() registers with the calling thread's innermost scope of
//   the same Tag.
// Durability: none of its own.
// Allocation: none per defer() once the thread's list has grown to its largest scope.

#include <cstddef>
#include <memory>
#include <utility>
#include <vector>

namespace nereus {

template <class Tag>
class deferred_scope {
public:
    using fn_type = void (*)(void* target);

    // Becomes the calling thread's current scope (scopes nest).
    [[gnu::noinline]] deferred_scope() noexcept : prev_(current_), begin_(entries_.size()) {
        current_ = this;
    }

    // Leaves the thread's scope stack first, then runs every function registered in this
    // scope, in registration order. A function that defers again registers with the enclosing
    // scope (after this scope's entries) or is told there is none: an index loop, as the list
    // may grow meanwhile. Out of line (as the constructor): inlined into an optional<> scope,
    // g++ 12 warns that prev_ may be used uninitialized.
    [[gnu::noinline]] ~deferred_scope() {
        current_ = prev_;
        const std::size_t end = entries_.size();
        for (std::size_t i = begin_; i < end; ++i) {
            entry e = std::move(entries_[i]);
            e.fn(e.target.get());
        }
        entries_.erase(entries_.begin() + static_cast<std::ptrdiff_t>(begin_),
                       entries_.begin() + static_cast<std::ptrdiff_t>(end));
    }

    deferred_scope(const deferred_scope&) = delete;
    deferred_scope& operator=(const deferred_scope&) = delete;
    deferred_scope(deferred_scope&&) = delete;
    deferred_scope& operator=(deferred_scope&&) = delete;

    // In a scope on this thread: fn(target.get()) runs at the scope's end; returns true.
    // Outside any scope: returns false and registers nothing (the caller does the work now).
    static bool defer(std::shared_ptr<void> target, fn_type fn) {
        if (current_ == nullptr) {
            return false;
        }
        entries_.push_back({std::move(target), fn});
        return true;
    }

    // Whether the calling thread is inside a scope of this Tag.
    static bool active() noexcept { return current_ != nullptr; }

private:
    struct entry {
        std::shared_ptr<void> target;
        fn_type fn = nullptr;
    };

    static inline thread_local deferred_scope* current_ = nullptr;
    // Every scope's entries on this thread (capacity reused across scopes).
    static inline thread_local std::vector<entry> entries_;

    deferred_scope* prev_;
    std::size_t begin_;  // this scope's first entry in the thread's list
};

}  // namespace nereus
