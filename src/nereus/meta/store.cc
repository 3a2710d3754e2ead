#include "nereus/meta/store.h"

#include <utility>

namespace nereus::meta {
namespace {

// Adapts a one-op multi_result to the single-key cas_outcome.
store::callback<multi_result> to_cas_outcome(store::callback<cas_outcome> done) {
    return [done = std::move(done)](result<multi_result> r) {
        if (!r) {
            done(nereus::error(r.error()));
            return;
        }
        done(cas_outcome{.applied = r->applied,
                         .current = r->versions.empty() ? absent : r->versions.front()});
    };
}

}  // namespace

void store::create(std::string key,
                   std::string value,
                   session_id owner,
                   callback<cas_outcome> done) {
    std::vector<op> ops;
    ops.emplace_back(
        put{.key = std::move(key), .value = std::move(value), .expected = absent, .owner = owner});
    multi(std::move(ops), to_cas_outcome(std::move(done)));
}

void store::compare_and_set(std::string key,
                            version expected,
                            std::string value,
                            callback<cas_outcome> done) {
    std::vector<op> ops;
    ops.emplace_back(put{.key = std::move(key), .value = std::move(value), .expected = expected});
    multi(std::move(ops), to_cas_outcome(std::move(done)));
}

void store::remove(std::string key, version expected, callback<cas_outcome> done) {
    std::vector<op> ops;
    ops.emplace_back(erase{.key = std::move(key), .expected = expected});
    multi(std::move(ops), to_cas_outcome(std::move(done)));
}

}  // namespace nereus::meta
