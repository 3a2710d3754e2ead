#pragma once

// object_store on a directory of a file_system: one file per object, written by the protocol
// write temp file -> sync -> rename_noreplace into place -> sync directory
// (doc/format/objects.md gives the layout, the file format and the recovery rules).
//
// Ownership: shares `fs` with its other users; owns the directory `dir`. Exactly one store may
//   have a directory open at a time (open() deletes temp files, which would fail a put of a
//   second store in flight); nothing enforces this.
// Thread-safety: thread-safe, without locks: concurrent puts of one name are resolved by
//   rename_noreplace.
// Durability: as object_store. In addition, open() syncs the objects directory, so an object
//   renamed into place by a process that died before its directory sync is durable before
//   this store serves it.

#include "nereus/base/file_system.h"
#include "nereus/base/result.h"
#include "nereus/objects/object_store.h"

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace nereus::objects {

class fs_object_store final : public object_store {
public:
    // Opens the store in `dir`, creating `dir`, `dir/objects` and `dir/tmp` durably if they
    // are missing, deleting leftover temp files (puts that never completed; they were never
    // visible) and syncing `dir/objects`. Objects themselves are verified lazily, by get();
    // use verify() for a full scan.
    [[nodiscard]] static result<std::unique_ptr<fs_object_store>> open(
        std::shared_ptr<file_system> fs, const std::string& dir);

    fs_object_store(const fs_object_store&) = delete;
    fs_object_store& operator=(const fs_object_store&) = delete;
    fs_object_store(fs_object_store&&) = delete;
    fs_object_store& operator=(fs_object_store&&) = delete;
    ~fs_object_store() override = default;

    [[nodiscard]] result<put_outcome> put_if_absent(std::string_view name,
                                                    bytes_view bytes) override;
    [[nodiscard]] result<object> get(std::string_view name) override;
    [[nodiscard]] result<void> remove(std::string_view name) override;
    [[nodiscard]] result<std::vector<std::string>> list(std::string_view prefix) override;

    const std::string& dir() const { return dir_; }
    // How many leftover temp files open() deleted.
    std::uint64_t temp_files_removed_on_open() const { return temp_files_removed_on_open_; }

private:
    fs_object_store(std::shared_ptr<file_system> fs, std::string dir);

    std::string object_path(std::string_view name) const;
    // Creates a new, empty temp file under a name no other put (of any store) uses.
    result<std::pair<std::string, std::unique_ptr<file>>> create_temp_file();
    // Compares `bytes` with the stored object `name`: nullopt when there is none.
    result<std::optional<put_outcome>> compare_existing(std::string_view name,
                                                        const std::string& path,
                                                        bytes_view bytes);
    // Best-effort removal of a temp file after a failed put; failures are only logged (the
    // file is invisible and the next open() deletes it).
    void discard_temp_file(const std::string& path);

    std::shared_ptr<file_system> fs_;
    std::string dir_;
    std::string objects_dir_;
    std::string temp_dir_;
    std::uint64_t temp_salt_;  // random per store, so temp names of two processes differ
    std::atomic<std::uint64_t> next_temp_id_{0};
    std::uint64_t temp_files_removed_on_open_ = 0;
};

}  // namespace nereus::objects
