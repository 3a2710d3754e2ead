#pragma once

// The cursor test harness: a metadata store (memory or RocksDB in a temp dir), an object store
// on the in-memory fault_file_system (so power_loss() can be simulated), a memory_stream_view
// and an owner session. "restart" = close + reopen; "crash" = drop the handle without close
// (and for RocksDB also reopen the store, which expires the old process's sessions).
//
// Thread-safety: thread-compatible (one test at a time).

#include "nereus/base/fault_file_system.h"
#include "nereus/cursor/cursor.h"
#include "nereus/cursor/errc.h"
#include "nereus/cursor/memory_stream_view.h"
#include "nereus/cursor/sync.h"
#include "nereus/meta/fault_store.h"
#include "nereus/meta/memory_store.h"
#include "nereus/meta/rocksdb_store.h"
#include "nereus/meta/sync.h"
#include "nereus/objects/fs_object_store.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>

namespace nereus::cursor::test {

enum class meta_kind { memory, rocksdb };

inline std::string meta_kind_name(const ::testing::TestParamInfo<meta_kind>& info) {
    return info.param == meta_kind::memory ? "Memory" : "RocksDB";
}

class harness {
public:
    explicit harness(meta_kind kind, cursor_options options = {})
        : kind_(kind), options_(std::move(options)) {
        const char* base = std::getenv("TMPDIR");
        std::string pattern =
            std::string(base != nullptr ? base : "/tmp") + "/nereus-cursor-XXXXXX";
        if (::mkdtemp(pattern.data()) == nullptr) {
            ADD_FAILURE() << "mkdtemp failed";
        }
        dir_ = pattern;
        fs_ = std::make_shared<fault_file_system>();
        open_meta();
        open_objects();
    }
    harness(const harness&) = delete;
    harness& operator=(const harness&) = delete;
    ~harness() {
        objects_.reset();
        faults_.reset();
        meta_.reset();
        std::error_code ec;
        std::filesystem::remove_all(dir_, ec);
    }

    cursor_env env() {
        return cursor_env{
            .meta = faults_.get(), .objects = objects_.get(), .stream = &stream_, .owner = owner_};
    }
    cursor_options& options() { return options_; }
    memory_stream_view& stream() { return stream_; }
    // The store the cursors use (the fault proxy over the backend).
    meta::store& meta() { return *faults_; }
    meta::fault_store& faults() { return *faults_; }
    objects::object_store& objects() { return *objects_; }
    fault_file_system& fs() { return *fs_; }
    meta::session_id owner() const { return owner_; }
    meta_kind kind() const { return kind_; }

    std::shared_ptr<cursor> create(const std::string& name,
                                   initial_position where = initial_position::earliest()) {
        auto c = create_sync(env(), id(name), where, options_);
        EXPECT_TRUE(c.has_value()) << (c ? "" : c.error().message());
        return c ? *c : nullptr;
    }
    result<std::shared_ptr<cursor>> open(const std::string& name) {
        return open_sync(env(), id(name), options_);
    }
    std::shared_ptr<cursor> reopen(const std::string& name) {
        auto c = open(name);
        EXPECT_TRUE(c.has_value()) << (c ? "" : c.error().message());
        return c ? *c : nullptr;
    }
    static cursor_id id(const std::string& name) { return cursor_id{"ledger-1", name}; }

    // A process crash of the metadata side: RocksDB is closed and reopened from its directory
    // (its WAL is synced per write); the memory store survives as "the same store". The fault
    // proxy's rules are cleared either way (the restarted process has none).
    void crash_meta() {
        if (kind_ == meta_kind::rocksdb) {
            faults_.reset();
            meta_.reset();
            open_meta();
        } else {
            faults_->clear();
        }
    }
    // Power loss of the object store's file system, then reopen the object store.
    void power_loss_objects() {
        objects_.reset();
        fs_->power_loss();
        open_objects();
    }
    // Power loss that keeps a random part of the unsynced writes (torn), then reopen.
    void torn_power_loss_objects(std::uint64_t seed) {
        objects_.reset();
        fs_->power_loss_torn(seed);
        open_objects();
    }
    // A kill -9 of the object store's process: the page cache survives; reopen.
    void process_crash_objects() {
        objects_.reset();
        fs_->process_crash();
        open_objects();
    }
    // A new owner session (the old one stays alive unless closed).
    meta::session_id new_session() {
        auto s = meta::open_session_sync(*faults_, std::chrono::minutes(10));
        EXPECT_TRUE(s.has_value());
        return s ? *s : meta::no_session;
    }
    void set_owner(meta::session_id s) { owner_ = s; }

private:
    void open_meta() {
        if (kind_ == meta_kind::memory) {
            meta_ = meta::memory_store::open();
        } else {
            auto s = meta::rocksdb_store::open(dir_ + "/meta");
            ASSERT_TRUE(s.has_value()) << s.error().message();
            meta_ = std::move(*s);
        }
        faults_ = std::make_unique<meta::fault_store>(*meta_);
        owner_ = new_session();
    }
    void open_objects() {
        auto o = objects::fs_object_store::open(fs_, "/objects");
        ASSERT_TRUE(o.has_value()) << o.error().message();
        objects_ = std::move(*o);
    }

    meta_kind kind_;
    cursor_options options_;
    std::string dir_;
    std::shared_ptr<fault_file_system> fs_;
    std::unique_ptr<meta::store> meta_;
    std::unique_ptr<meta::fault_store> faults_;  // over meta_
    std::unique_ptr<objects::fs_object_store> objects_;
    memory_stream_view stream_;
    meta::session_id owner_ = meta::no_session;
};

// Unwraps an op_result, failing the test on an error.
inline op_result ok(const result<op_result>& r) {
    EXPECT_TRUE(r.has_value()) << (r ? "" : r.error().message());
    return r ? *r : op_result{};
}

inline std::error_code error_of(const result<op_result>& r) {
    return r ? std::error_code() : r.error();
}

}  // namespace nereus::cursor::test
