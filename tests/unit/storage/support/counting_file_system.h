#pragma once

// counting_file_system: wraps another file_system and counts what the store does to it —
// file syncs per kind (journal / segment / other), directory syncs, live and peak open files —
// and can hold journal syncs at a gate, so tests can queue appends behind a commit in flight
// without timing assumptions.
//
// Thread-safety: thread-safe.

#include "nereus/base/forwarding_file_system.h"

#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <pthread.h>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace nereus::storage::testing {

class counting_file_system final : public forwarding_file_system {
public:
    explicit counting_file_system(std::shared_ptr<file_system> inner)
        : forwarding_file_system(std::move(inner)) {}

    std::atomic<std::uint64_t> journal_syncs{0};
    std::atomic<std::uint64_t> segment_syncs{0};
    std::atomic<std::uint64_t> other_syncs{0};
    std::atomic<std::uint64_t> dir_syncs{0};
    std::atomic<std::int64_t> open_files{0};
    std::atomic<std::int64_t> peak_open_files{0};
    std::atomic<std::uint64_t> opens{0};
    // start_writeback() calls on segment files (".log"): offset and length, in call order.
    // The names of the threads that made them.
    std::set<std::string> segment_writeback_threads() {
        const std::lock_guard l(mu_);
        return segment_writeback_threads_;
    }
    std::vector<std::pair<std::uint64_t, std::uint64_t>> segment_writebacks() {
        const std::lock_guard l(mu_);
        return segment_writebacks_;
    }

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
    // Waits (bounded: 60 s) until a journal sync is blocked at the gate.
    void wait_for_gate_waiter() {
        std::unique_lock l(mu_);
        if (!cv_.wait_for(l, std::chrono::seconds(60), [&] { return gate_waiters_ > 0; })) {
            ADD_FAILURE() << "no sync reached the gate in 60 s";
        }
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
    result<void> sync_dir(const std::string& p) override {
        maybe_pass_gate(p);
        ++dir_syncs;
        return inner_->sync_dir(p);
    }

private:
    class counted_file final : public forwarding_file {
    public:
        counted_file(counting_file_system* fs, std::unique_ptr<file> inner, std::string path)
            : forwarding_file(std::move(inner)), fs_(fs), path_(std::move(path)) {}
        ~counted_file() override { --fs_->open_files; }
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
        result<void> start_writeback(std::uint64_t offset, std::uint64_t len) override {
            if (path_.ends_with(".log")) {
                std::array<char, 16> name{};
                (void)pthread_getname_np(pthread_self(), name.data(), name.size());
                const std::lock_guard l(fs_->mu_);
                fs_->segment_writebacks_.emplace_back(offset, len);
                fs_->segment_writeback_threads_.emplace(name.data());
            }
            return inner_->start_writeback(offset, len);
        }

    private:
        counting_file_system* fs_;
        std::string path_;
    };

    void maybe_pass_gate(const std::string& path) {
        std::unique_lock l(mu_);
        if (gate_open_ || !path.ends_with(gate_suffix_)) {
            return;
        }
        ++gate_waiters_;
        cv_.notify_all();
        // Bounded: a test that failed with the gate closed still ends.
        if (!cv_.wait_for(l, std::chrono::seconds(60), [&] { return gate_open_; })) {
            ADD_FAILURE() << "a sync was held at the gate for 60 s";
            gate_open_ = true;
            cv_.notify_all();
        }
        --gate_waiters_;
    }

    std::mutex mu_;
    std::condition_variable cv_;
    bool gate_open_ = true;
    std::string gate_suffix_ = ".journal";
    int gate_waiters_ = 0;
    std::vector<std::pair<std::uint64_t, std::uint64_t>> segment_writebacks_;
    std::set<std::string> segment_writeback_threads_;
};

}  // namespace nereus::storage::testing
