#pragma once

// temp_dir: a fresh directory under $TMPDIR (or /tmp), removed with its contents on destruction.

#include <cstdlib>
#include <filesystem>
#include <string>

namespace nereus::storage::testing {

class temp_dir {
public:
    temp_dir() {
        const char* base = std::getenv("TMPDIR");
        std::string tmpl = std::string(base != nullptr ? base : "/tmp") + "/nereus-storage-XXXXXX";
        if (::mkdtemp(tmpl.data()) == nullptr) {
            std::abort();
        }
        path_ = tmpl;
    }
    temp_dir(const temp_dir&) = delete;
    temp_dir& operator=(const temp_dir&) = delete;
    ~temp_dir() {
        std::error_code ec;
        std::filesystem::remove_all(path_, ec);
    }
    [[nodiscard]] const std::string& path() const { return path_; }

private:
    std::string path_;
};

}  // namespace nereus::storage::testing
