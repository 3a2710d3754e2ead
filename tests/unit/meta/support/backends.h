#pragma once

// The backends the conformance suite runs against, and helpers shared by the meta tests.

#include "nereus/meta/make_store.h"
#include "nereus/meta/store.h"

#include <gtest/gtest.h>

#include "unit/meta/support/temp_dir.h"
#include <chrono>
#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <thread>

namespace nereus::meta::test {

enum class backend_kind { memory, rocksdb };

inline void PrintTo(backend_kind k, std::ostream* os) {
    *os << (k == backend_kind::memory ? "memory" : "rocksdb");
}

inline std::string backend_name(const ::testing::TestParamInfo<backend_kind>& info) {
    return info.param == backend_kind::memory ? "memory" : "rocksdb";
}

// Owns one store of the chosen backend (rocksdb in a fresh temp dir) and can reopen it.
class store_holder {
public:
    explicit store_holder(backend_kind kind) : kind_(kind) { open(); }

    void open() {
        const std::string url =
            kind_ == backend_kind::memory ? "memory:" : "rocksdb:" + dir_.sub("store");
        auto s = make_store(url);
        ASSERT_TRUE(s.has_value()) << url << ": " << s.error().message();
        store_ = std::move(*s);
    }
    void close() { store_.reset(); }
    void reopen() {
        close();
        open();
    }

    store& get() { return *store_; }
    backend_kind kind() const { return kind_; }
    bool durable() const { return kind_ == backend_kind::rocksdb; }
    const temp_dir& dir() const { return dir_; }

private:
    backend_kind kind_;
    temp_dir dir_;
    std::unique_ptr<store> store_;
};

// Polls `cond` every 5 ms for at most `limit`; true when it held.
inline bool eventually(const std::function<bool()>& cond,
                       std::chrono::milliseconds limit = std::chrono::milliseconds(5000)) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < deadline) {
        if (cond()) {
            return true;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return cond();
}

}  // namespace nereus::meta::test
