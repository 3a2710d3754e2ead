#pragma once

// Fixtures and helpers for the objects tests. Suite names start with "objects_" so that
// `ctest -R objects` selects them. ObjectStore runs each test against both file
// systems: the real one (POSIX, in a temp directory) and the in-memory fault_file_system with
// no faults armed, so the fault tests and the real disk agree on the protocol.
//
// Thread-safety: thread-compatible (one test at a time).

#include "nereus/base/fault_file_system.h"
#include "nereus/base/file_system.h"
#include "nereus/objects/errc.h"
#include "nereus/objects/fs_object_store.h"
#include "nereus/objects/object_format.h"
#include "nereus/objects/object_name.h"

#include <gtest/gtest.h>

#include "unit/objects/support/temp_dir.h"
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace nereus::objects::testing {

inline std::vector<std::byte> to_bytes(std::string_view s) {
    const auto* p = reinterpret_cast<const std::byte*>(s.data());
    return {p, p + s.size()};
}

inline std::string to_string(const std::vector<std::byte>& b) {
    return {reinterpret_cast<const char*>(b.data()), b.size()};
}

// `n` bytes of a deterministic pattern that differs per `seed`.
inline std::vector<std::byte> pattern(std::size_t n, unsigned seed = 1) {
    std::vector<std::byte> out(n);
    std::uint32_t x = 2654435761U * (seed + 1);
    for (auto& b : out) {
        x = x * 1664525U + 1013904223U;
        b = static_cast<std::byte>(x >> 24);
    }
    return out;
}

// The error of `r`, or an empty error_code when it holds a value (calling error() on a value
// is undefined behaviour, so tests compare this instead).
template <class T>
std::error_code error_of(const result<T>& r) {
    return r ? std::error_code() : r.error();
}

enum class backend { posix, memory };

inline std::string backend_name(const ::testing::TestParamInfo<backend>& info) {
    return info.param == backend::posix ? "Posix" : "Memory";
}

class ObjectStore : public ::testing::TestWithParam<backend> {
protected:
    void SetUp() override {
        if (GetParam() == backend::posix) {
            fs_ = posix_file_system();
        } else {
            fs_ = std::make_shared<fault_file_system>();
        }
        root_ = std::make_unique<temp_dir>(fs_);
        dir_ = path_join(root_->path(), "store");
        store_ = open_store();
        ASSERT_NE(store_, nullptr);
    }

    std::unique_ptr<fs_object_store> open_store() {
        auto opened = fs_object_store::open(fs_, dir_);
        EXPECT_TRUE(opened) << opened.error().message();
        return opened ? std::move(*opened) : nullptr;
    }

    std::string objects_dir() const { return path_join(dir_, std::string(objects_subdir)); }
    std::string temp_dir_path() const { return path_join(dir_, std::string(temp_subdir)); }
    std::string object_path(std::string_view name) const {
        return path_join(objects_dir(), object_file_name(name));
    }

    // Reads a whole file through the file system.
    std::vector<std::byte> read_file(const std::string& path) {
        auto f = fs_->open(path, open_mode::read_only);
        EXPECT_TRUE(f);
        auto size = (*f)->size();
        std::vector<std::byte> out(*size);
        auto n = (*f)->read_at(0, out);
        EXPECT_TRUE(n);
        out.resize(*n);
        return out;
    }

    // Writes a whole new file (replacing any old one) through the file system.
    void write_file(const std::string& path, const std::vector<std::byte>& bytes) {
        auto f = fs_->open(path, open_mode::create);
        ASSERT_TRUE(f);
        ASSERT_TRUE((*f)->truncate(0));
        ASSERT_TRUE((*f)->write_at(0, bytes));
        ASSERT_TRUE((*f)->sync());
    }

    std::shared_ptr<file_system> fs_;
    std::unique_ptr<temp_dir> root_;
    std::string dir_;
    std::unique_ptr<fs_object_store> store_;
};

}  // namespace nereus::objects::testing
