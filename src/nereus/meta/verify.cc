#include "nereus/meta/verify.h"

#include "nereus/meta/errc.h"
#include "nereus/meta/logger.h"
#include "nereus/meta/record_format.h"

#include <fmt/format.h>

#include <algorithm>
#include <memory>
#include <rocksdb/db.h>
#include <rocksdb/iterator.h>
#include <rocksdb/options.h>
#include <set>
#include <utility>

namespace nereus::meta {

result<verify_report> verify_rocksdb_store(const std::string& dir) {
    rocksdb::Options o;
    o.create_if_missing = false;
    o.paranoid_checks = true;
    rocksdb::DB* raw_db = nullptr;
    const rocksdb::Status open_status = rocksdb::DB::OpenForReadOnly(o, dir, &raw_db);
    if (!open_status.ok()) {
        NEREUS_LOG(meta_log(), err, "meta verify: cannot open dir={}: {}", dir,
                   open_status.ToString());
        return nereus::error(open_status.IsCorruption() ? errc::corrupt_record : errc::io_error);
    }
    const std::unique_ptr<rocksdb::DB> db(raw_db);

    verify_report rep;
    auto problem = [&](verify_area area, std::string key, std::string reason) {
        rep.problems.push_back(
            verify_problem{.area = area, .key = std::move(key), .reason = std::move(reason)});
    };

    if (const auto s = db->VerifyChecksum(); !s.ok()) {
        problem(verify_area::engine, "", "RocksDB block checksum check failed: " + s.ToString());
    }

    std::set<std::pair<std::string, session_id>> ephemeral;  // from records
    std::set<std::pair<std::string, session_id>> indexed;    // from the index
    version max_version = 0;
    bool have_format = false;
    bool have_revision = false;
    bool have_next_session = false;

    std::unique_ptr<rocksdb::Iterator> it(db->NewIterator(rocksdb::ReadOptions()));
    for (it->SeekToFirst(); it->Valid(); it->Next()) {
        const std::string_view raw_key = it->key().ToStringView();
        const std::string_view raw_value = it->value().ToStringView();
        std::string why;
        if (raw_key.starts_with(format::data_prefix)) {
            std::string user_key(raw_key.substr(format::data_prefix.size()));
            auto r = format::decode_record(raw_key, raw_value, &why);
            if (!r) {
                problem(verify_area::data, std::move(user_key), why);
                continue;
            }
            ++rep.data_records;
            max_version = std::max(max_version, r->ver);
            if (r->ver == 0) {
                problem(verify_area::data, user_key, "record has version 0 (reserved for absent)");
            }
            if (r->owner != no_session) {
                ++rep.ephemeral_records;
                ephemeral.emplace(std::move(user_key), r->owner);
            }
        } else if (raw_key.starts_with(format::index_prefix)) {
            ++rep.index_entries;
            format::index_entry e;
            if (!format::parse_index_key(raw_key, e)) {
                problem(verify_area::ephemeral_index, std::string(raw_key),
                        "index key too short to hold a session id");
                continue;
            }
            auto r = format::decode_record(raw_key, raw_value, &why);
            if (!r) {
                problem(verify_area::ephemeral_index, std::string(raw_key), why);
                continue;
            }
            if (r->owner != e.owner) {
                problem(verify_area::ephemeral_index, std::string(raw_key),
                        fmt::format("index value names session {}, key names {}", raw(r->owner),
                                    raw(e.owner)));
            }
            indexed.emplace(std::move(e.user_key), e.owner);
        } else if (raw_key.starts_with(format::meta_prefix)) {
            auto v = format::decode_u64(raw_key, raw_value, &why);
            if (!v) {
                problem(verify_area::meta, std::string(raw_key), why);
                if (raw_key == format::format_key) {
                    have_format = true;
                } else if (raw_key == format::revision_key) {
                    have_revision = true;
                } else if (raw_key == format::next_session_key) {
                    have_next_session = true;
                }
                continue;
            }
            if (raw_key == format::format_key) {
                have_format = true;
                rep.format = *v;
                if (*v != format::store_format_v1) {
                    problem(verify_area::meta, std::string(raw_key),
                            fmt::format("store format {} is not supported (this build reads {})",
                                        *v, format::store_format_v1));
                }
            } else if (raw_key == format::revision_key) {
                have_revision = true;
                rep.revision = *v;
            } else if (raw_key == format::next_session_key) {
                have_next_session = true;
                rep.next_session = *v;
            } else {
                problem(verify_area::meta, std::string(raw_key), "unknown metadata key");
            }
        } else {
            problem(verify_area::unknown, std::string(raw_key),
                    "key outside the d/, e/ and m/ areas");
        }
    }
    if (!it->status().ok()) {
        problem(verify_area::engine, "", "iteration stopped: " + it->status().ToString());
    }

    if (!have_format) {
        problem(verify_area::meta, std::string(format::format_key), "missing");
    }
    if (!have_revision) {
        problem(verify_area::meta, std::string(format::revision_key), "missing");
    } else if (rep.revision < max_version) {
        problem(verify_area::meta, std::string(format::revision_key),
                fmt::format("store revision {} is below record version {}: versions could repeat",
                            rep.revision, max_version));
    }
    if (!have_next_session) {
        problem(verify_area::meta, std::string(format::next_session_key), "missing");
    }
    for (const auto& [key, owner] : ephemeral) {
        if (!indexed.contains({key, owner})) {
            problem(verify_area::data, key,
                    fmt::format("ephemeral record of session {} has no index entry", raw(owner)));
        }
        if (have_next_session && raw(owner) >= rep.next_session) {
            problem(verify_area::data, key,
                    fmt::format("owner session {} was never handed out (next session {})",
                                raw(owner), rep.next_session));
        }
    }
    for (const auto& [key, owner] : indexed) {
        if (!ephemeral.contains({key, owner})) {
            problem(verify_area::ephemeral_index, format::index_key(owner, key),
                    "index entry without a matching ephemeral record");
        }
    }
    for (const auto& p : rep.problems) {
        NEREUS_LOG(meta_log(), warn, "meta verify dir={}: key={} {}", dir, format::printable(p.key),
                   p.reason);
    }
    return rep;
}

}  // namespace nereus::meta
