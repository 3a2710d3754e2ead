#include "nereus/meta/sync.h"

#include "nereus/base/assert.h"

#include <future>
#include <memory>
#include <utility>

namespace nereus::meta {
namespace {

// Calls `submit(callback)` and blocks until the callback has delivered its result.
template <class T, class Submit>
result<T> wait_for(store& s, Submit&& submit) {
    NEREUS_ASSERT(!s.is_callback_thread(),
                  "blocking meta::store call on the store's own callback thread would deadlock");
    auto promise = std::make_shared<std::promise<result<T>>>();
    auto future = promise->get_future();
    std::forward<Submit>(submit)(
        [promise](result<T> r) mutable { promise->set_value(std::move(r)); });
    return future.get();
}

}  // namespace

result<multi_result> multi_sync(store& s, std::vector<op> ops) {
    return wait_for<multi_result>(
        s, [&](store::callback<multi_result> cb) { s.multi(std::move(ops), std::move(cb)); });
}

result<std::optional<record>> get_sync(store& s, std::string key) {
    return wait_for<std::optional<record>>(s, [&](store::callback<std::optional<record>> cb) {
        s.get(std::move(key), std::move(cb));
    });
}

result<std::vector<keyed_record>> list_sync(store& s, std::string prefix) {
    return wait_for<std::vector<keyed_record>>(s,
                                               [&](store::callback<std::vector<keyed_record>> cb) {
                                                   s.list(std::move(prefix), std::move(cb));
                                               });
}

result<cas_outcome> create_sync(store& s, std::string key, std::string value, session_id owner) {
    return wait_for<cas_outcome>(s, [&](store::callback<cas_outcome> cb) {
        s.create(std::move(key), std::move(value), owner, std::move(cb));
    });
}

result<cas_outcome> cas_sync(store& s, std::string key, version expected, std::string value) {
    return wait_for<cas_outcome>(s, [&](store::callback<cas_outcome> cb) {
        s.compare_and_set(std::move(key), expected, std::move(value), std::move(cb));
    });
}

result<cas_outcome> remove_sync(store& s, std::string key, version expected) {
    return wait_for<cas_outcome>(s, [&](store::callback<cas_outcome> cb) {
        s.remove(std::move(key), expected, std::move(cb));
    });
}

result<session_id> open_session_sync(store& s, std::chrono::milliseconds ttl) {
    return wait_for<session_id>(
        s, [&](store::callback<session_id> cb) { s.open_session(ttl, std::move(cb)); });
}

result<void> keep_alive_sync(store& s, session_id session) {
    return wait_for<void>(s,
                          [&](store::callback<void> cb) { s.keep_alive(session, std::move(cb)); });
}

result<void> close_session_sync(store& s, session_id session) {
    return wait_for<void>(
        s, [&](store::callback<void> cb) { s.close_session(session, std::move(cb)); });
}

}  // namespace nereus::meta
