#pragma once

// One object file: writing it whole, and reading it back with every check of
// doc/format/objects.md. Used by fs_object_store and by verify().
//
// Thread-safety: thread-safe (no shared state; the file system is thread-safe).
// Durability: write_object_file() returns after file::sync(), so the file's bytes are durable
//   but its directory entry is not (the caller renames it and syncs the directory).

#include "nereus/base/file_system.h"
#include "nereus/base/result.h"
#include "nereus/objects/object_store.h"

#include <tl/expected.hpp>

#include <cstdint>
#include <string>
#include <string_view>

namespace nereus::objects {

// Why a stored object is not valid. Stable names (to_string) appear in logs and verify output.
enum class corruption_reason {
    truncated,                  // shorter than its header says (includes empty and torn files)
    trailing_bytes,             // longer than its header says
    bad_magic,                  // does not start with "NROB"
    header_checksum_mismatch,   // header or name bytes damaged
    unsupported_version,        // valid header of an unknown (newer) format version
    reserved_nonzero,           // reserved header bytes set in a version-1 file
    name_mismatch,              // the file holds a different object than its file name says
    too_large,                  // header claims a payload above max_object_size
    payload_checksum_mismatch,  // payload bytes damaged
    invalid_file_name,          // a file whose name is not an escaped object name
    not_a_file,                 // a directory or other non-file entry among the objects
};

const char* to_string(corruption_reason reason);

struct corruption {
    corruption_reason reason = corruption_reason::truncated;
    std::string detail;  // human-readable, e.g. "file has 10 bytes, header needs 32"
};

// A verified object, or why the stored bytes are not one.
using checked_object = tl::expected<object, corruption>;

// Writes the complete object file for (`name`, `payload`) at offset 0 of the new, empty file
// `out`, then syncs it. Requires: `name` is valid and payload.size() <= max_object_size.
// On error the file's content is unspecified and the caller must discard it.
[[nodiscard]] result<void> write_object_file(file& out, std::string_view name, bytes_view payload);

// Reads the object file at `path`, which should hold object `name`, and verifies it. I/O
// errors (including ENOENT from open) are the outer error; a readable but invalid file is an
// inner `corruption`.
[[nodiscard]] result<checked_object> read_object_file(file_system& fs,
                                                      const std::string& path,
                                                      std::string_view name);

}  // namespace nereus::objects
