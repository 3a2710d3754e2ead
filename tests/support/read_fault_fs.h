#pragma once

// A test file system for read-side faults: forwards everything to the real (POSIX) file system,
// except that read_at (and read_at_nowait) of a file whose path contains ".log" (stream-log
// segments) fails with EIO while read_faults::failing_reads > 0 (each failure counts it down; set
// it to a large number to fail every read until it is set back to 0). Used by
// tests/unit/ledger/read_fault_test.cc and tests/unit/broker/read_fault_test.cc. Thread-safety:
// thread-safe (atomics; the real file system is).

#include "nereus/base/forwarding_file_system.h"

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

class read_fault_file final : public forwarding_file {
public:
    read_fault_file(std::unique_ptr<file> inner, std::string path, std::shared_ptr<read_faults> f)
        : forwarding_file(std::move(inner)), path_(std::move(path)), f_(std::move(f)) {}
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
    // The same faults for nowait reads (the broker's inline dispatch reads), so they cannot
    // bypass them.
    result<std::size_t> read_at_nowait(std::uint64_t offset, std::span<std::byte> out) override {
        if (path_.find(".log") != std::string::npos) {
            for (int n = f_->failing_reads.load(); n > 0;) {
                if (f_->failing_reads.compare_exchange_weak(n, n - 1)) {
                    ++f_->failed;
                    return nereus::error(std::errc::io_error);
                }
            }
        }
        return inner_->read_at_nowait(offset, out);
    }

private:
    const std::string path_;
    std::shared_ptr<read_faults> f_;
};

class read_fault_fs final : public forwarding_file_system {
public:
    explicit read_fault_fs(std::shared_ptr<read_faults> f)
        : forwarding_file_system(posix_file_system()), f_(std::move(f)) {}
    result<std::unique_ptr<file>> open(const std::string& path, open_mode mode) override {
        auto r = inner_->open(path, mode);
        if (!r) {
            return nereus::error(r.error());
        }
        return std::unique_ptr<file>(std::make_unique<read_fault_file>(std::move(*r), path, f_));
    }

private:
    std::shared_ptr<read_faults> f_;
};

}  // namespace nereus::test
