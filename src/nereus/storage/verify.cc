#include "nereus/storage/verify.h"

#include "nereus/storage/format.h"
#include "nereus/storage/journal_scan.h"
#include "nereus/storage/segment_scan.h"

#include <fmt/format.h>

#include <algorithm>
#include <unordered_map>

namespace nereus::storage {

std::string verify_issue::to_string() const {
    std::string s;
    if (stream) {
        s += fmt::format("stream={:016x} ", stream->value());
    }
    s += fmt::format("file={} byte={}", file, byte_position);
    if (at) {
        s += fmt::format(" offset={}", at->value());
    }
    return s + ": " + reason;
}

bool verify_report::ok() const {
    return std::none_of(issues.begin(), issues.end(), [](const verify_issue& i) {
        return i.level == verify_issue::severity::corrupt;
    });
}

namespace {

std::vector<std::pair<std::uint64_t, std::string>> sorted_names(
    const std::vector<std::string>& names,
    std::optional<std::uint64_t> (*parse)(const std::string&)) {
    std::vector<std::pair<std::uint64_t, std::string>> out;
    for (const auto& n : names) {
        if (auto v = parse(n)) {
            out.emplace_back(*v, n);
        }
    }
    std::sort(out.begin(), out.end());
    return out;
}

}  // namespace

result<verify_report> verify(file_system& fs, const std::string& dir) {
    verify_report rep;
    using sev = verify_issue::severity;

    // Checkpoint.
    const std::string ckpt_path = path_join(dir, format::kCheckpointName);
    auto ex = fs.exists(ckpt_path);
    if (!ex) {
        return error(ex.error());
    }
    if (*ex) {
        rep.checkpoint_present = true;
        auto f = fs.open(ckpt_path, open_mode::read_only);
        if (!f) {
            return error(f.error());
        }
        auto size = (*f)->size();
        if (!size) {
            return error(size.error());
        }
        std::vector<std::byte> b(*size);
        auto n = (*f)->read_at(0, b);
        if (!n) {
            return error(n.error());
        }
        b.resize(*n);
        if (!format::decode_checkpoint(b)) {
            rep.issues.push_back(
                {sev::corrupt, std::nullopt, ckpt_path, 0, std::nullopt, "bad checkpoint file"});
        }
    }

    // Journal: every block of every file; per stream, offsets must advance by one.
    std::unordered_map<std::uint64_t, std::pair<std::uint64_t, std::uint64_t>> covered;
    const std::string jdir = path_join(dir, format::kJournalDirName);
    if (auto jex = fs.exists(jdir); jex && *jex) {
        auto names = fs.list_dir(jdir);
        if (!names) {
            return error(names.error());
        }
        const auto files = sorted_names(*names, &format::parse_journal_file_name);
        std::unordered_map<std::uint64_t, std::uint64_t> next_offset;
        std::uint64_t seq = 0;
        for (std::size_t i = 0; i < files.size(); ++i) {
            const std::string path = path_join(jdir, files[i].second);
            auto f = fs.open(path, open_mode::read_only);
            if (!f) {
                return error(f.error());
            }
            ++rep.journal_files;
            auto check = [&](std::uint64_t pos, bytes_view block) -> result<void> {
                ++rep.journal_blocks;
                format::for_each_block_record(block, [&](std::uint64_t sid, bytes_view r) {
                    const auto h = format::decode_record_header(r.data());
                    auto [it, fresh] = next_offset.try_emplace(sid, h.offset);
                    // A re-created stream restarts at 0; anything else must be the next offset.
                    if (!fresh && h.offset != it->second && h.offset != 0) {
                        rep.issues.push_back(
                            {sev::corrupt, stream_id(sid), path, pos, offset(h.offset),
                             fmt::format("journal offset gap: expected {}", it->second)});
                    }
                    it->second = h.offset + 1;
                    auto [cov, fresh_cov] = covered.try_emplace(sid, h.offset, h.offset);
                    cov->second.first = std::min(cov->second.first, h.offset);
                    cov->second.second = std::max(cov->second.second, h.offset);
                });
                return {};
            };
            auto scan = scan_journal_file(**f, 0, seq, check);
            if (!scan) {
                return error(scan.error());
            }
            seq = scan->next_seq;
            if (scan->defect) {
                const bool tail = i + 1 == files.size() && !scan->defect->followed_by_valid;
                rep.issues.push_back(
                    {tail ? sev::repairable : sev::corrupt, std::nullopt, path, scan->defect->pos,
                     std::nullopt,
                     fmt::format("journal block: {}", format::to_string(scan->defect->what))});
                seq = 0;  // unknown from here on
            }
        }
    }

    // Segments: every record of every segment file.
    const std::string sdir = path_join(dir, format::kStreamsDirName);
    if (auto sex = fs.exists(sdir); sex && *sex) {
        auto names = fs.list_dir(sdir);
        if (!names) {
            return error(names.error());
        }
        for (const auto& [sid, name] : sorted_names(*names, &format::parse_stream_dir_name)) {
            const std::string d = path_join(sdir, name);
            auto entries = fs.list_dir(d);
            if (!entries) {
                return error(entries.error());
            }
            ++rep.streams;
            if (std::find(entries->begin(), entries->end(), format::kTombstoneName) !=
                entries->end()) {
                // An interrupted delete_stream: its files may be cut; the open removes them.
                rep.issues.push_back({sev::repairable, stream_id(sid), d, 0, std::nullopt,
                                      "stream being deleted (its removal is finished at open)"});
                continue;
            }
            const auto segs = sorted_names(*entries, &format::parse_segment_file_name);
            for (std::size_t i = 0; i < segs.size(); ++i) {
                const std::string path = path_join(d, segs[i].second);
                const bool active = i + 1 == segs.size();
                auto f = fs.open(path, open_mode::read_only);
                if (!f) {
                    return error(f.error());
                }
                ++rep.segment_files;
                auto scan = scan_segment(**f, segs[i].first, UINT64_MAX);
                if (!scan) {
                    return error(scan.error());
                }
                rep.segment_records += scan->records;
                if (!scan->clean()) {
                    // A bad record in the active segment is a torn tail only if the journal
                    // still holds that offset (recovery then truncates and refills it).
                    auto cov = covered.find(sid);
                    const bool in_journal = cov != covered.end() &&
                                            cov->second.first <= scan->end_offset &&
                                            scan->end_offset <= cov->second.second;
                    const bool repairable = active && in_journal;
                    rep.issues.push_back(
                        {repairable ? sev::repairable : sev::corrupt, stream_id(sid), path,
                         scan->valid_bytes, offset(scan->end_offset),
                         fmt::format("segment record: {}{}", format::to_string(scan->defect),
                                     repairable ? " (the journal still holds it)"
                                     : active   ? " (not covered by the journal)"
                                                : "")});
                } else if (!active && scan->end_offset != segs[i + 1].first) {
                    rep.issues.push_back(
                        {sev::corrupt, stream_id(sid), path, scan->valid_bytes,
                         offset(scan->end_offset),
                         fmt::format("sealed segment ends at offset {} but the next starts at {}",
                                     scan->end_offset, segs[i + 1].first)});
                }
            }
        }
    }
    return rep;
}

}  // namespace nereus::storage
