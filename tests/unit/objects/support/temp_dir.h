#pragma once

// A fresh, uniquely named directory for one test, created and (recursively) removed through
// the file_system seam.
//
// Ownership: shares `fs`; owns the directory. Thread-safety: thread-compatible.

#include "nereus/base/file_system.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <unistd.h>

namespace nereus::objects::testing {

class temp_dir {
public:
    explicit temp_dir(std::shared_ptr<file_system> fs) : fs_(std::move(fs)) {
        static std::atomic<std::uint64_t> counter{0};
        std::random_device device;
        std::string base = ::testing::TempDir();
        if (base.empty()) {
            base = "/tmp/";
        }
        path_ = path_join(base, fmt::format("nereus-objects-{}-{}-{:08x}", ::getpid(),
                                            counter.fetch_add(1), device()));
        auto created = fs_->create_dirs(path_);
        EXPECT_TRUE(created) << path_ << ": " << created.error().message();
    }
    temp_dir(const temp_dir&) = delete;
    temp_dir& operator=(const temp_dir&) = delete;
    temp_dir(temp_dir&&) = delete;
    temp_dir& operator=(temp_dir&&) = delete;
    ~temp_dir() { remove_tree(path_); }

    const std::string& path() const { return path_; }

private:
    void remove_tree(const std::string& path) {
        auto is_dir = fs_->is_dir(path);
        if (!is_dir) {
            return;
        }
        if (!*is_dir) {
            (void)fs_->remove(path);
            return;
        }
        if (auto entries = fs_->list_dir(path)) {
            for (const auto& e : *entries) {
                remove_tree(path_join(path, e));
            }
        }
        (void)fs_->remove_dir(path);
    }

    std::shared_ptr<file_system> fs_;
    std::string path_;
};

}  // namespace nereus::objects::testing
