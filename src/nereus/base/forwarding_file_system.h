#pragma once

// A file_system (and file) that passes every call to an inner one: the base of the wrappers
// that observe or alter a few calls (counting, gating, recording, fault injection), which
// override only those. open_direct() is deliberately not forwarded: file_system's default
// emulates it on this wrapper's open() and sync(), so a wrapper observes (and can fault) the
// writes and syncs of a direct file too.
//
// Ownership: shares the inner file system; a forwarding_file owns its inner file.
// Thread-safety: as the inner one. Durability: exactly the inner one's.

#include "nereus/base/file_system.h"

#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace nereus {

class forwarding_file : public file {
public:
    explicit forwarding_file(std::unique_ptr<file> inner) : inner_(std::move(inner)) {}

    result<void> write_at(std::uint64_t o, bytes_view d) override { return inner_->write_at(o, d); }
    result<void> writev_at(std::uint64_t o, std::span<const bytes_view> p) override {
        return inner_->writev_at(o, p);
    }
    result<std::size_t> read_at(std::uint64_t o, std::span<std::byte> out) override {
        return inner_->read_at(o, out);
    }
    // Forwarded: a wrapper that alters read_at() must override this too (or make it fail
    // with operation_would_block), or nowait reads would bypass it.
    result<std::size_t> read_at_nowait(std::uint64_t o, std::span<std::byte> out) override {
        return inner_->read_at_nowait(o, out);
    }
    result<void> sync() override { return inner_->sync(); }
    result<std::uint64_t> size() override { return inner_->size(); }
    result<void> truncate(std::uint64_t s) override { return inner_->truncate(s); }
    result<void> preallocate(std::uint64_t s) override { return inner_->preallocate(s); }
    result<void> start_writeback(std::uint64_t o, std::uint64_t n) override {
        return inner_->start_writeback(o, n);
    }
    result<void> drop_cached(std::uint64_t o, std::uint64_t n) override {
        return inner_->drop_cached(o, n);
    }

protected:
    std::unique_ptr<file> inner_;
};

class forwarding_file_system : public file_system {
public:
    explicit forwarding_file_system(std::shared_ptr<file_system> inner)
        : inner_(std::move(inner)) {}

    result<std::unique_ptr<file>> open(const std::string& p, open_mode m) override {
        return inner_->open(p, m);
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

protected:
    std::shared_ptr<file_system> inner_;
};

}  // namespace nereus
