#include "nereus/objects/verify.h"

#include "nereus/objects/logger.h"
#include "nereus/objects/object_format.h"
#include "nereus/objects/object_name.h"

namespace nereus::objects {

result<verify_report> verify(file_system& fs, const std::string& dir) {
    verify_report report;
    const auto objects_dir = path_join(dir, std::string(objects_subdir));
    auto entries = fs.list_dir(objects_dir);
    if (!entries) {
        return error(entries.error());
    }
    for (const auto& entry : *entries) {
        ++report.entries_checked;
        const auto path = path_join(objects_dir, entry);
        auto is_dir = fs.is_dir(path);
        if (!is_dir) {
            report.unreadable.push_back({entry, is_dir.error()});
            continue;
        }
        if (*is_dir) {
            report.corrupt.push_back(
                {entry, "", corruption_reason::not_a_file, "a directory among the object files"});
            continue;
        }
        auto name = object_name_from_file_name(entry);
        if (!name) {
            report.corrupt.push_back({entry, "", corruption_reason::invalid_file_name,
                                      "file name is not an escaped object name"});
            continue;
        }
        auto read = read_object_file(fs, path, *name);
        if (!read) {
            report.unreadable.push_back({entry, read.error()});
            continue;
        }
        if (!*read) {
            report.corrupt.push_back(
                {entry, *name, read->error().reason, std::move(read->error().detail)});
            continue;
        }
        ++report.valid_objects;
        report.valid_payload_bytes += (*read)->bytes.size();
    }

    const auto temp_dir = path_join(dir, std::string(temp_subdir));
    auto temp_exists = fs.exists(temp_dir);
    if (!temp_exists) {
        return error(temp_exists.error());
    }
    if (*temp_exists) {
        auto temps = fs.list_dir(temp_dir);
        if (!temps) {
            return error(temps.error());
        }
        report.leftover_temp_files = std::move(*temps);
    }
    NEREUS_LOG(objects_log(), info,
               "verified object store dir={} entries={} valid={} corrupt={} unreadable={}", dir,
               report.entries_checked, report.valid_objects, report.corrupt.size(),
               report.unreadable.size());
    return report;
}

}  // namespace nereus::objects
