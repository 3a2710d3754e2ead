#pragma once

// Error codes of the storage module (style R4). System errors from the file-system seam pass
// through unchanged as std::system_category codes.
//
// Thread-safety: thread-safe (constants and a stateless category).

#include <system_error>

namespace nereus::storage {

enum class errc {
    success = 0,
    unknown_stream,      // no stream with this id exists
    stream_exists,       // create_stream of an id that already exists
    trimmed,             // the requested offset lies below the stream's first retained offset
    corrupt_segment,     // a segment record before the recoverable tail is damaged
    corrupt_journal,     // a journal block before the torn tail is damaged, or a gap in offsets
    corrupt_checkpoint,  // the checkpoint file exists but fails its checksum or is malformed
    store_failed,        // an earlier I/O error put the store into its failed state; reopen it
    closed,              // the store is closed (or closing)
    record_too_large,    // payload exceeds the format's limit
    invalid_argument,    // a malformed argument (e.g. bad options)
    would_block,         // read_nowait: serving the read needs I/O that could wait for a disk
                         // (compares equal to std::errc::operation_would_block)
};

const std::error_category& storage_category() noexcept;

inline std::error_code make_error_code(errc e) noexcept {
    return {static_cast<int>(e), storage_category()};
}

}  // namespace nereus::storage

template <>
struct std::is_error_code_enum<nereus::storage::errc> : std::true_type {};
