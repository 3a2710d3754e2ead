#include "nereus/broker/confirm_gate.h"

#include "nereus/broker/logger.h"
#include "nereus/proto/server_error.h"

#include <charconv>
#include <vector>

namespace nereus::broker {

confirm_gate::confirm_gate(meta::store& meta,
                           meta::session_id owner,
                           std::string owner_key,
                           meta::version owner_version,
                           std::string stream_key,
                           meta::version stream_version,
                           std::function<void()> on_fenced)
    : meta_(meta),
      owner_(owner),
      owner_key_(std::move(owner_key)),
      owner_version_(owner_version),
      stream_key_(std::move(stream_key)),
      on_fenced_(std::move(on_fenced)),
      stream_version_(stream_version) {}

std::string confirm_gate::encode_end(std::uint64_t end) {
    return std::to_string(end);
}

std::optional<std::uint64_t> confirm_gate::decode_end(std::string_view v) {
    std::uint64_t n = 0;
    auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
    if (ec != std::errc() || p != v.data() + v.size() || v.empty()) {
        return std::nullopt;
    }
    return n;
}

void confirm_gate::confirm(std::uint64_t entry, done_fn done) {
    std::unique_lock lock(mu_);
    if (fenced_) {
        lock.unlock();
        done(nereus::error(proto::error_kind::unavailable));
        return;
    }
    waiting_.push_back(waiting{entry + 1, std::move(done)});
    pump_locked();
}

void confirm_gate::pump_locked() {
    if (in_flight_ || fenced_ || waiting_.empty()) {
        return;
    }
    in_flight_ = true;
    const std::uint64_t end = std::max(confirmed_, waiting_.back().end);
    std::vector<meta::op> ops;
    ops.emplace_back(meta::check_session{owner_});
    ops.emplace_back(meta::check{owner_key_, owner_version_});
    ops.emplace_back(meta::put{stream_key_, encode_end(end), stream_version_});
    meta_.multi(std::move(ops), [self = shared_from_this(), end](result<meta::multi_result> r) {
        self->on_result(end, std::move(r));
    });
}

void confirm_gate::on_result(std::uint64_t end, result<meta::multi_result> r) {
    std::unique_lock lock(mu_);
    in_flight_ = false;
    if (!r || !r->applied) {
        // Session gone (op 0), ownership node gone or replaced (op 1), or another writer moved
        // the stream record (op 2): this broker no longer owns the topic. An unknown outcome is
        // treated the same way: nothing is confirmed on a guess.
        NEREUS_LOG(
            broker_log(), warn,
            "stream CAS of {} rejected ({}): ownership lost, nothing "
            "more is confirmed",
            stream_key_,
            !r ? r.error().message() : "failed op " + std::to_string(r->failed_op.value_or(99)));
        fenced_ = true;
        fail_all(lock);
        return;
    }
    stream_version_ = r->versions.at(2);
    confirmed_ = end;
    std::vector<done_fn> ready;
    while (!waiting_.empty() && waiting_.front().end <= end) {
        ready.push_back(std::move(waiting_.front().done));
        waiting_.pop_front();
    }
    pump_locked();
    lock.unlock();
    for (auto& d : ready) {
        d(result<void>());
    }
}

void confirm_gate::fence() {
    std::unique_lock lock(mu_);
    fenced_ = true;
    fence_reported_ = true;  // released on purpose: nobody needs telling
    fail_all(lock);
}

void confirm_gate::fail_all(std::unique_lock<std::mutex>& lock) {
    std::deque<waiting> failed;
    failed.swap(waiting_);
    const bool report = !fence_reported_;
    fence_reported_ = true;
    lock.unlock();
    // The loss first (the broker starts dropping the topic), then the failed confirmations.
    if (report && on_fenced_) {
        on_fenced_();
    }
    for (auto& w : failed) {
        w.done(nereus::error(proto::error_kind::unavailable));
    }
}

bool confirm_gate::fenced() const {
    std::lock_guard lock(mu_);
    return fenced_;
}

std::uint64_t confirm_gate::confirmed_end() const {
    std::lock_guard lock(mu_);
    return confirmed_;
}

}  // namespace nereus::broker
