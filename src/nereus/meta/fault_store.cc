#include "nereus/meta/fault_store.h"

#include <string_view>
#include <thread>
#include <type_traits>
#include <utility>
#include <variant>

namespace nereus::meta {
namespace {

// A key for the carrier get of a failure delivered later (any valid key will do).
constexpr const char* carrier_key = "fault_store/none";

std::string_view key_of(const op& o) {
    return std::visit(
        [](const auto& x) -> std::string_view {
            using T = std::decay_t<decltype(x)>;
            if constexpr (std::is_same_v<T, check_session>) {
                return {};
            } else {
                return x.key;
            }
        },
        o);
}

}  // namespace

void fault_store::add(fault_rule rule) {
    const std::lock_guard lock(mu_);
    rules_.push_back(std::move(rule));
}

void fault_store::fail_multis(bool applied, std::uint64_t count, std::error_code ec) {
    add(fault_rule{.calls = call_kind::multi,
                   .count = count,
                   .action = applied ? fault_action::fail_after : fault_action::fail_before,
                   .ec = ec});
}

void fault_store::set_multi_delay(std::chrono::microseconds d) {
    const std::lock_guard lock(mu_);
    if (delay_rule_ < rules_.size()) {
        rules_[delay_rule_].delay = d;
        rules_[delay_rule_].count = d.count() > 0 ? fault_rule::forever : 0;
        return;
    }
    if (d.count() <= 0) {
        return;
    }
    delay_rule_ = rules_.size();
    rules_.push_back(fault_rule{.calls = call_kind::multi,
                                .count = fault_rule::forever,
                                .action = fault_action::delay,
                                .delay = d});
}

void fault_store::crash() {
    const std::lock_guard lock(mu_);
    crashed_ = true;
}

void fault_store::clear() {
    const std::lock_guard lock(mu_);
    rules_.clear();
    crashed_ = false;
    delay_rule_ = std::numeric_limits<std::size_t>::max();
}

bool fault_store::crashed() const {
    const std::lock_guard lock(mu_);
    return crashed_;
}

std::uint64_t fault_store::multis_seen() const {
    const std::lock_guard lock(mu_);
    return multis_;
}

std::uint64_t fault_store::fired() const {
    const std::lock_guard lock(mu_);
    return fired_;
}

fault_store::decision fault_store::decide(call_kind k, const std::vector<std::string_view>& keys) {
    const std::lock_guard lock(mu_);
    if (k == call_kind::multi) {
        ++multis_;
    }
    if (crashed_) {
        return decision{.action = fault_action::fail_before,
                        .ec = make_error_code(errc::unavailable)};
    }
    for (auto& r : rules_) {
        if (!has_kind(r.calls, k) || r.count == 0) {
            continue;
        }
        bool match = r.key_prefix.empty();
        for (std::size_t i = 0; !match && i < keys.size(); ++i) {
            match = keys[i].starts_with(r.key_prefix);
        }
        if (!match) {
            continue;
        }
        if (r.skip > 0) {
            --r.skip;
            continue;
        }
        if (r.count != fault_rule::forever) {
            --r.count;
        }
        ++fired_;
        if (r.then_crash) {
            crashed_ = true;
        }
        return decision{.action = r.action, .ec = r.ec, .delay = r.delay, .on_fire = r.on_fire};
    }
    return decision{};
}

template <class T>
void fault_store::fail_later(std::string key, std::error_code ec, callback<T> done) {
    if (key.empty() || key.size() > max_key_size) {
        key = carrier_key;
    }
    inner().get(std::move(key), [ec, done = std::move(done)](const result<std::optional<record>>&) {
        done(nereus::error(ec));
    });
}

template <class T>
bool fault_store::before(decision& d, const std::string& key, callback<T>& done) {
    if (d.on_fire) {
        d.on_fire();
    }
    switch (d.action) {
        case fault_action::fail_before:
            fail_later<T>(key, d.ec, std::move(done));
            return true;
        case fault_action::delay:
            std::this_thread::sleep_for(d.delay);
            return false;
        case fault_action::pass:
        case fault_action::fail_after:
            return false;
    }
    return false;
}

template <class T>
store::callback<T> fault_store::wrap_after(const decision& d, callback<T> done) {
    if (d.action != fault_action::fail_after) {
        return done;
    }
    return [ec = d.ec, done = std::move(done)](const result<T>&) {
        done(nereus::error(ec));
    };
}

void fault_store::multi(std::vector<op> ops, callback<multi_result> done) {
    std::vector<std::string_view> keys;
    keys.reserve(ops.size());
    std::string first;
    for (const auto& o : ops) {
        if (auto k = key_of(o); !k.empty()) {
            keys.push_back(k);
            if (first.empty()) {
                first = std::string(k);
            }
        }
    }
    auto d = decide(call_kind::multi, keys);
    if (before(d, first, done)) {
        return;
    }
    forwarding_store::multi(std::move(ops), wrap_after(d, std::move(done)));
}

void fault_store::get(std::string key, callback<std::optional<record>> done) {
    auto d = decide(call_kind::get, {key});
    if (before(d, key, done)) {
        return;
    }
    forwarding_store::get(std::move(key), wrap_after(d, std::move(done)));
}

void fault_store::list(std::string prefix, callback<std::vector<keyed_record>> done) {
    auto d = decide(call_kind::list, {prefix});
    if (before(d, prefix, done)) {
        return;
    }
    forwarding_store::list(std::move(prefix), wrap_after(d, std::move(done)));
}

void fault_store::open_session(std::chrono::milliseconds ttl, callback<session_id> done) {
    auto d = decide(call_kind::session, {});
    if (before(d, {}, done)) {
        return;
    }
    forwarding_store::open_session(ttl, wrap_after(d, std::move(done)));
}

void fault_store::keep_alive(session_id session, callback<void> done) {
    auto d = decide(call_kind::session, {});
    if (before(d, {}, done)) {
        return;
    }
    forwarding_store::keep_alive(session, wrap_after(d, std::move(done)));
}

void fault_store::close_session(session_id session, callback<void> done) {
    auto d = decide(call_kind::session, {});
    if (before(d, {}, done)) {
        return;
    }
    forwarding_store::close_session(session, wrap_after(d, std::move(done)));
}

}  // namespace nereus::meta
