#pragma once

// Offline check of a file-system object store (`nereus storage verify`): reads and verifies
// every object file and reports each one that get() would refuse.
//
// Ownership: borrows `fs` for the duration of the call.
// Thread-safety: thread-safe; may run beside an open store (objects are immutable), but then
//   objects put or removed during the scan may or may not be seen.
// Durability: read-only; changes nothing (leftover temp files are reported, not deleted).

#include "nereus/base/file_system.h"
#include "nereus/base/result.h"
#include "nereus/objects/object_file.h"

#include <cstdint>
#include <string>
#include <system_error>
#include <vector>

namespace nereus::objects {

// One entry of dir/objects that is not a valid object.
struct corrupt_entry {
    std::string file_name;  // entry in dir/objects
    std::string name;       // the object name, empty when file_name is not an escaped name
    corruption_reason reason = corruption_reason::truncated;
    std::string detail;
};

// One entry that could not be read at all (an I/O error, not a verdict on its bytes).
struct unreadable_entry {
    std::string file_name;
    std::error_code error;
};

struct verify_report {
    std::uint64_t entries_checked = 0;  // entries of dir/objects examined
    std::uint64_t valid_objects = 0;
    std::uint64_t valid_payload_bytes = 0;
    std::vector<corrupt_entry> corrupt;            // sorted by file name
    std::vector<unreadable_entry> unreadable;      // sorted by file name
    std::vector<std::string> leftover_temp_files;  // harmless; the next open() deletes them

    bool ok() const { return corrupt.empty() && unreadable.empty(); }
};

// Verifies the store in `dir`. Errors: only when dir/objects (or dir/tmp, if present) cannot
// be listed; problems with single entries go into the report.
[[nodiscard]] result<verify_report> verify(file_system& fs, const std::string& dir);

}  // namespace nereus::objects
