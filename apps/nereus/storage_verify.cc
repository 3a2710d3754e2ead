#include "apps/nereus/storage_verify.h"

#include "nereus/base/file_system.h"
#include "nereus/meta/verify.h"
#include "nereus/objects/verify.h"
#include "nereus/storage/verify.h"

#include <cstdio>
#include <string>

namespace nereus::app {
namespace {

const char* area_name(meta::verify_area a) {
    switch (a) {
        case meta::verify_area::data:
            return "record";
        case meta::verify_area::ephemeral_index:
            return "ephemeral index";
        case meta::verify_area::meta:
            return "store metadata";
        case meta::verify_area::unknown:
            return "unknown key";
        case meta::verify_area::engine:
            return "rocksdb";
    }
    return "?";
}

std::string printable(const std::string& s) {
    std::string out;
    for (const unsigned char c : s) {
        if (c >= 0x20 && c < 0x7f) {
            out.push_back(static_cast<char>(c));
        } else {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\x%02x", c);
            out += buf;
        }
    }
    return out;
}

}  // namespace

int run_storage_verify(const std::string& data_dir) {
    auto fs = posix_file_system();
    auto present = fs->is_dir(data_dir);
    if (!present || !*present) {
        std::fprintf(stderr, "verify: %s is not a directory\n", data_dir.c_str());
        return 2;
    }
    int corrupt = 0;
    bool unchecked = false;

    const std::string streams = path_join(data_dir, kStreamsSubdir);
    if (auto is = fs->is_dir(streams); is && *is) {
        auto rep = storage::verify(*fs, streams);
        if (!rep) {
            std::printf("streams: cannot check %s: %s\n", streams.c_str(),
                        rep.error().message().c_str());
            unchecked = true;
        } else {
            for (const auto& issue : rep->issues) {
                const bool bad = issue.level == storage::verify_issue::severity::corrupt;
                corrupt += bad ? 1 : 0;
                std::printf("streams: %s: %s\n", bad ? "CORRUPT" : "torn tail (recovery truncates)",
                            issue.to_string().c_str());
            }
            std::printf(
                "streams: %llu journal files, %llu blocks, %llu streams, %llu segments, "
                "%llu records, checkpoint %s: %s\n",
                static_cast<unsigned long long>(rep->journal_files),
                static_cast<unsigned long long>(rep->journal_blocks),
                static_cast<unsigned long long>(rep->streams),
                static_cast<unsigned long long>(rep->segment_files),
                static_cast<unsigned long long>(rep->segment_records),
                rep->checkpoint_present ? "present" : "absent", rep->ok() ? "ok" : "CORRUPT");
        }
    } else {
        std::printf("streams: %s absent, nothing to check\n", streams.c_str());
    }

    const std::string meta_dir = path_join(data_dir, kMetaSubdir);
    if (auto is = fs->is_dir(meta_dir); is && *is) {
        auto rep = meta::verify_rocksdb_store(meta_dir);
        if (!rep) {
            std::printf("meta: cannot check %s: %s\n", meta_dir.c_str(),
                        rep.error().message().c_str());
            unchecked = true;
        } else {
            for (const auto& p : rep->problems) {
                ++corrupt;
                std::printf("meta: CORRUPT %s key=\"%s\": %s\n", area_name(p.area),
                            printable(p.key).c_str(), p.reason.c_str());
            }
            std::printf("meta: %llu records (%llu ephemeral), revision %llu: %s\n",
                        static_cast<unsigned long long>(rep->data_records),
                        static_cast<unsigned long long>(rep->ephemeral_records),
                        static_cast<unsigned long long>(rep->revision),
                        rep->ok() ? "ok" : "CORRUPT");
        }
    } else {
        std::printf("meta: %s absent, nothing to check\n", meta_dir.c_str());
    }

    const std::string objects_dir = path_join(data_dir, kObjectsSubdir);
    if (auto is = fs->is_dir(objects_dir); is && *is) {
        auto rep = objects::verify(*fs, objects_dir);
        if (!rep) {
            std::printf("objects: cannot check %s: %s\n", objects_dir.c_str(),
                        rep.error().message().c_str());
            unchecked = true;
        } else {
            for (const auto& c : rep->corrupt) {
                ++corrupt;
                std::printf("objects: CORRUPT file=%s name=\"%s\": %s\n", c.file_name.c_str(),
                            printable(c.name).c_str(), c.detail.c_str());
            }
            for (const auto& u : rep->unreadable) {
                unchecked = true;
                std::printf("objects: unreadable file=%s: %s\n", u.file_name.c_str(),
                            u.error.message().c_str());
            }
            std::printf("objects: %llu objects, %llu payload bytes, %zu leftover temp files: %s\n",
                        static_cast<unsigned long long>(rep->valid_objects),
                        static_cast<unsigned long long>(rep->valid_payload_bytes),
                        rep->leftover_temp_files.size(), rep->ok() ? "ok" : "CORRUPT");
        }
    } else {
        std::printf("objects: %s absent, nothing to check\n", objects_dir.c_str());
    }

    if (corrupt > 0) {
        std::printf("verify: %d problem(s) found in %s\n", corrupt, data_dir.c_str());
        return 1;
    }
    if (unchecked) {
        std::printf("verify: some parts of %s could not be checked\n", data_dir.c_str());
        return 2;
    }
    std::printf("verify: %s ok\n", data_dir.c_str());
    return 0;
}

}  // namespace nereus::app
