#pragma once

// fault_store — a meta::store decorator that injects the failures a caller of a remote
// metadata store must survive, on any backend (memory or RocksDB): for tests of the layers
// above (cursor, ledger) and of crash recovery.
//
// Each rule matches calls by kind (multi, get, list, session calls) and key prefix, lets the
// first `skip` matching calls through, then fires on the next `count` of them:
//   - pass:        forward untouched (use with `then_crash` or `on_fire`);
//   - fail_before: nothing is applied; the call completes with `ec` (e.g. unavailable, or
//                  unknown_outcome for a request lost before the store saw it);
//   - fail_after:  the call is forwarded and applied, but its completion reports `ec` (default
//                  errc::unknown_outcome: a lost reply);
//   - delay:       sleep `delay` in the calling thread, then forward (a slow request; blocks
//                  the caller, which may be the store's callback thread).
// `then_crash` makes the store "dead" once the rule fired: every later call fails before being
// applied with errc::unavailable, as when the process that issued them was killed (the test
// then drops its handles and reopens). `on_fire` runs in the calling thread when the rule fires,
// before the call is forwarded or failed (e.g. to crash a fault_file_system at that instant).
//
// A multi matches `key_prefix` when any of its ops names a key starting with it; session calls
// carry no key and match only an empty prefix. Rules are checked in the order they were added;
// the first one that fires decides the call. Completions always run on the inner store's
// callback thread, never inline (a failure before apply is delivered through a get of the
// inner store, so the order of completions of one submitting thread is kept).
//
// Ownership: borrows `inner` (see forwarding_store).
// Thread-safety: thread-safe (one mutex; on_fire and completions run without it).
// Durability: as the inner store, for the calls it forwards.

#include "nereus/meta/errc.h"
#include "nereus/meta/forwarding_store.h"

#include <chrono>
#include <cstdint>
#include <functional>
#include <limits>
#include <mutex>
#include <string>
#include <system_error>
#include <vector>

namespace nereus::meta {

// Call kinds a fault rule matches (a bit mask).
enum class call_kind : unsigned {
    multi = 1U << 0,
    get = 1U << 1,
    list = 1U << 2,
    session = 1U << 3,  // open_session, keep_alive, close_session
    any = (1U << 4) - 1,
};

constexpr call_kind operator|(call_kind a, call_kind b) {
    return static_cast<call_kind>(static_cast<unsigned>(a) | static_cast<unsigned>(b));
}
constexpr bool has_kind(call_kind mask, call_kind k) {
    return (static_cast<unsigned>(mask) & static_cast<unsigned>(k)) != 0;
}

enum class fault_action : std::uint8_t { pass, fail_before, fail_after, delay };

struct fault_rule {
    static constexpr std::uint64_t forever = std::numeric_limits<std::uint64_t>::max();

    call_kind calls = call_kind::multi;
    std::string key_prefix;   // "" matches every call of the kinds above
    std::uint64_t skip = 0;   // matching calls let through before the rule fires
    std::uint64_t count = 1;  // calls it fires on (forever = every later matching call)
    fault_action action = fault_action::fail_before;
    std::error_code ec = make_error_code(errc::unknown_outcome);
    std::chrono::microseconds delay{0};
    bool then_crash = false;
    std::function<void()> on_fire;
};

class fault_store final : public forwarding_store {
public:
    explicit fault_store(store& inner) : forwarding_store(inner) {}

    // Adds a rule (checked after the earlier ones).
    void add(fault_rule rule);
    // The next `count` multis fail: applied = true is fail_after (applied, the reply reports
    // `ec`), applied = false is fail_before. Like memory_store::inject_commit_failure, on any
    // backend and per request rather than per commit group.
    void fail_multis(bool applied,
                     std::uint64_t count = 1,
                     std::error_code ec = make_error_code(errc::unknown_outcome));
    // Every multi sleeps `d` before it is forwarded (0 = none; replaces an earlier delay rule).
    void set_multi_delay(std::chrono::microseconds d);
    // Kills the store now: every later call fails with errc::unavailable before being applied.
    void crash();
    // Removes every rule and revives a crashed store.
    void clear();

    [[nodiscard]] bool crashed() const;
    // Calls seen (forwarded or failed) and rule firings, since construction.
    [[nodiscard]] std::uint64_t multis_seen() const;
    [[nodiscard]] std::uint64_t fired() const;

    void multi(std::vector<op> ops, callback<multi_result> done) override;
    void get(std::string key, callback<std::optional<record>> done) override;
    void list(std::string prefix, callback<std::vector<keyed_record>> done) override;
    void open_session(std::chrono::milliseconds ttl, callback<session_id> done) override;
    void keep_alive(session_id session, callback<void> done) override;
    void close_session(session_id session, callback<void> done) override;

private:
    struct decision {
        fault_action action = fault_action::pass;
        std::error_code ec;
        std::chrono::microseconds delay{0};
        std::function<void()> on_fire;
    };
    // Decides a call of kind `k` naming `keys` (empty for session calls).
    decision decide(call_kind k, const std::vector<std::string_view>& keys);
    // Completes `done` with `ec` on the inner store's callback thread (nothing applied).
    template <class T>
    void fail_later(std::string key, std::error_code ec, callback<T> done);
    // Applies `d` around forwarding: runs on_fire, fails before, or sleeps; returns true when
    // the call was failed (done consumed).
    template <class T>
    bool before(decision& d, const std::string& key, callback<T>& done);
    template <class T>
    static callback<T> wrap_after(const decision& d, callback<T> done);

    mutable std::mutex mu_;
    std::vector<fault_rule> rules_;
    bool crashed_ = false;
    std::uint64_t multis_ = 0;
    std::uint64_t fired_ = 0;
    std::size_t delay_rule_ = std::numeric_limits<std::size_t>::max();
};

}  // namespace nereus::meta
