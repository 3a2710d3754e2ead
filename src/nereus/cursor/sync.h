#pragma once

// Blocking wrappers over the asynchronous cursor API, for tests and CLI tools. Each submits one
// request and waits for its completion.
//
// Thread-safety: thread-safe. Requires: never call from the metadata store's callback thread
// (the completion can only run there); this is asserted.
// Durability: as the wrapped call (cursor.h).

#include "nereus/base/result.h"
#include "nereus/cursor/cursor.h"

#include <memory>

namespace nereus::cursor {

[[nodiscard]] result<std::shared_ptr<cursor>> create_sync(const cursor_env& env,
                                                          const cursor_id& id,
                                                          initial_position where,
                                                          const cursor_options& options = {});
[[nodiscard]] result<std::shared_ptr<cursor>> open_sync(const cursor_env& env,
                                                        const cursor_id& id,
                                                        const cursor_options& options = {});

[[nodiscard]] result<op_result> ack_sync(cursor& c, fence f, offset entry);
[[nodiscard]] result<op_result> ack_batch_index_sync(cursor& c,
                                                     fence f,
                                                     offset entry,
                                                     batch_bits acked);
[[nodiscard]] result<op_result> ack_cumulative_sync(cursor& c,
                                                    fence f,
                                                    offset entry,
                                                    std::optional<std::uint32_t> batch_index = {},
                                                    std::uint32_t batch_size = 0,
                                                    property_map props = {});
[[nodiscard]] result<op_result> reset_sync(cursor& c, fence f, reset_target target);
[[nodiscard]] result<op_result> clear_backlog_sync(cursor& c, fence f);
[[nodiscard]] result<op_result> skip_sync(cursor& c, fence f, std::uint64_t n);
[[nodiscard]] result<op_result> set_properties_sync(cursor& c, fence f, property_map props);
[[nodiscard]] result<op_result> put_property_sync(cursor& c,
                                                  fence f,
                                                  std::string key,
                                                  std::string value);
[[nodiscard]] result<op_result> remove_property_sync(cursor& c, fence f, std::string key);
[[nodiscard]] result<op_result> activate_sync(cursor& c, fence f);
[[nodiscard]] result<op_result> remove_sync(cursor& c, fence f);
[[nodiscard]] result<op_result> flush_sync(cursor& c);
[[nodiscard]] result<op_result> close_sync(cursor& c);

}  // namespace nereus::cursor
