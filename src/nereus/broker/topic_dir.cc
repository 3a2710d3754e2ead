#include "nereus/broker/topic_dir.h"

#include "nereus/broker/logger.h"

#include <cerrno>
#include <charconv>
#include <fcntl.h>
#include <filesystem>
#include <optional>
#include <unistd.h>

namespace nereus::broker {

namespace fs = std::filesystem;

namespace {

std::optional<std::uint64_t> generation_of(const std::string& name) {
    std::uint64_t n = 0;
    auto [p, ec] = std::from_chars(name.data(), name.data() + name.size(), n);
    if (ec != std::errc() || p != name.data() + name.size() || name.empty()) {
        return std::nullopt;
    }
    return n;
}

std::error_code fsync_path(const fs::path& p, bool directory) {
    const int fd = ::open(p.c_str(), (directory ? O_RDONLY | O_DIRECTORY : O_RDONLY) | O_CLOEXEC);
    if (fd < 0) {
        return {errno, std::generic_category()};
    }
    std::error_code ec;
    if (::fsync(fd) != 0) {
        ec = {errno, std::generic_category()};
    }
    ::close(fd);
    return ec;
}

std::error_code fsync_tree(const fs::path& root) {
    std::error_code ec;
    for (auto it = fs::recursive_directory_iterator(root, ec);
         !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
        if (auto e = fsync_path(it->path(), it->is_directory()); e) {
            return e;
        }
    }
    if (ec) {
        return ec;
    }
    return fsync_path(root, true);
}

}  // namespace

result<std::string> take_over_topic_dir(const std::string& topic_dir) {
    std::error_code ec;
    fs::create_directories(topic_dir, ec);
    if (ec) {
        return nereus::error(ec);
    }
    std::optional<std::uint64_t> newest;
    std::vector<fs::path> leftovers;
    std::vector<fs::path> generations;
    for (const auto& e : fs::directory_iterator(topic_dir, ec)) {
        const auto name = e.path().filename().string();
        if (name.ends_with(".tmp")) {
            leftovers.push_back(e.path());
        } else if (auto g = generation_of(name)) {
            generations.push_back(e.path());
            newest = std::max(newest.value_or(0), *g);
        }
    }
    if (ec) {
        return nereus::error(ec);
    }
    for (const auto& p : leftovers) {
        fs::remove_all(p, ec);
    }
    const std::uint64_t next = newest.value_or(0) + 1;
    const fs::path target = fs::path(topic_dir) / std::to_string(next);
    const fs::path tmp = fs::path(topic_dir) / (std::to_string(next) + ".tmp");
    if (newest) {
        fs::copy(fs::path(topic_dir) / std::to_string(*newest), tmp,
                 fs::copy_options::recursive | fs::copy_options::overwrite_existing, ec);
    } else {
        fs::create_directories(tmp, ec);
    }
    if (ec) {
        return nereus::error(ec);
    }
    if (auto e = fsync_tree(tmp); e) {
        return nereus::error(e);
    }
    fs::rename(tmp, target, ec);
    if (ec) {
        return nereus::error(ec);
    }
    if (auto e = fsync_path(topic_dir, true); e) {
        return nereus::error(e);
    }
    for (const auto& p : generations) {
        fs::remove_all(p, ec);  // best effort: a stale generation is never read again
    }
    NEREUS_LOG(broker_log(), info, "topic directory taken over: {} (generation {})", topic_dir,
               next);
    return target.string();
}

}  // namespace nereus::broker
