#pragma once

// Object names and how they map to file names.
//
// A valid name is 1..max_object_name_length bytes of [A-Za-z0-9._-/], made of '/'-separated
// components, none of them empty, "." or "..". So it is never absolute ("/a"), never ends
// in '/' and never holds "//". '/' is a namespace separator for callers
// ("cursor/orders/c1/00000042"), not a directory: the file-system backend stores every object
// in one flat directory and escapes '/' as '+' (a byte outside the name alphabet, so the
// mapping is one-to-one). See doc/format/objects.md.
//
// Thread-safety: thread-safe (pure functions).

#include "nereus/base/result.h"

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace nereus::objects {

// Longest valid name. Escaping keeps the length, so every file name stays well below the
// 255-byte limit of common file systems.
inline constexpr std::size_t max_object_name_length = 200;

// The byte that stands for '/' in file names.
inline constexpr char object_name_separator_escape = '+';

// Succeeds when `name` is valid; errc::invalid_name otherwise.
[[nodiscard]] result<void> validate_object_name(std::string_view name);

// The file name of a valid object name. Requires: validate_object_name(name) succeeded.
std::string object_file_name(std::string_view name);

// The object name stored under `file_name`, or nullopt when `file_name` is not the escaped
// form of any valid name (a stray file).
std::optional<std::string> object_name_from_file_name(std::string_view file_name);

}  // namespace nereus::objects
