#pragma once

// verify: checks every record of every journal and segment file of a store directory WITHOUT
// modifying anything (the store should be closed), and reports what is damaged and where.
// `nereus storage verify --data-dir D` prints its report.
//
// Thread-safety: thread-safe (no shared state).

#include "nereus/base/file_system.h"
#include "nereus/base/result.h"
#include "nereus/storage/types.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace nereus::storage {

struct verify_issue {
    enum class severity {
        corrupt,     // recovery refuses to open the store (or a read fails) because of this
        repairable,  // what recovery repairs: a torn tail it truncates (and refills from the
                     // journal), a deletion it finishes
    };
    severity level = severity::corrupt;
    std::optional<stream_id> stream;
    std::string file;
    std::uint64_t byte_position = 0;
    std::optional<offset> at;
    std::string reason;

    // "stream=… file=… byte=… offset=…: reason" (the severity is left to the caller).
    [[nodiscard]] std::string to_string() const;
};

struct verify_report {
    std::uint64_t journal_files = 0;
    std::uint64_t journal_blocks = 0;
    std::uint64_t streams = 0;
    std::uint64_t segment_files = 0;
    std::uint64_t segment_records = 0;
    bool checkpoint_present = false;
    std::vector<verify_issue> issues;

    // True when nothing is corrupt (repairable torn tails allowed).
    [[nodiscard]] bool ok() const;
};

// Errors: only I/O errors (e.g. `dir` does not exist); damage is reported in the report.
[[nodiscard]] result<verify_report> verify(file_system& fs, const std::string& dir);

}  // namespace nereus::storage
