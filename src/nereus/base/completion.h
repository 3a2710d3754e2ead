#pragma once

// inline_completion<void(Args...), N>: a move-only, call-once callback with N bytes of inline
// storage.
//
// The hot paths pass one of these instead of std::function (whose small buffer is 16 bytes, so
// every capture of two shared_ptrs allocated): a callable of up to N bytes (alignment <= 8) is
// placed inline and wrapping it never allocates (style R7: no per-message allocation). Layers
// nest: an inline_completion<.., 48> (56 bytes) captured by a lambda fits an
// inline_completion<.., 56 + the lambda's other captures>. A larger or over-aligned callable is
// still accepted (cold paths, tests) but is boxed on the heap; hot paths static_assert
// `fits_inline<F>` so that never happens there silently.
// Hot paths that nest completions (connection -> topic -> ledger -> store) move each one a
// few times per message, and a move is an indirect call that moves every nested layer in turn.
// A callable the caller declares relocatable (`relocatable_if(yes)`: its captures are raw or
// smart pointers, integers and completions that are themselves relocatable(), none pointing
// into the callable) is moved by copying its N bytes instead: no indirect call, however deep
// the nesting.
// Ownership: owns its callable; moved-from and invoked completions are empty.
// Thread-safety: thread-compatible (one owner at a time; hand it over by moving).

#include <cstddef>
#include <cstring>
#include <memory>
#include <new>
#include <type_traits>
#include <utility>

namespace nereus {

// The tag of inline_completion's relocatable constructor: relocatable_if{yes}.
struct relocatable_if {
    bool yes = false;
};

template <class Sig, std::size_t N>
class inline_completion;

template <class... Args, std::size_t N>
class inline_completion<void(Args...), N> {
public:
    static constexpr std::size_t kInlineBytes = N;
    static constexpr std::size_t kAlign = alignof(void*);

    template <class F>
    static constexpr bool fits_inline =
        sizeof(F) <= N && alignof(F) <= kAlign&& std::is_nothrow_move_constructible_v<F>;

    inline_completion() = default;
    // Implicit, so a lambda converts at the call site. Constrained to callables other than
    // this completion type itself, so it never hides the move constructor.
    template <class F>
    requires(!std::is_same_v<std::decay_t<F>, inline_completion> &&
             std::is_invocable_v<std::decay_t<F>&, Args...>)
        inline_completion(F&& f) {  // NOLINT(bugprone-forwarding-reference-overload)
        using fn = std::decay_t<F>;
        if constexpr (fits_inline<fn>) {
            ::new (static_cast<void*>(storage_)) fn(std::forward<F>(f));
            ops_ = &inline_ops<fn>;
        } else {
            using box = std::unique_ptr<fn>;
            ::new (static_cast<void*>(storage_)) box(std::make_unique<fn>(std::forward<F>(f)));
            ops_ = &boxed_ops<fn>;
        }
    }
    // As above; when `r.yes`, the caller promises that F may be relocated by copying its bytes
    // (see the file comment), and moves of this completion do so. Requires: F fits inline.
    template <class F>
    requires(!std::is_same_v<std::decay_t<F>, inline_completion> &&
             std::is_invocable_v<std::decay_t<F>&, Args...>)
        inline_completion(relocatable_if r, F&& f) {
        using fn = std::decay_t<F>;
        static_assert(fits_inline<fn>, "a relocatable completion is stored inline");
        ::new (static_cast<void*>(storage_)) fn(std::forward<F>(f));
        ops_ = r.yes ? &relocatable_ops<fn> : &inline_ops<fn>;
    }
    inline_completion(inline_completion&& o) noexcept { move_from(o); }
    inline_completion& operator=(inline_completion&& o) noexcept {
        if (this != &o) {
            reset();
            move_from(o);
        }
        return *this;
    }
    inline_completion(const inline_completion&) = delete;
    inline_completion& operator=(const inline_completion&) = delete;
    ~inline_completion() { reset(); }

    explicit operator bool() const { return ops_ != nullptr; }
    // Whether moving this completion copies its bytes (empty, or built relocatable_if{true}):
    // a callable that captures it may then be declared relocatable too.
    [[nodiscard]] bool relocatable() const { return ops_ == nullptr || ops_->move == nullptr; }

    // Invokes the callable (if any) once, then empties this object (the callable is destroyed
    // after it returns).
    void operator()(Args... args) {
        if (ops_ != nullptr) {
            ops_->invoke(storage_, std::forward<Args>(args)...);
            reset();
        }
    }

private:
    struct ops {
        void (*invoke)(void*, Args&&...);
        void (*move)(void* dst, void* src) noexcept;  // null: relocated by copying the bytes
        void (*destroy)(void*) noexcept;
    };
    template <class F>
    static constexpr ops inline_ops{
        [](void* p, Args&&... a) { (*static_cast<F*>(p))(std::forward<Args>(a)...); },
        [](void* dst, void* src) noexcept {
            ::new (dst) F(std::move(*static_cast<F*>(src)));
            static_cast<F*>(src)->~F();
        },
        [](void* p) noexcept { static_cast<F*>(p)->~F(); },
    };
    template <class F>
    static constexpr ops relocatable_ops{
        [](void* p, Args&&... a) { (*static_cast<F*>(p))(std::forward<Args>(a)...); },
        nullptr,
        [](void* p) noexcept { static_cast<F*>(p)->~F(); },
    };
    template <class F>
    static constexpr ops boxed_ops{
        [](void* p, Args&&... a) {
            (**static_cast<std::unique_ptr<F>*>(p))(std::forward<Args>(a)...);
        },
        [](void* dst, void* src) noexcept {
            auto* s = static_cast<std::unique_ptr<F>*>(src);
            ::new (dst) std::unique_ptr<F>(std::move(*s));
            s->~unique_ptr();
        },
        [](void* p) noexcept { static_cast<std::unique_ptr<F>*>(p)->~unique_ptr(); },
    };

    void reset() noexcept {
        if (ops_ != nullptr) {
            ops_->destroy(storage_);
            ops_ = nullptr;
        }
    }
    void move_from(inline_completion& o) noexcept {
        if (o.ops_ != nullptr) {
            if (o.ops_->move == nullptr) {
                std::memcpy(storage_, o.storage_, N);  // relocatable: the source is not destroyed
            } else {
                o.ops_->move(storage_, o.storage_);
            }
            ops_ = o.ops_;
            o.ops_ = nullptr;
        }
    }

    static_assert(N >= sizeof(void*), "completion: room for at least the heap box");
    // Left uninitialised on purpose: only the callable placed in it is ever read.
    alignas(kAlign) std::byte storage_[N];  // NOLINT
    const ops* ops_ = nullptr;
};

}  // namespace nereus
