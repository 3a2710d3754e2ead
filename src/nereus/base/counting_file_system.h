#pragma once

// A file_system decorator that counts what passes through it: bytes written and file syncs.
// The benchmarks use it to report bytes written per operation and to prove how many
// fdatasyncs a workload really issued (a throughput figure alone cannot show a skipped sync).
//
// Ownership: shares `inner`; files opened through it share the counters, so counts stay valid
// after a file outlives the decorator.
// Thread-safety: thread-safe (atomic counters; everything else forwards to `inner`).

#include "nereus/base/forwarding_file_system.h"

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace nereus {

class counting_file_system final : public forwarding_file_system {
public:
    explicit counting_file_system(std::shared_ptr<file_system> inner)
        : forwarding_file_system(std::move(inner)) {}

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

private:
    struct counters {
        std::atomic<std::uint64_t> bytes{0};
        std::atomic<std::uint64_t> syncs{0};
    };

    class counting_file final : public forwarding_file {
    public:
        counting_file(std::unique_ptr<file> f, std::shared_ptr<counters> n)
            : forwarding_file(std::move(f)), n_(std::move(n)) {}
        result<void> write_at(std::uint64_t o, bytes_view d) override {
            n_->bytes.fetch_add(d.size());
            return inner_->write_at(o, d);
        }
        result<void> writev_at(std::uint64_t o, std::span<const bytes_view> parts) override {
            std::uint64_t n = 0;
            for (const auto& p : parts) {
                n += p.size();
            }
            n_->bytes.fetch_add(n);
            return inner_->writev_at(o, parts);
        }
        result<void> sync() override {
            n_->syncs.fetch_add(1);
            return inner_->sync();
        }

    private:
        std::shared_ptr<counters> n_;
    };

    std::shared_ptr<counters> counters_ = std::make_shared<counters>();
};

}  // namespace nereus
