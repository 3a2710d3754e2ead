#include "nereus/base/flush_batch.h"

#include <utility>
#include <vector>

namespace nereus {

namespace {

struct entry {
    std::shared_ptr<void> target;
    flush_batch::flush_fn fn = nullptr;
};

thread_local flush_batch* current = nullptr;
// Every scope's entries on this thread (capacity reused across scopes).
thread_local std::vector<entry> entries;

}  // namespace

flush_batch::flush_batch() noexcept : prev_(current), begin_(entries.size()) {
    current = this;
}

flush_batch::~flush_batch() {
    current = prev_;
    // Index loop: a function that defers again appends to the list (the enclosing scope's).
    const std::size_t end = entries.size();
    for (std::size_t i = begin_; i < end; ++i) {
        entry e = std::move(entries[i]);
        e.fn(e.target.get());
    }
    entries.erase(entries.begin() + static_cast<std::ptrdiff_t>(begin_),
                  entries.begin() + static_cast<std::ptrdiff_t>(end));
}

bool flush_batch::defer(std::shared_ptr<void> target, flush_fn fn) {
    if (current == nullptr) {
        return false;
    }
    entries.push_back({std::move(target), fn});
    return true;
}

bool flush_batch::active() noexcept {
    return current != nullptr;
}

}  // namespace nereus
