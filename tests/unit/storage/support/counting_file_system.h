#pragma once

// counting_file_system: wraps another file_system and counts what the store does to it —
// file syncs per kind (journal / segment / other), directory syncs, live and peak open files —
// and can hold journal syncs at a gate, so tests can queue appends behind a commit in flight
// without timing assumptions.
//
// Thread-safety: thread-safe.

#include "nereus/base/file_system.h"

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>

namespace nereus::storage::testing {

class counting_file_system final : public file_system {
public:
    explicit counting_file_system(std::shared_ptr<file_system> inner) : inner_(std::move(inner)) {}

    std::atomic<std::uint64_t> journal_syncs{0};
    std::atomic<std::uint64_t> segment_syncs{0};
    std::atomic<std::uint64_t> other_syncs{0};
    std::atomic<std::uint64_t> dir_syncs{0};
    std::atomic<std::int64_t> open_files{0};
    std::atomic<std::int64_t> peak_open_files{0};
    std::atomic<std::uint64_t> opens{0};

    // Which syncs the gate holds: file or directory paths ending with this (default: journal
    // files; "/db/journal" holds the syncs of that directory).
    void set_gate_suffix(std::string suffix) {
        const std::lock_guard l(mu_);
        gate_suffix_ = std::move(suffix);
    }
    // While closed, gated syncs block (after counting `gate_waiters`) until open_gate().
    void close_gate() {
        const std::lock_guard l(mu_);
        gate_open_ = false;
    }
    void open_gate() {
        {
            const std::lock_guard l(mu_);
            gate_open_ = true;
        }
        cv_.notify_all();
    }
    // Waits until a journal sync is blocked at the gate.
    void wait_for_gate_waiter() {
        std::unique_lock l(mu_);
        cv_.wait(l, [&] { return gate_waiters_ > 0; });
    }
    void reset_peak() { peak_open_files.store(open_files.load()); }

    result<std::unique_ptr<file>> open(const std::string& path, open_mode mode) override {
        auto f = inner_->open(path, mode);
        if (!f) {
            return f;
        }
        ++opens;
        const auto now = ++open_files;
        auto peak = peak_open_files.load();
        while (now > peak && !peak_open_files.compare_exchange_weak(peak, now)) {
        }
        return std::unique_ptr<file>(std::make_unique<counted_file>(this, std::move(*f), path));
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
    result<void> sync_dir(const std::string& p) override {
        maybe_pass_gate(p);
        ++dir_syncs;
        return inner_->sync_dir(p);
    }
    result<void> sync_all(const std::string& p) override { return inner_->sync_all(p); }
    result<std::vector<std::string>> list_dir(const std::string& p) override {
        return inner_->list_dir(p);
    }
    result<bool> exists(const std::string& p) override { return inner_->exists(p); }
    result<bool> is_dir(const std::string& p) override { return inner_->is_dir(p); }
    result<std::uint64_t> file_size(const std::string& p) override { return inner_->file_size(p); }

private:
    class counted_file final : public file {
    public:
        counted_file(counting_file_system* fs, std::unique_ptr<file> inner, std::string path)
            : fs_(fs), inner_(std::move(inner)), path_(std::move(path)) {}
        ~counted_file() override { --fs_->open_files; }
        result<void> write_at(std::uint64_t o, bytes_view d) override {
            return inner_->write_at(o, d);
        }
        result<void> writev_at(std::uint64_t o, std::span<const bytes_view> p) override {
            return inner_->writev_at(o, p);
        }
        result<std::size_t> read_at(std::uint64_t o, std::span<std::byte> out) override {
            return inner_->read_at(o, out);
        }
        result<void> sync() override {
            fs_->maybe_pass_gate(path_);
            if (path_.ends_with(".journal")) {
                ++fs_->journal_syncs;
            } else if (path_.ends_with(".log")) {
                ++fs_->segment_syncs;
            } else {
                ++fs_->other_syncs;
            }
            return inner_->sync();
        }
        result<std::uint64_t> size() override { return inner_->size(); }
        result<void> truncate(std::uint64_t s) override { return inner_->truncate(s); }
        result<void> preallocate(std::uint64_t s) override { return inner_->preallocate(s); }

    private:
        counting_file_system* fs_;
        std::unique_ptr<file> inner_;
        std::string path_;
    };

    void maybe_pass_gate(const std::string& path) {
        std::unique_lock l(mu_);
        if (gate_open_ || !path.ends_with(gate_suffix_)) {
            return;
        }
        ++gate_waiters_;
        cv_.notify_all();
        cv_.wait(l, [&] { return gate_open_; });
        --gate_waiters_;
    }

    std::shared_ptr<file_system> inner_;
    std::mutex mu_;
    std::condition_variable cv_;
    bool gate_open_ = true;
    std::string gate_suffix_ = ".journal";
    int gate_waiters_ = 0;
};

}  // namespace nereus::storage::testing
