#pragma once

// spawn_op: runs an operation's coroutine on the client's strand and completes the caller's
// handler (through detail::completion) with its result; an escaped exception becomes
// errc::protocol_error (none should escape: errors are values).
// Order: the coroutine is started by a post to the strand, as every other operation is (handles.cc
// on_strand), so operations run in the order they were issued, also from a handler running on
// the strand: co_spawn alone would start it inline there, ahead of acks posted just before
// (acknowledge(); close(); in a handler then failed the acks with errc::closed).
// Thread-safety: callable from any thread.

#include "nereus/client/detail/client_impl.h"
#include "nereus/client/errc.h"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/post.hpp>
#include <exception>

namespace nereus::client::detail {

template <class T>
void spawn_op(const std::shared_ptr<client_impl>& c, asio::awaitable<result<T>> co, handler<T> h) {
    completion<T> done(std::move(h), c->strand());
    asio::post(
        c->strand(), [strand = c->strand(), co = std::move(co), done = std::move(done)]() mutable {
            asio::co_spawn(strand, std::move(co),
                           [done = std::move(done)](std::exception_ptr e, result<T> r) mutable {
                               if (e) {
                                   done(error(errc::protocol_error));
                                   return;
                               }
                               done(std::move(r));
                           });
        });
}

}  // namespace nereus::client::detail
