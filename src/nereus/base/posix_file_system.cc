// The real file system behind the seam of file_system.h.

#include "nereus/base/file_system.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <fcntl.h>
#include <filesystem>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

namespace nereus {
namespace {

result<void> ok() {
    return {};
}

// Opens the directory `path` and applies `sync` (fsync: its entries; syncfs: its file system).
result<void> sync_directory(const std::string& path, int (*sync)(int)) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) {
        return errno_error(errno);
    }
    const int rc = sync(fd);
    const int err = errno;
    ::close(fd);
    if (rc != 0) {
        return errno_error(err);
    }
    return ok();
}

class posix_file final : public file {
public:
    explicit posix_file(int fd) : fd_(fd) {}
    ~posix_file() override { ::close(fd_); }

    result<void> write_at(std::uint64_t offset, bytes_view data) override {
        const auto* p = data.data();
        std::size_t left = data.size();
        while (left > 0) {
            const ssize_t n = ::pwrite(fd_, p, left, static_cast<off_t>(offset));
            if (n < 0) {
                if (errno == EINTR) {
                    continue;
                }
                return errno_error(errno);
            }
            p += n;
            left -= static_cast<std::size_t>(n);
            offset += static_cast<std::uint64_t>(n);
        }
        return ok();
    }

    result<void> writev_at(std::uint64_t offset, std::span<const bytes_view> parts) override {
        // pwritev in chunks of IOV_MAX; a short write resumes from the byte it stopped at.
        constexpr std::size_t kMaxIov = 1024;
        std::array<iovec, kMaxIov> iov{};
        std::size_t idx = 0;
        std::size_t skip = 0;  // bytes of parts[idx] already written
        while (idx < parts.size()) {
            std::size_t cnt = 0;
            for (std::size_t i = idx; i < parts.size() && cnt < kMaxIov; ++i) {
                const std::size_t s = (i == idx) ? skip : 0;
                if (parts[i].size() == s) {
                    continue;
                }
                // NOLINTNEXTLINE(cppcoreguidelines-pro-type-const-cast): iovec is not const
                iov[cnt].iov_base = const_cast<std::byte*>(parts[i].data() + s);
                iov[cnt].iov_len = parts[i].size() - s;
                ++cnt;
            }
            if (cnt == 0) {
                break;
            }
            const ssize_t n =
                ::pwritev(fd_, iov.data(), static_cast<int>(cnt), static_cast<off_t>(offset));
            if (n < 0) {
                if (errno == EINTR) {
                    continue;
                }
                return errno_error(errno);
            }
            offset += static_cast<std::uint64_t>(n);
            auto left = static_cast<std::size_t>(n);
            while (idx < parts.size() && left >= parts[idx].size() - skip) {
                left -= parts[idx].size() - skip;
                skip = 0;
                ++idx;
            }
            skip += left;
        }
        return ok();
    }

    result<std::size_t> read_at(std::uint64_t offset, std::span<std::byte> out) override {
        std::size_t done = 0;
        while (done < out.size()) {
            const ssize_t n = ::pread(fd_, out.data() + done, out.size() - done,
                                      static_cast<off_t>(offset + done));
            if (n < 0) {
                if (errno == EINTR) {
                    continue;
                }
                return errno_error(errno);
            }
            if (n == 0) {
                break;
            }
            done += static_cast<std::size_t>(n);
        }
        return done;
    }

    result<std::size_t> read_at_nowait(std::uint64_t offset, std::span<std::byte> out) override {
        if (nowait_unsupported_.load(std::memory_order_relaxed)) {
            return error(std::errc::operation_would_block);
        }
        // RWF_NOWAIT: EAGAIN instead of waiting for the disk. A short count may mean end of
        // file or that only a prefix is cached: the loop asks again for the rest, and only a
        // 0 (end of file) or an EAGAIN ends it, so the count is read_at()'s.
        std::size_t done = 0;
        while (done < out.size()) {
            iovec iov{out.data() + done, out.size() - done};
            const ssize_t n =
                ::preadv2(fd_, &iov, 1, static_cast<off_t>(offset + done), RWF_NOWAIT);
            if (n < 0) {
                if (errno == EINTR) {
                    continue;
                }
                if (errno == EAGAIN) {
                    return error(std::errc::operation_would_block);
                }
                if (errno == EOPNOTSUPP) {
                    nowait_unsupported_.store(true, std::memory_order_relaxed);
                    return error(std::errc::operation_would_block);
                }
                return errno_error(errno);
            }
            if (n == 0) {
                break;
            }
            done += static_cast<std::size_t>(n);
        }
        return done;
    }

    result<void> sync() override {
        if (::fdatasync(fd_) != 0) {
            return errno_error(errno);
        }
        return ok();
    }

    result<std::uint64_t> size() override {
        struct stat st {};
        if (::fstat(fd_, &st) != 0) {
            return errno_error(errno);
        }
        return static_cast<std::uint64_t>(st.st_size);
    }

    result<void> truncate(std::uint64_t size) override {
        if (::ftruncate(fd_, static_cast<off_t>(size)) != 0) {
            return errno_error(errno);
        }
        return ok();
    }

    result<void> preallocate(std::uint64_t size) override {
        if (::fallocate(fd_, FALLOC_FL_KEEP_SIZE, 0, static_cast<off_t>(size)) != 0 &&
            errno != EOPNOTSUPP) {
            return errno_error(errno);
        }
        return ok();
    }

