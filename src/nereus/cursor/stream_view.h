#pragma once

// stream_view — what a cursor needs to know about its stream, and nothing more. The cursor does
// not depend on storage/: the ledger layer implements this over the stream log (and its
// protection floor), tests use memory_stream_view.
//
// Thread-safety: implementations must be thread-safe; the cursor calls them from its callers'
// threads and from the metadata store's callback thread, never while holding a lock a stream
// append could need.

#include "nereus/cursor/types.h"

#include <cstdint>

namespace nereus::cursor {

class stream_view {
public:
    struct time_lookup {
        offset at = 0;         // the first retained entry with publish time >= T, or end()
        bool clamped = false;  // an entry at or after T may have been trimmed: `at` = start()
    };

    stream_view() = default;
    stream_view(const stream_view&) = delete;
    stream_view& operator=(const stream_view&) = delete;
    stream_view(stream_view&&) = delete;
    stream_view& operator=(stream_view&&) = delete;
    virtual ~stream_view() = default;

    // The first retained offset (everything below was trimmed); an Earliest cursor starts here.
    [[nodiscard]] virtual offset start() const = 0;
    // One past the last durable entry: the next offset an append gets.
    [[nodiscard]] virtual offset end() const = 0;
    // Reset by time (doc/cursor-semantics.md §2): the smallest retained offset, in offset order
    // (publish times need not be monotonic), whose publish time is >= `publish_time`; end()
    // when there is none; start() with clamped = true when the match lies below start().
    [[nodiscard]] virtual time_lookup find_by_time(std::int64_t publish_time) const = 0;
};

}  // namespace nereus::cursor
