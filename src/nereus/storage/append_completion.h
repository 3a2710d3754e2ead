#pragma once

// append_completion: the callback an append fires once its entry is durable (or failed).
//
// A move-only callable with inline storage: wrapping a lambda never allocates, so enqueuing an
// append costs no heap allocation (style R7). Callables larger than kInlineBytes are rejected at
// compile time; capture a pointer to bigger state instead. 144 bytes hold the managed ledger's
// completion (its ledger, the broker's inline callback, publish time and size) without a heap
// context per append.
// Thread-safety: thread-compatible.

#include "nereus/base/result.h"
#include "nereus/storage/types.h"

#include <cstddef>
#include <new>
#include <type_traits>
#include <utility>

namespace nereus::storage {

class append_completion {
public:
    static constexpr std::size_t kInlineBytes = 144;

    append_completion() = default;
    // Implicit, so a lambda converts at the call site. Constrained to callables other than
    // append_completion itself, so it never hides the move constructor.
    template <class F>
    requires(!std::is_same_v<std::decay_t<F>, append_completion> &&
             std::is_invocable_v<std::decay_t<F>&, result<offset>>)
        append_completion(F&& f) {  // NOLINT(bugprone-forwarding-reference-overload)
        using fn = std::decay_t<F>;
        static_assert(sizeof(fn) <= kInlineBytes, "append_completion: callable too large");
        static_assert(alignof(fn) <= alignof(std::max_align_t), "append_completion: alignment");
        static_assert(std::is_nothrow_move_constructible_v<fn>, "needs a noexcept move");
        ::new (static_cast<void*>(storage_)) fn(std::forward<F>(f));
        ops_ = &ops_for<fn>;
    }
    append_completion(append_completion&& o) noexcept { move_from(o); }
    append_completion& operator=(append_completion&& o) noexcept {
        if (this != &o) {
            reset();
            move_from(o);
        }
        return *this;
    }
    append_completion(const append_completion&) = delete;
    append_completion& operator=(const append_completion&) = delete;
    ~append_completion() { reset(); }

    explicit operator bool() const { return ops_ != nullptr; }

    // Invokes the callable (if any) once and empties this object.
    void operator()(result<offset> r) {
        if (ops_ != nullptr) {
            ops_->invoke(storage_, r);
            reset();
        }
    }

private:
    struct ops {
        void (*invoke)(void*, result<offset>);
        void (*move)(void* dst, void* src) noexcept;
        void (*destroy)(void*) noexcept;
    };
    template <class F>
    static constexpr ops ops_for{
        [](void* p, result<offset> r) { (*static_cast<F*>(p))(r); },
        [](void* dst, void* src) noexcept {
            ::new (dst) F(std::move(*static_cast<F*>(src)));
            static_cast<F*>(src)->~F();
        },
        [](void* p) noexcept { static_cast<F*>(p)->~F(); },
    };

    void reset() noexcept {
        if (ops_ != nullptr) {
            ops_->destroy(storage_);
            ops_ = nullptr;
        }
    }
    void move_from(append_completion& o) noexcept {
        if (o.ops_ != nullptr) {
            o.ops_->move(storage_, o.storage_);
            ops_ = o.ops_;
            o.ops_ = nullptr;
        }
    }

    // Left uninitialised on purpose: only the callable placed in it is ever read.
    alignas(std::max_align_t) std::byte storage_[kInlineBytes];  // NOLINT
    const ops* ops_ = nullptr;
};

}  // namespace nereus::storage
