#include "nereus/cursor/sync.h"

#include "nereus/base/assert.h"
#include "nereus/meta/store.h"

#include <future>
#include <utility>

namespace nereus::cursor {
namespace {

template <class T, class Submit>
result<T> wait_for(const cursor_env& env, Submit&& submit) {
    NEREUS_ASSERT(!env.meta->is_callback_thread(),
                  "blocking cursor call on the meta store's callback thread would deadlock");
    auto promise = std::make_shared<std::promise<result<T>>>();
    auto future = promise->get_future();
    std::forward<Submit>(submit)([promise](result<T> r) { promise->set_value(std::move(r)); });
    return future.get();
}

}  // namespace

result<std::shared_ptr<cursor>> create_sync(const cursor_env& env,
                                            const cursor_id& id,
                                            initial_position where,
                                            const cursor_options& options) {
    return wait_for<std::shared_ptr<cursor>>(
        env, [&](cursor::callback<std::shared_ptr<cursor>> cb) {
            cursor::create(env, id, where, options, std::move(cb));
        });
}

result<std::shared_ptr<cursor>> open_sync(const cursor_env& env,
                                          const cursor_id& id,
                                          const cursor_options& options) {
    return wait_for<std::shared_ptr<cursor>>(env,
                                             [&](cursor::callback<std::shared_ptr<cursor>> cb) {
                                                 cursor::open(env, id, options, std::move(cb));
                                             });
}

namespace {

template <class F>
result<op_result> block(cursor& c, F&& f) {
    NEREUS_ASSERT(!c.env().meta->is_callback_thread(),
                  "blocking cursor call on the meta store's callback thread would deadlock");
    auto promise = std::make_shared<std::promise<result<op_result>>>();
    auto future = promise->get_future();
    std::forward<F>(f)([promise](result<op_result> r) { promise->set_value(std::move(r)); });
    return future.get();
}

}  // namespace

result<op_result> ack_sync(cursor& c, fence f, offset entry) {
    return block(c, [&](cursor::op_callback cb) { c.ack(f, entry, std::move(cb)); });
}
result<op_result> ack_batch_index_sync(cursor& c, fence f, offset entry, batch_bits acked) {
    return block(c, [&](cursor::op_callback cb) {
        c.ack_batch_index(f, entry, std::move(acked), std::move(cb));
    });
}
result<op_result> ack_cumulative_sync(cursor& c,
                                      fence f,
                                      offset entry,
                                      std::optional<std::uint32_t> batch_index,
                                      std::uint32_t batch_size,
                                      property_map props) {
    return block(c, [&](cursor::op_callback cb) {
        c.ack_cumulative(f, entry, batch_index, batch_size, std::move(props), std::move(cb));
    });
}
result<op_result> reset_sync(cursor& c, fence f, reset_target target) {
    return block(c, [&](cursor::op_callback cb) { c.reset(f, target, std::move(cb)); });
}
result<op_result> clear_backlog_sync(cursor& c, fence f) {
    return block(c, [&](cursor::op_callback cb) { c.clear_backlog(f, std::move(cb)); });
}
result<op_result> skip_sync(cursor& c, fence f, std::uint64_t n) {
    return block(c, [&](cursor::op_callback cb) { c.skip(f, n, std::move(cb)); });
}
result<op_result> set_properties_sync(cursor& c, fence f, property_map props) {
    return block(
        c, [&](cursor::op_callback cb) { c.set_properties(f, std::move(props), std::move(cb)); });
}
result<op_result> put_property_sync(cursor& c, fence f, std::string key, std::string value) {
    return block(c, [&](cursor::op_callback cb) {
        c.put_property(f, std::move(key), std::move(value), std::move(cb));
    });
}
result<op_result> remove_property_sync(cursor& c, fence f, std::string key) {
    return block(
        c, [&](cursor::op_callback cb) { c.remove_property(f, std::move(key), std::move(cb)); });
}
result<op_result> activate_sync(cursor& c, fence f) {
    return block(c, [&](cursor::op_callback cb) { c.activate(f, std::move(cb)); });
}
result<op_result> remove_sync(cursor& c, fence f) {
    return block(c, [&](cursor::op_callback cb) { c.remove(f, std::move(cb)); });
}
result<op_result> flush_sync(cursor& c) {
    return block(c, [&](cursor::op_callback cb) { c.flush(std::move(cb)); });
}
result<op_result> close_sync(cursor& c) {
    return block(c, [&](cursor::op_callback cb) { c.close(std::move(cb)); });
}

}  // namespace nereus::cursor
