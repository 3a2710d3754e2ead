#pragma once

// completion<T>: a type-erased completion handler plus outstanding work on its executor, so
// that an application io_context awaiting a client operation does not run out of work, and so
// that the handler runs on its associated executor (completion.h rules). A handler without an
// executor of its own runs on the client's strand; no work is tracked for it (the client's
// tick timer keeps that context busy while the client lives).
// Allocation: none beyond the handler's own for a handler without an executor of its own:
// the fallback is kept as the concrete strand (a type-erased copy of a strand does not fit
// any_io_executor's small buffer), the "own executor?" test asks with an empty candidate
// (system_executor) instead of building an any_completion_executor from the strand, and
// dispatch() runs such a handler in place instead of posting it.
// Ownership: owns the handler; invoking it consumes it (once).
// Thread-safety: thread-compatible; constructed on any thread, invoked on the client's strand.

#include "nereus/client/completion.h"

#include <boost/asio/any_completion_executor.hpp>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/append.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/execution/outstanding_work.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/prefer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/system_executor.hpp>
#include <optional>
#include <utility>

namespace nereus::client::detail {

using strand_type = asio::strand<asio::any_io_executor>;

template <class T>
class completion {
public:
    completion() = default;
    completion(handler<T> h, const strand_type& fallback) : h_(std::move(h)), ex_(fallback) {
        // Work is tracked only on another executor: the client keeps its own strand's context
        // running, and a type-erased tracked copy of it costs allocations per operation.
        auto assoc = asio::get_associated_executor(h_, asio::system_executor());
        if (assoc.template target<asio::system_executor>() == nullptr) {
            work_ = asio::prefer(std::move(assoc), asio::execution::outstanding_work.tracked);
        }
    }

    completion(const completion&) = delete;
    completion& operator=(const completion&) = delete;
    completion(completion&&) noexcept = default;
    // Not defaulted: Boost 1.81's any_completion_handler move assignment constructs from its
    // argument as an lvalue, which its converting constructor wraps - in itself, endlessly
    // (a stack overflow: producer::flush's waiter assignment hit it). Move-construct and swap.
    completion& operator=(completion&& o) noexcept {
        if (this != &o) {
            handler<T> h(std::move(o.h_));
            h_.swap(h);
            ex_ = std::move(o.ex_);
            work_ = std::move(o.work_);
        }
        return *this;
    }
    ~completion() = default;

    explicit operator bool() const noexcept { return static_cast<bool>(h_); }

    // Posts the handler with `r` to the client's strand, from where Asio dispatches it to the
    // handler's associated executor: a completion never runs inside the caller's frame.
    void operator()(result<T> r) {
        if (!h_) {
            return;
        }
        asio::post(*ex_, asio::append(std::move(h_), std::move(r)));
        work_ = {};
    }

    // As operator(), but a handler without an executor of its own runs here and now.
    // Requires: running on the client's strand, outside the initiating call's frame (the
    // operation was posted, and this is an answer or a posted step), and no consumer state
    // borrowed across the call (the handler may call into the client: every initiation posts).
    void dispatch(result<T> r) {
        if (!h_) {
            return;
        }
        if (!work_) {
            auto h = std::move(h_);
            std::move(h)(std::move(r));
            return;
        }
        (*this)(std::move(r));
    }

private:
    handler<T> h_;
    // optional: a default-constructed strand would create a strand implementation on a null
    // executor (an empty completion has no strand, and never posts).
    std::optional<strand_type> ex_;
    asio::any_completion_executor work_;
};

}  // namespace nereus::client::detail
