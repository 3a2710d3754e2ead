#pragma once

// The backends the conformance suite runs against, and helpers shared by the meta tests.

#include "nereus/meta/make_store.h"
#include "nereus/meta/store.h"

#include <gtest/gtest.h>

#include "unit/meta/support/temp_dir.h"
#include "unit/meta/support/zk_server.h"
#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <thread>

namespace nereus::meta::test {

enum class backend_kind { memory, rocksdb, zookeeper };

inline const char* name_of(backend_kind k) {
    switch (k) {
        case backend_kind::memory:
            return "memory";
        case backend_kind::rocksdb:
            return "rocksdb";
        case backend_kind::zookeeper:
            return "zookeeper";
    }
    return "?";
}

inline void PrintTo(backend_kind k, std::ostream* os) {
    *os << name_of(k);
}

inline std::string backend_name(const ::testing::TestParamInfo<backend_kind>& info) {
    return name_of(info.param);
}

// Owns one store of the chosen backend (rocksdb in a fresh temp dir; zookeeper under a fresh
// root znode of the process's test server) and can reopen it.
class store_holder {
public:
    explicit store_holder(backend_kind kind) : kind_(kind) {
        if (kind_ == backend_kind::zookeeper) {
            static std::atomic<int> next{0};
            zk_root_ = "/nereus-test/" + std::to_string(::getpid()) + "-" + std::to_string(++next);
        }
        open();
    }

    std::string url() const {
        switch (kind_) {
            case backend_kind::memory:
                return "memory:";
            case backend_kind::rocksdb:
                return "rocksdb:" + dir_.sub("store");
            case backend_kind::zookeeper:
                return "zk://" + zk_server::shared().hosts() + zk_root_;
        }
        return {};
    }

    void open() {
        if (kind_ == backend_kind::zookeeper) {
            ASSERT_TRUE(zk_server::shared().ok())
                << "the ZooKeeper test server is unavailable: " << zk_server::shared().error();
        }
        const std::string url = this->url();
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
    bool durable() const { return kind_ != backend_kind::memory; }
    const temp_dir& dir() const { return dir_; }

private:
    backend_kind kind_;
    std::string zk_root_;
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
