#pragma once

// completion<T>: a type-erased completion handler plus outstanding work on its executor, so
// that an application io_context awaiting a client operation does not run out of work, and so
// that the handler runs on its associated executor (completion.h rules). A handler without an
// executor of its own runs on the client's strand; no work is tracked for it (the client's
// tick timer keeps that context busy while the client lives).
// Ownership: owns the handler; invoking it consumes it (once).
// Thread-safety: thread-compatible; invoked on the client's strand.

#include "nereus/client/completion.h"

#include <boost/asio/any_completion_executor.hpp>
#include <boost/asio/append.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/execution/outstanding_work.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/prefer.hpp>
#include <utility>

namespace nereus::client::detail {

template <class T>
class completion {
public:
    completion() = default;
    completion(handler<T> h, const asio::any_io_executor& fallback)
        : h_(std::move(h)), ex_(fallback) {
        // Work is tracked only on another executor: the client keeps its own strand's context
        // running, and a type-erased tracked copy of it costs allocations per operation.
        auto assoc = asio::get_associated_executor(h_, fallback);
        if (!(assoc == asio::any_completion_executor(fallback))) {
            work_ = asio::prefer(std::move(assoc), asio::execution::outstanding_work.tracked);
        }
    }

    explicit operator bool() const noexcept { return static_cast<bool>(h_); }

    // Posts the handler with `r` to the client's strand, from where Asio dispatches it to the
    // handler's associated executor: a completion never runs inside the caller's frame.
    void operator()(result<T> r) {
        if (!h_) {
            return;
        }
        asio::post(ex_, asio::append(std::move(h_), std::move(r)));
        work_ = {};
    }

private:
    handler<T> h_;
    asio::any_io_executor ex_;
    asio::any_completion_executor work_;
};

}  // namespace nereus::client::detail
