#include "nereus/cursor/snapshot_guard.h"

#include <mutex>
#include <set>

namespace nereus::cursor::snapshot_guard {
namespace {

struct registry {
    std::mutex mu;
    std::multiset<std::string, std::less<>> names;
};

registry& instance() {
    static registry r;
    return r;
}

}  // namespace

void protect(const std::string& name) {
    auto& r = instance();
    const std::lock_guard lock(r.mu);
    r.names.insert(name);
}

void release(const std::string& name) {
    auto& r = instance();
    const std::lock_guard lock(r.mu);
    if (auto it = r.names.find(name); it != r.names.end()) {
        r.names.erase(it);
    }
}

bool is_protected(std::string_view name) {
    auto& r = instance();
    const std::lock_guard lock(r.mu);
    return r.names.find(name) != r.names.end();
}

}  // namespace nereus::cursor::snapshot_guard
