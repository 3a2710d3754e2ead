#pragma once

// counting_store — forwards to another store and counts what is written: multis (one per
// cursor CAS), the value bytes of every put, and the value bytes of puts whose key contains a
// chosen substring (e.g. "/d/" for cursor delta records). For benchmarks and tests.
//
// Ownership: borrows `inner` (see forwarding_store).
// Thread-safety: thread-safe (atomic counters).

#include "nereus/meta/forwarding_store.h"

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

namespace nereus::meta {

class counting_store final : public forwarding_store {
public:
    // `tracked_substring`: puts whose key contains it are also counted in tracked_bytes()
    // ("" tracks nothing).
    explicit counting_store(store& inner, std::string tracked_substring = {})
        : forwarding_store(inner), tracked_(std::move(tracked_substring)) {}

    [[nodiscard]] std::uint64_t multis() const { return multis_.load(); }
    [[nodiscard]] std::uint64_t value_bytes() const { return value_bytes_.load(); }
    [[nodiscard]] std::uint64_t tracked_bytes() const { return tracked_bytes_.load(); }

    void multi(std::vector<op> ops, callback<multi_result> done) override {
        std::uint64_t n = 0;
        std::uint64_t t = 0;
        for (const auto& o : ops) {
            if (const auto* p = std::get_if<put>(&o)) {
                n += p->value.size();
                if (!tracked_.empty() && p->key.find(tracked_) != std::string::npos) {
                    t += p->value.size();
                }
            }
        }
        value_bytes_.fetch_add(n);
        tracked_bytes_.fetch_add(t);
        multis_.fetch_add(1);
        forwarding_store::multi(std::move(ops), std::move(done));
    }

private:
    std::string tracked_;
    std::atomic<std::uint64_t> multis_{0};
    std::atomic<std::uint64_t> value_bytes_{0};
    std::atomic<std::uint64_t> tracked_bytes_{0};
};

}  // namespace nereus::meta
