#include "nereus/objects/fs_object_store.h"

#include "nereus/objects/errc.h"
#include "nereus/objects/logger.h"
#include "nereus/objects/object_file.h"
#include "nereus/objects/object_format.h"
#include "nereus/objects/object_name.h"

#include <fmt/format.h>

#include <algorithm>
#include <random>
#include <utility>

namespace nereus::objects {
namespace {

// How often create_temp_file() draws a new name after EEXIST before giving up; a collision
// needs two stores with the same random salt, so one retry is already paranoid.
constexpr int temp_name_attempts = 4;

bool is_not_found(const std::error_code& ec) {
    return ec == std::errc::no_such_file_or_directory;
}
bool is_exists(const std::error_code& ec) {
    return ec == std::errc::file_exists;
}

std::uint64_t random_salt() {
    std::random_device device;
    return (std::uint64_t{device()} << 32) ^ device();
}

// Maps a verdict of read_object_file() to the error get() and put_if_absent() return, and
// logs it with the object's name and the reason.
std::error_code report_corruption(std::string_view name,
                                  const std::string& path,
                                  const corruption& c) {
    NEREUS_LOG(objects_log(), err, "corrupt object name={} path={} reason={} detail={}", name, path,
               to_string(c.reason), c.detail);
    return c.reason == corruption_reason::unsupported_version
               ? make_error_code(errc::unsupported_version)
               : make_error_code(errc::corrupt_object);
}

}  // namespace

const char* to_string(put_outcome outcome) {
    switch (outcome) {
        case put_outcome::created:
            return "created";
        case put_outcome::already_exists_same:
            return "already_exists_same";
        case put_outcome::already_exists_different:
            return "already_exists_different";
    }
    return "unknown";
}

fs_object_store::fs_object_store(std::shared_ptr<file_system> fs, std::string dir)
    : fs_(std::move(fs)),
      dir_(std::move(dir)),
      objects_dir_(path_join(dir_, std::string(objects_subdir))),
      temp_dir_(path_join(dir_, std::string(temp_subdir))),
      temp_salt_(random_salt()) {}

result<std::unique_ptr<fs_object_store>> fs_object_store::open(std::shared_ptr<file_system> fs,
                                                               const std::string& dir) {
    if (fs == nullptr || dir.empty()) {
        return error(std::errc::invalid_argument);
    }
    std::unique_ptr<fs_object_store> store(new fs_object_store(std::move(fs), dir));
    file_system& f = *store->fs_;
    NEREUS_TRY(f.create_dirs(store->objects_dir_));
    NEREUS_TRY(f.create_dirs(store->temp_dir_));

    // Every temp file belongs to a put that never reached its rename: it was never visible,
    // and no caller was told it is durable, so deleting it is always safe.
    auto leftovers = f.list_dir(store->temp_dir_);
    if (!leftovers) {
        return error(leftovers.error());
    }
    for (const auto& entry : *leftovers) {
        const auto path = path_join(store->temp_dir_, entry);
        auto is_dir = f.is_dir(path);
        if (!is_dir) {
            return error(is_dir.error());
        }
        if (*is_dir) {
            NEREUS_LOG(objects_log(), warn, "skipping unexpected directory {} in temp dir", path);
            continue;
        }
        NEREUS_TRY(f.remove(path));
        ++store->temp_files_removed_on_open_;
    }
    if (store->temp_files_removed_on_open_ > 0) {
        NEREUS_TRY(f.sync_dir(store->temp_dir_));
    }
    // A process that crashed between its rename and its directory sync left a visible but not
    // yet durable object; make it durable before serving it.
    NEREUS_TRY(f.sync_dir(store->objects_dir_));
    NEREUS_LOG(objects_log(), info, "object store opened dir={} temp_files_removed={}", store->dir_,
               store->temp_files_removed_on_open_);
    return store;
}

std::string fs_object_store::object_path(std::string_view name) const {
    return path_join(objects_dir_, object_file_name(name));
}

result<std::pair<std::string, std::unique_ptr<file>>> fs_object_store::create_temp_file() {
    std::error_code last;
    for (int attempt = 0; attempt < temp_name_attempts; ++attempt) {
        const auto id = next_temp_id_.fetch_add(1, std::memory_order_relaxed);
        auto path =
            path_join(temp_dir_, fmt::format("{:016x}-{:08x}{}",
                                             temp_salt_ ^ static_cast<std::uint64_t>(attempt), id,
                                             temp_suffix));
        auto opened = fs_->open(path, open_mode::create_exclusive);
        if (opened) {
            return std::make_pair(std::move(path), std::move(*opened));
        }
        last = opened.error();
        if (!is_exists(last)) {
            break;
        }
    }
    return error(last);
}

void fs_object_store::discard_temp_file(const std::string& path) {
    if (auto removed = fs_->remove(path); !removed && !is_not_found(removed.error())) {
        NEREUS_LOG(objects_log(), warn, "cannot remove temp file {}: {}", path,
                   removed.error().message());
    }
}

result<std::optional<put_outcome>> fs_object_store::compare_existing(std::string_view name,
                                                                     const std::string& path,
                                                                     bytes_view bytes) {
    auto read = read_object_file(*fs_, path, name);
    if (!read) {
        if (is_not_found(read.error())) {
            return std::optional<put_outcome>();
        }
        return error(read.error());
    }
    if (!*read) {
        return error(report_corruption(name, path, read->error()));
    }
    const auto& stored = (*read)->bytes;
    if (!std::equal(stored.begin(), stored.end(), bytes.begin(), bytes.end())) {
        return std::optional<put_outcome>(put_outcome::already_exists_different);
    }
    // The object may have been renamed into place by a put that has not yet synced the
    // directory (a concurrent put, or a process that died); this caller is told "durable".
    NEREUS_TRY(fs_->sync_dir(objects_dir_));
    return std::optional<put_outcome>(put_outcome::already_exists_same);
}

result<put_outcome> fs_object_store::put_if_absent(std::string_view name, bytes_view bytes) {
    NEREUS_TRY(validate_object_name(name));
    if (bytes.size() > max_object_size) {
        return error(errc::object_too_large);
    }
    const auto path = object_path(name);
    // Usually one pass. A second happens only when the name appears between our existence
    // check and our rename and then disappears again (a concurrent put and remove).
    for (;;) {
        auto existing = compare_existing(name, path, bytes);
        if (!existing) {
            return error(existing.error());
        }
        if (*existing) {
            return **existing;
        }

        auto temp = create_temp_file();
        if (!temp) {
            return error(temp.error());
        }
        auto& [temp_path, temp_file] = *temp;
        auto written = write_object_file(*temp_file, name, bytes);
        temp_file.reset();
        if (!written) {
            // After a failed sync the file's bytes are unknown; it is never renamed.
            NEREUS_LOG(objects_log(), warn, "put failed writing temp file name={} path={}: {}",
                       name, temp_path, written.error().message());
            discard_temp_file(temp_path);
            return error(written.error());
        }
        auto renamed = fs_->rename_noreplace(temp_path, path);
        if (!renamed) {
            discard_temp_file(temp_path);
            if (is_exists(renamed.error())) {
                continue;  // a concurrent put won: compare with its object
            }
            return error(renamed.error());
        }
        if (auto synced = fs_->sync_dir(objects_dir_); !synced) {
            // The object is visible but its name may not be durable. Take it back so the
            // error means "absent" now; if the removal fails too, the name holds the complete
            // object (applied, maybe not durable), which is still never corrupt.
            NEREUS_LOG(objects_log(), warn, "put failed syncing {} name={}: {}", objects_dir_, name,
                       synced.error().message());
            if (auto removed = fs_->remove(path); !removed) {
                NEREUS_LOG(objects_log(), warn, "cannot take back object {} at {}: {}", name, path,
                           removed.error().message());
            }
            return error(synced.error());
        }
        return put_outcome::created;
    }
}

result<object> fs_object_store::get(std::string_view name) {
    NEREUS_TRY(validate_object_name(name));
    const auto path = object_path(name);
    auto read = read_object_file(*fs_, path, name);
    if (!read) {
        if (is_not_found(read.error())) {
            return error(errc::not_found);
        }
        return error(read.error());
    }
    if (!*read) {
        return error(report_corruption(name, path, read->error()));
    }
    return std::move(**read);
}

result<void> fs_object_store::remove(std::string_view name) {
    NEREUS_TRY(validate_object_name(name));
    if (auto removed = fs_->remove(object_path(name)); !removed) {
        if (is_not_found(removed.error())) {
            return error(errc::not_found);
        }
        return error(removed.error());
    }
    return fs_->sync_dir(objects_dir_);
}

result<std::vector<std::string>> fs_object_store::list(std::string_view prefix) {
    auto entries = fs_->list_dir(objects_dir_);
    if (!entries) {
        return error(entries.error());
    }
    std::vector<std::string> names;
    for (const auto& entry : *entries) {
        auto name = object_name_from_file_name(entry);
        if (!name) {
            // A stray file; verify() reports it.
            NEREUS_LOG(objects_log(), debug, "list skips stray file {}/{}", objects_dir_, entry);
            continue;
        }
        if (std::string_view(*name).starts_with(prefix)) {
            names.push_back(std::move(*name));
        }
    }
    // Escaping changes the byte order ('+' sorts before '-' and '.', '/' after), so the
    // sorted directory listing must be sorted again by logical name.
    std::sort(names.begin(), names.end());
    return names;
}

}  // namespace nereus::objects