    result<void> start_writeback(std::uint64_t offset, std::uint64_t len) override {
        if (::sync_file_range(fd_, static_cast<off64_t>(offset), static_cast<off64_t>(len),
                              SYNC_FILE_RANGE_WRITE) != 0 &&
            errno != ENOSYS && errno != EOPNOTSUPP && errno != EINVAL) {
            return errno_error(errno);
        }
        return ok();
    }

    result<void> drop_cached(std::uint64_t offset, std::uint64_t len) override {
        const int e = ::posix_fadvise(fd_, static_cast<off_t>(offset), static_cast<off_t>(len),
                                      POSIX_FADV_DONTNEED);
        if (e != 0 && e != ESPIPE) {
            return errno_error(e);
        }
        return ok();
    }

private:
    int fd_;
    std::atomic<bool> nowait_unsupported_{false};  // preadv2(RWF_NOWAIT) gave EOPNOTSUPP
};

class posix_fs final : public file_system {
public:
    result<std::unique_ptr<file>> open(const std::string& path, open_mode mode) override {
        int flags = O_CLOEXEC;
        switch (mode) {
            case open_mode::read_only:
                flags |= O_RDONLY;
                break;
            case open_mode::read_write:
                flags |= O_RDWR;
                break;
            case open_mode::create:
                flags |= O_RDWR | O_CREAT;
                break;
            case open_mode::create_exclusive:
                flags |= O_RDWR | O_CREAT | O_EXCL;
                break;
        }
        const int fd = ::open(path.c_str(), flags, 0644);
        if (fd < 0) {
            return errno_error(errno);
        }
        return std::make_unique<posix_file>(fd);
    }

    result<std::unique_ptr<file>> open_direct(const std::string& path) override {
        const int fd = ::open(path.c_str(), O_RDWR | O_DIRECT | O_DSYNC | O_CLOEXEC);
        if (fd < 0) {
            return errno_error(errno);
        }
        return std::make_unique<posix_file>(fd);
    }

    result<void> remove(const std::string& path) override {
        if (::unlink(path.c_str()) != 0) {
            return errno_error(errno);
        }
        return ok();
    }

    result<void> rename(const std::string& from, const std::string& to) override {
        if (::rename(from.c_str(), to.c_str()) != 0) {
            return errno_error(errno);
        }
        return ok();
    }

    result<void> rename_noreplace(const std::string& from, const std::string& to) override {
        if (::renameat2(AT_FDCWD, from.c_str(), AT_FDCWD, to.c_str(), RENAME_NOREPLACE) != 0) {
            return errno_error(errno);
        }
        return ok();
    }

    result<void> create_dir(const std::string& path) override {
        if (::mkdir(path.c_str(), 0755) != 0) {
            return errno_error(errno);
        }
        return ok();
    }

    result<void> create_dirs(const std::string& path) override {
        if (path.empty()) {
            return ok();
        }
        auto is = is_dir(path);
        if (is && *is) {
            return ok();
        }
        const std::string parent = path_parent(path);
        if (parent != path) {
            NEREUS_TRY(create_dirs(parent));
        }
        if (auto r = create_dir(path); !r && r.error() != std::errc::file_exists) {
            return r;
        }
        return sync_dir(parent);
    }

    result<void> remove_dir(const std::string& path) override {
        if (::rmdir(path.c_str()) != 0) {
            return errno_error(errno);
        }
        return ok();
    }

    result<void> sync_all(const std::string& path) override {
        return sync_directory(path, ::syncfs);
    }

    result<void> sync_dir(const std::string& path) override {
        return sync_directory(path, ::fsync);
    }

    result<std::vector<std::string>> list_dir(const std::string& path) override {
        std::error_code ec;
        std::vector<std::string> names;
        for (std::filesystem::directory_iterator it(path, ec), end; !ec && it != end;
             it.increment(ec)) {
            names.push_back(it->path().filename().string());
        }
        if (ec) {
            return error(ec);
        }
        std::sort(names.begin(), names.end());
        return names;
    }

    result<bool> exists(const std::string& path) override {
        struct stat st {};
        if (::stat(path.c_str(), &st) == 0) {
            return true;
        }
        if (errno == ENOENT || errno == ENOTDIR) {
            return false;
        }
        return errno_error(errno);
    }

    result<bool> is_dir(const std::string& path) override {
        struct stat st {};
        if (::stat(path.c_str(), &st) == 0) {
            return S_ISDIR(st.st_mode);
        }
        if (errno == ENOENT || errno == ENOTDIR) {
            return false;
        }
        return errno_error(errno);
    }

    result<std::uint64_t> file_size(const std::string& path) override {
        struct stat st {};
        if (::stat(path.c_str(), &st) != 0) {
            return errno_error(errno);
        }
        return static_cast<std::uint64_t>(st.st_size);
    }
};

}  // namespace

std::shared_ptr<file_system> posix_file_system() {
    static const std::shared_ptr<file_system> fs = std::make_shared<posix_fs>();
    return fs;
}

std::string path_join(const std::string& dir, const std::string& name) {
    if (dir.empty()) {
        return name;
    }
    if (dir.back() == '/') {
        return dir + name;
    }
    return dir + "/" + name;
}

std::string path_parent(const std::string& path) {
    std::string p = path;
    while (p.size() > 1 && p.back() == '/') {
        p.pop_back();
    }
    const auto pos = p.rfind('/');
    if (pos == std::string::npos) {
        return ".";
    }
    if (pos == 0) {
        return "/";
    }
    return p.substr(0, pos);
}

}  // namespace nereus
