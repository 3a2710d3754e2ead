#include "nereus/objects/object_name.h"

#include "nereus/objects/errc.h"

#include <algorithm>

namespace nereus::objects {
namespace {

bool is_name_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
           c == '_' || c == '-' || c == '/';
}

}  // namespace

result<void> validate_object_name(std::string_view name) {
    if (name.empty() || name.size() > max_object_name_length) {
        return error(errc::invalid_name);
    }
    if (!std::all_of(name.begin(), name.end(), is_name_char)) {
        return error(errc::invalid_name);
    }
    // Every '/'-separated component must be non-empty and not "." or "..".
    std::size_t begin = 0;
    while (begin <= name.size()) {
        const auto end = std::min(name.find('/', begin), name.size());
        const auto component = name.substr(begin, end - begin);
        if (component.empty() || component == "." || component == "..") {
            return error(errc::invalid_name);
        }
        begin = end + 1;
    }
    return {};
}

std::string object_file_name(std::string_view name) {
    std::string out(name);
    std::replace(out.begin(), out.end(), '/', object_name_separator_escape);
    return out;
}

std::optional<std::string> object_name_from_file_name(std::string_view file_name) {
    if (file_name.find('/') != std::string_view::npos) {
        return std::nullopt;
    }
    std::string name(file_name);
    std::replace(name.begin(), name.end(), object_name_separator_escape, '/');
    if (!validate_object_name(name)) {
        return std::nullopt;
    }
    return name;
}

}  // namespace nereus::objects
