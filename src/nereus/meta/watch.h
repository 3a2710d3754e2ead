#pragma once

// Watch events and the RAII handle that keeps a watch registered.
//
// Ownership: a watch_handle owns one registration; destroying it (or cancel()) unregisters.
// Thread-safety: a handle is thread-compatible. cancel() may run on any thread, including inside
// the watch's own callback; once it returns the callback is not invoked again. cancel() waits
// for a callback that is running on the store's thread, so do not cancel while holding a lock
// that a callback needs.
// Durability: events report changes that are already durable (for durable backends).

#include "nereus/base/result.h"
#include "nereus/meta/types.h"

#include <cstdint>
#include <functional>
#include <string>
#include <utility>

namespace nereus::meta {

enum class event_kind : std::uint8_t { put, erase };

struct watch_event {
    std::string key;
    event_kind kind = event_kind::put;
    // put: the key's new version. erase: the revision at which it was erased.
    version ver = absent;

    friend bool operator==(const watch_event&, const watch_event&) = default;
};

// Receives events in commit order, or one final error (errc::closed, errc::store_failed, or for a
// remote store errc::unavailable when events may have been missed: re-list). No call follows an
// error.
using watch_callback = std::function<void(const result<watch_event>&)>;

class watch_handle {
public:
    watch_handle() = default;
    explicit watch_handle(std::function<void()> cancel) : cancel_(std::move(cancel)) {}
    watch_handle(const watch_handle&) = delete;
    watch_handle& operator=(const watch_handle&) = delete;
    watch_handle(watch_handle&& other) noexcept : cancel_(std::exchange(other.cancel_, {})) {}
    watch_handle& operator=(watch_handle&& other) noexcept {
        if (this != &other) {
            cancel();
            cancel_ = std::exchange(other.cancel_, {});
        }
        return *this;
    }
    ~watch_handle() { cancel(); }

    // Unregisters the watch. Idempotent.
    void cancel() {
        if (auto c = std::exchange(cancel_, {})) {
            c();
        }
    }
    bool active() const noexcept { return static_cast<bool>(cancel_); }

private:
    std::function<void()> cancel_;
};

}  // namespace nereus::meta
