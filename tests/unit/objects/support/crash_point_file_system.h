#pragma once

// A file_system that forwards to a fault_file_system and crashes it right after the k-th
// mutating operation (open that may create, write, sync, truncate, rename, remove, create_dir,
// sync_dir, ...). It lets a test stop a multi-step protocol between any two of its steps,
// where fault_file_system::crash_after_bytes() only stops it inside a write.
//
// Ownership: shares the inner file system. Thread-safety: thread-safe (the counter is
// atomic; the inner file system is thread-safe).

#include "nereus/base/fault_file_system.h"
#include "nereus/base/file_system.h"

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace nereus::objects::testing {

class crash_point_file_system final : public file_system {
public:
    explicit crash_point_file_system(std::shared_ptr<fault_file_system> inner)
        : inner_(std::move(inner)) {}

    // Counts mutating operations from now on and crashes the inner file system right after
    // the k-th one completes; k == 0 crashes it now. nullopt disarms.
    void crash_after_ops(std::optional<std::uint64_t> k) {
        ops_ = 0;
        limit_ = k ? static_cast<std::int64_t>(*k) : -1;
        if (k && *k == 0) {
            inner_->crash_now();
        }
    }
    // Mutating operations since the last crash_after_ops().
    std::uint64_t ops() const { return ops_.load(); }

    fault_file_system& inner() { return *inner_; }

    result<std::unique_ptr<file>> open(const std::string& path, open_mode mode) override {
        auto r = inner_->open(path, mode);
        if (mode != open_mode::read_only && mode != open_mode::read_write) {
            note_op();
        }
        if (!r) {
            return r;
        }
        return std::unique_ptr<file>(std::make_unique<counted_file>(this, std::move(*r)));
    }
    result<void> remove(const std::string& path) override { return counted(inner_->remove(path)); }
    result<void> rename(const std::string& from, const std::string& to) override {
        return counted(inner_->rename(from, to));
    }
    result<void> rename_noreplace(const std::string& from, const std::string& to) override {
        return counted(inner_->rename_noreplace(from, to));
    }
    result<void> create_dir(const std::string& path) override {
        return counted(inner_->create_dir(path));
    }
    result<void> create_dirs(const std::string& path) override {
        return counted(inner_->create_dirs(path));
    }
    result<void> remove_dir(const std::string& path) override {
        return counted(inner_->remove_dir(path));
    }
    result<void> sync_dir(const std::string& path) override {
        return counted(inner_->sync_dir(path));
    }
    result<void> sync_all(const std::string& path) override {
        return counted(inner_->sync_all(path));
    }
    result<std::vector<std::string>> list_dir(const std::string& path) override {
        return inner_->list_dir(path);
    }
    result<bool> exists(const std::string& path) override { return inner_->exists(path); }
    result<bool> is_dir(const std::string& path) override { return inner_->is_dir(path); }
    result<std::uint64_t> file_size(const std::string& path) override {
        return inner_->file_size(path);
    }

private:
    class counted_file final : public file {
    public:
        counted_file(crash_point_file_system* owner, std::unique_ptr<file> inner)
            : owner_(owner), inner_(std::move(inner)) {}
        result<void> write_at(std::uint64_t offset, bytes_view data) override {
            return owner_->counted(inner_->write_at(offset, data));
        }
        result<void> writev_at(std::uint64_t offset, std::span<const bytes_view> parts) override {
            return owner_->counted(inner_->writev_at(offset, parts));
        }
        result<std::size_t> read_at(std::uint64_t offset, std::span<std::byte> out) override {
            return inner_->read_at(offset, out);
        }
        result<void> sync() override { return owner_->counted(inner_->sync()); }
        result<std::uint64_t> size() override { return inner_->size(); }
        result<void> truncate(std::uint64_t size) override {
            return owner_->counted(inner_->truncate(size));
        }
        result<void> preallocate(std::uint64_t size) override {
            return owner_->counted(inner_->preallocate(size));
        }

    private:
        crash_point_file_system* owner_;
        std::unique_ptr<file> inner_;
    };

    template <class R>
    R counted(R r) {
        note_op();
        return r;
    }
    void note_op() {
        const auto n = static_cast<std::int64_t>(++ops_);
        if (n == limit_.load()) {
            inner_->crash_now();
        }
    }

    std::shared_ptr<fault_file_system> inner_;
    std::atomic<std::uint64_t> ops_{0};
    std::atomic<std::int64_t> limit_{-1};
};

}  // namespace nereus::objects::testing
