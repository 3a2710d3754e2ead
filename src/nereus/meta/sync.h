#pragma once

// Blocking wrappers over the asynchronous store API, for tests and CLI tools.
//
// Each submits one request and waits for its completion with a std::promise.
// Thread-safety: thread-safe. Requires: never call from the store's callback thread (that would
// wait for a completion that can only run on the waiting thread); this is asserted.
// Durability: as the wrapped call (see store.h).

#include "nereus/base/result.h"
#include "nereus/meta/store.h"

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace nereus::meta {

[[nodiscard]] result<multi_result> multi_sync(store& s, std::vector<op> ops);
[[nodiscard]] result<std::optional<record>> get_sync(store& s, std::string key);
[[nodiscard]] result<std::vector<keyed_record>> list_sync(store& s, std::string prefix);
[[nodiscard]] result<cas_outcome> create_sync(store& s,
                                              std::string key,
                                              std::string value,
                                              session_id owner = no_session);
[[nodiscard]] result<cas_outcome> cas_sync(store& s,
                                           std::string key,
                                           version expected,
                                           std::string value);
[[nodiscard]] result<cas_outcome> remove_sync(store& s, std::string key, version expected);
[[nodiscard]] result<session_id> open_session_sync(store& s, std::chrono::milliseconds ttl);
[[nodiscard]] result<void> keep_alive_sync(store& s, session_id session);
[[nodiscard]] result<void> close_session_sync(store& s, session_id session);

}  // namespace nereus::meta
