#pragma once

// The immutable object store: named blobs that are written once and never change, such as
// cursor snapshots. A cursor root references a snapshot by {object name, version, checksum};
// the snapshot's bytes are not ack state until that root's CAS succeeds (seed 000).
//
// Ownership: implementations own their backend resources; callers own returned objects.
// Thread-safety: thread-safe. Concurrent puts of one name are linearized: exactly one
//   returns `created`, the others see `already_exists_*`.
// Durability: put_if_absent() is durable when it returns `created` or `already_exists_same`
//   (the object survives a crash or power loss); remove() is durable when it returns success.
//   get() and list() may observe an object whose put has not yet returned (applied, not yet
//   durable). A failed put or remove leaves no corrupt-visible object: afterwards (and after
//   any crash) the name is either absent or holds the complete, verified object.
// Names: see object_name.h.

#include "nereus/base/file_system.h"
#include "nereus/base/result.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace nereus::objects {

// What put_if_absent() found. A name, once written, never changes content.
enum class put_outcome {
    created,                   // this call wrote the object; it is durable
    already_exists_same,       // the name already holds these exact bytes; durable
    already_exists_different,  // the name holds other bytes; nothing was changed
};

const char* to_string(put_outcome outcome);

// One object as read back: its bytes and their crc32c. Checksum equals
// crc32c::value(bytes); it has been verified against the stored checksum.
struct object {
    std::vector<std::byte> bytes;
    std::uint32_t checksum = 0;
};

class object_store {
public:
    object_store() = default;
    object_store(const object_store&) = delete;
    object_store& operator=(const object_store&) = delete;
    object_store(object_store&&) = delete;
    object_store& operator=(object_store&&) = delete;
    virtual ~object_store() = default;

    // Stores `bytes` under `name` unless the name exists. Errors: errc::invalid_name,
    // errc::object_too_large, errc::corrupt_object (the name exists but its stored object
    // fails verification, so it can be compared with nothing), or an I/O error (the object
    // is then absent, or, if a concurrent put of the same name won, that put's object).
    [[nodiscard]] virtual result<put_outcome> put_if_absent(std::string_view name,
                                                            bytes_view bytes) = 0;

    // Reads and verifies one object. Errors: errc::not_found, errc::invalid_name,
    // errc::corrupt_object (logged with the name and reason; verify() lists them),
    // errc::unsupported_version, or an I/O error.
    [[nodiscard]] virtual result<object> get(std::string_view name) = 0;

    // Removes one object; durable on success. Errors: errc::not_found, errc::invalid_name,
    // or an I/O error (then the object may or may not be removed, and may reappear after a
    // crash). A corrupt object can be removed.
    [[nodiscard]] virtual result<void> remove(std::string_view name) = 0;

    // The names that start with `prefix` (a plain byte prefix, not a path component: "a/b"
    // matches "a/b", "a/bc" and "a/b/c"), sorted bytewise ascending. Any prefix is accepted;
    // "" lists every object. Names of corrupt objects are listed too.
    [[nodiscard]] virtual result<std::vector<std::string>> list(std::string_view prefix) = 0;
};

}  // namespace nereus::objects
