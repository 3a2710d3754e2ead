#pragma once

// forwarding_store — a meta::store that forwards every call to another store. The base of the
// decorators (counting_store, fault_store): a decorator overrides only what it changes.
//
// Ownership: borrows `inner`; it must outlive this store and every completion of it.
// Thread-safety: as the inner store (thread-safe for every backend).
// Durability: as the inner store.

#include "nereus/meta/store.h"

#include <chrono>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace nereus::meta {

class forwarding_store : public store {
public:
    explicit forwarding_store(store& inner) : inner_(inner) {}

    void multi(std::vector<op> ops, callback<multi_result> done) override {
        inner_.multi(std::move(ops), std::move(done));
    }
    void get(std::string key, callback<std::optional<record>> done) override {
        inner_.get(std::move(key), std::move(done));
    }
    void list(std::string prefix, callback<std::vector<keyed_record>> done) override {
        inner_.list(std::move(prefix), std::move(done));
    }
    [[nodiscard]] watch_handle watch(std::string prefix, watch_callback cb) override {
        return inner_.watch(std::move(prefix), std::move(cb));
    }
    void open_session(std::chrono::milliseconds ttl, callback<session_id> done) override {
        inner_.open_session(ttl, std::move(done));
    }
    void keep_alive(session_id session, callback<void> done) override {
        inner_.keep_alive(session, std::move(done));
    }
    void close_session(session_id session, callback<void> done) override {
        inner_.close_session(session, std::move(done));
    }
    [[nodiscard]] bool is_callback_thread() const override { return inner_.is_callback_thread(); }

protected:
    [[nodiscard]] store& inner() const { return inner_; }

private:
    store& inner_;
};

}  // namespace nereus::meta
