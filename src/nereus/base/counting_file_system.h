#pragma once

// A file_system decorator that counts what passes through it: bytes written and file syncs.
// The benchmarks use it to report bytes written per operation and to prove how many
// fdatasyncs a workload really issued (a throughput figure alone cannot show a skipped sync).
//
// Ownership: shares `inner`; files opened through it share the counters, so counts stay valid
// after a file outlives the decorator.
// Thread-safety: thread-safe (atomic counters; everything else forwards to `inner`).

#include "nereus/base/file_system.h"

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace nereus {

class counting_file_system final : public file_system {
public:
    explicit counting_file_system(std::shared_ptr<file_system> inner) : inner_(std::move(inner)) {}

    // Bytes passed to write_at / writev_at of files opened through this decorator.
    [[nodiscard]] std::uint64_t bytes_written() const { return counters_->bytes.load(); }
    // Successful and failed file::sync() calls (fdatasync) on those files.
    [[nodiscard]] std::uint64_t syncs() const { return counters_->syncs.load(); }

    result<std::unique_ptr<file>> open(const std::string& path, open_mode mode) override {
        auto f = inner_->open(path, mode);
        if (!f) {
            return error(f.error());
        }
        return std::unique_ptr<file>(std::make_unique<counting_file>(std::move(*f), counters_));
    }
    result<void> remove(const std::string& p) override { return inner_->remove(p); }
    result<void> rename(const std::string& a, const std::string& b) override {
        return inner_->rename(a, b);
    }
    result<void> rename_noreplace(const std::string& a, const std::string& b) override {
        return inner_->rename_noreplace(a, b);
    }
    result<void> create_dir(const std::string& p) override { return inner_->create_dir(p); }
    result<void> create_dirs(const std::string& p) override { return inner_->create_dirs(p); }
    result<void> remove_dir(const std::string& p) override { return inner_->remove_dir(p); }
    result<void> sync_dir(const std::string& p) override { return inner_->sync_dir(p); }
    result<void> sync_all(const std::string& p) override { return inner_->sync_all(p); }
    result<std::vector<std::string>> list_dir(const std::string& p) override {
        return inner_->list_dir(p);
    }
    result<bool> exists(const std::string& p) override { return inner_->exists(p); }
    result<bool> is_dir(const std::string& p) override { return inner_->is_dir(p); }
    result<std::uint64_t> file_size(const std::string& p) override { return inner_->file_size(p); }

private:
    struct counters {
        std::atomic<std::uint64_t> bytes{0};
        std::atomic<std::uint64_t> syncs{0};
    };

    class counting_file final : public file {
    public:
        counting_file(std::unique_ptr<file> f, std::shared_ptr<counters> n)
            : f_(std::move(f)), n_(std::move(n)) {}
        result<void> write_at(std::uint64_t o, bytes_view d) override {
            n_->bytes.fetch_add(d.size());
            return f_->write_at(o, d);
        }
        result<void> writev_at(std::uint64_t o, std::span<const bytes_view> parts) override {
            std::uint64_t n = 0;
            for (const auto& p : parts) {
                n += p.size();
            }
            n_->bytes.fetch_add(n);
            return f_->writev_at(o, parts);
        }
        result<std::size_t> read_at(std::uint64_t o, std::span<std::byte> out) override {
            return f_->read_at(o, out);
        }
        result<void> sync() override {
            n_->syncs.fetch_add(1);
            return f_->sync();
        }
        result<std::uint64_t> size() override { return f_->size(); }
        result<void> truncate(std::uint64_t s) override { return f_->truncate(s); }
        result<void> preallocate(std::uint64_t s) override { return f_->preallocate(s); }

    private:
        std::unique_ptr<file> f_;
        std::shared_ptr<counters> n_;
    };

    std::shared_ptr<file_system> inner_;
    std::shared_ptr<counters> counters_ = std::make_shared<counters>();
};

}  // namespace nereus
