#pragma once

// confirm_gate — the stream CAS of a topic owned through a shared metadata store
// (doc/ownership.md). An entry that the stream log reports durable is not yet confirmed: the
// owner first advances the topic's stream record (`ledgers/<topic>/stream`, the confirmed end
// offset as decimal text) with ONE multi that also checks the owner session and the version of
// its ephemeral ownership node:
//
//     multi{ check_session(owner), check(owners/<topic>, owner_version),
//            put(ledgers/<topic>/stream, end, expected = last version) }
//
// Only when that multi is applied do the entries below `end` get their SEND_RECEIPT. A broker
// whose session expired or whose ownership node was replaced fails the multi (even though the
// stream record's version alone would still match), so it confirms nothing more; the gate is
// then fenced: every queued and later confirmation fails with service-not-ready and
// `on_fenced` runs once. An unknown outcome also fences (the gate never guesses). A new owner
// copies the stream only after its own claim, so every entry below a confirmed end is in its
// copy.
//
// One multi is in flight at a time; everything that became durable meanwhile rides on the next
// one (group confirmation), so the metadata cost is one round trip per group, not per entry.
//
// Ownership: shared (std::shared_ptr; in-flight completions hold it). Borrows the store, which
//   must outlive every completion.
// Thread-safety: thread-safe. `done` callbacks and on_fenced run on the metadata store's
//   callback thread (or inline in confirm() once fenced); they must not block on the store.
// Durability: a success passed to `done` means the confirmed end covering the entry is applied
//   and durable in the metadata store, under this owner's ownership.

#include "nereus/base/completion.h"
#include "nereus/base/result.h"
#include "nereus/meta/store.h"

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

namespace nereus::broker {

class confirm_gate : public std::enable_shared_from_this<confirm_gate> {
public:
    // Inline, move-only (base/completion.h): room for a topic_store append_callback plus its
    // position, so confirming an append allocates nothing for the callback.
    using done_fn = inline_completion<void(result<void>), 104>;

    confirm_gate(meta::store& meta,
                 meta::session_id owner,
                 std::string owner_key,
                 meta::version owner_version,
                 std::string stream_key,
                 meta::version stream_version,
                 std::function<void()> on_fenced);

    // Confirms entry `entry` (durable in the stream log). Calls must come in entry order.
    void confirm(std::uint64_t entry, done_fn done);
    // Fails everything queued and every later confirm() (ownership released or lost).
    void fence();
    [[nodiscard]] bool fenced() const;
    // The end offset last confirmed by this gate.
    [[nodiscard]] std::uint64_t confirmed_end() const;

    static std::string encode_end(std::uint64_t end);
    static std::optional<std::uint64_t> decode_end(std::string_view v);

private:
    struct waiting {
        std::uint64_t end = 0;  // entry + 1
        done_fn done;
    };
    // Requires: mu_ held; sends the next multi when none is in flight.
    void pump_locked();
    void on_result(std::uint64_t end, result<meta::multi_result> r);
    void fail_all(std::unique_lock<std::mutex>& lock);

    meta::store& meta_;
    const meta::session_id owner_;
    const std::string owner_key_;
    const meta::version owner_version_;
    const std::string stream_key_;
    std::function<void()> on_fenced_;

    mutable std::mutex mu_;
    meta::version stream_version_;  // guarded by mu_
    std::uint64_t confirmed_ = 0;   // guarded by mu_
    bool in_flight_ = false;        // guarded by mu_
    bool fenced_ = false;           // guarded by mu_
    bool fence_reported_ = false;   // guarded by mu_
    std::deque<waiting> waiting_;   // guarded by mu_
};

}  // namespace nereus::broker
