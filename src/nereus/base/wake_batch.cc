#include "nereus/base/wake_batch.h"

#include <utility>
#include <vector>

namespace nereus {

namespace {

struct entry {
    std::shared_ptr<void> target;
    wake_batch::wake_fn fn = nullptr;
};

thread_local wake_batch* current = nullptr;
// Every scope's entries on this thread (capacity reused across scopes).
thread_local std::vector<entry> entries;

}  // namespace

wake_batch::wake_batch() noexcept : prev_(current), begin_(entries.size()) {
    current = this;
}

wake_batch::~wake_batch() {
    current = prev_;
    // A wake-up that defers again registers with the enclosing scope (after this scope's
    // entries) or runs at once: index loop, the list may grow meanwhile.
    const std::size_t end = entries.size();
    for (std::size_t i = begin_; i < end; ++i) {
        entry e = std::move(entries[i]);
        e.fn(e.target.get());
    }
    entries.erase(entries.begin() + static_cast<std::ptrdiff_t>(begin_),
                  entries.begin() + static_cast<std::ptrdiff_t>(end));
}

bool wake_batch::defer(std::shared_ptr<void> target, wake_fn fn) {
    if (current == nullptr) {
        return false;
    }
    entries.push_back({std::move(target), fn});
    return true;
}

}  // namespace nereus
