#pragma once

// A test file system for read-side faults: forwards everything to the real (POSIX) file system,
// except that read_at of a file whose path contains ".log" (stream-log segments) fails with EIO
// while read_faults::failing_reads > 0 (each failure counts it down; set it to a large number
// to fail every read until it is set back to 0). Used by tests/unit/ledger/read_fault_test.cc
// and tests/unit/broker/read_fault_test.cc.
// Thread-safety: thread-safe (atomics; the real file system is).

#include "nereus/base/file_system.h"

#include <atomic>
#include <memory>
#include <span>
#include <string>
#include <system_error>
#include <vector>

namespace nereus::test {

// Forwards everything to the real file system; read_at of a path containing ".log" fails with
// EIO while `failing_reads` > 0 (each failure counts one down).
struct read_faults {
    std::atomic<int> failing_reads{0};
    std::atomic<int> failed{0};
};

class read_fault_file final : public file {
public:
    read_fault_file(std::unique_ptr<file> inner, std::string path, std::shared_ptr<read_faults> f)
        : inner_(std::move(inner)), path_(std::move(path)), f_(std::move(f)) {}
    result<void> write_at(std::uint64_t offset, bytes_view data) override {
        return inner_->write_at(offset, data);
    }
    result<void> writev_at(std::uint64_t offset, std::span<const bytes_view> parts) override {
        return inner_->writev_at(offset, parts);
    }
    result<std::size_t> read_at(std::uint64_t offset, std::span<std::byte> out) override {
        if (path_.find(".log") != std::string::npos) {
            for (int n = f_->failing_reads.load(); n > 0;) {
                if (f_->failing_reads.compare_exchange_weak(n, n - 1)) {
                    ++f_->failed;
                    return nereus::error(std::errc::io_error);
                }
            }
        }
        return inner_->read_at(offset, out);
    }
    result<void> sync() override { return inner_->sync(); }
    result<std::uint64_t> size() override { return inner_->size(); }
    result<void> truncate(std::uint64_t size) override { return inner_->truncate(size); }
    result<void> preallocate(std::uint64_t size) override { return inner_->preallocate(size); }

private:
    std::unique_ptr<file> inner_;
    const std::string path_;
    std::shared_ptr<read_faults> f_;
};

class read_fault_fs final : public file_system {
public:
    explicit read_fault_fs(std::shared_ptr<read_faults> f) : f_(std::move(f)) {}
    result<std::unique_ptr<file>> open(const std::string& path, open_mode mode) override {
        auto r = real_->open(path, mode);
        if (!r) {
            return nereus::error(r.error());
        }
        return std::unique_ptr<file>(std::make_unique<read_fault_file>(std::move(*r), path, f_));
    }
    result<void> remove(const std::string& p) override { return real_->remove(p); }
    result<void> rename(const std::string& a, const std::string& b) override {
        return real_->rename(a, b);
    }
    result<void> rename_noreplace(const std::string& a, const std::string& b) override {
        return real_->rename_noreplace(a, b);
    }
    result<void> create_dir(const std::string& p) override { return real_->create_dir(p); }
    result<void> create_dirs(const std::string& p) override { return real_->create_dirs(p); }
    result<void> remove_dir(const std::string& p) override { return real_->remove_dir(p); }
    result<void> sync_dir(const std::string& p) override { return real_->sync_dir(p); }
    result<void> sync_all(const std::string& p) override { return real_->sync_all(p); }
    result<std::vector<std::string>> list_dir(const std::string& p) override {
        return real_->list_dir(p);
    }
    result<bool> exists(const std::string& p) override { return real_->exists(p); }
    result<bool> is_dir(const std::string& p) override { return real_->is_dir(p); }
    result<std::uint64_t> file_size(const std::string& p) override { return real_->file_size(p); }

private:
    std::shared_ptr<file_system> real_ = posix_file_system();
    std::shared_ptr<read_faults> f_;
};

}  // namespace nereus::test
