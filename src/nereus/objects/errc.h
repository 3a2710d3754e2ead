#pragma once

// Error codes of the objects module (style R4). Values are stable: they appear in logs and in
// `nereus storage verify` output.
//
// Thread-safety: thread-safe (the category is a stateless singleton).

#include <string>
#include <system_error>

namespace nereus::objects {

enum class errc {
    success = 0,
    not_found,            // no object has this name
    corrupt_object,       // the stored bytes fail verification (see doc/format/objects.md)
    invalid_name,         // the name breaks the naming rules (see object_name.h)
    unsupported_version,  // the object was written by a newer, unknown format version
    object_too_large,     // the payload exceeds max_object_size (object_format.h)
};

const std::error_category& objects_category() noexcept;

inline std::error_code make_error_code(errc e) noexcept {
    return {static_cast<int>(e), objects_category()};
}

}  // namespace nereus::objects

template <>
struct std::is_error_code_enum<nereus::objects::errc> : std::true_type {};
