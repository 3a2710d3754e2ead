// Recovery of the journaled store: the rules of doc/format/segment.md, "Recovery".

#include "nereus/storage/journal_scan.h"
#include "nereus/storage/journaled_store.h"
#include "nereus/storage/logger.h"
#include "nereus/storage/remove_in_steps.h"
#include "nereus/storage/segment_scan.h"

#include <fmt/format.h>

#include <algorithm>

namespace nereus::storage {
namespace {

result<std::vector<std::byte>> read_whole(file_system& fs, const std::string& path) {
    auto f = fs.open(path, open_mode::read_only);
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
    return b;
}

}  // namespace

result<void> journaled_store::load_streams(std::unordered_map<std::uint64_t, recovering>& rec,
                                           const std::vector<format::stream_mark>& marks) {
    std::unordered_map<std::uint64_t, format::stream_mark> mark_of;
    for (const auto& m : marks) {
        mark_of.emplace(m.stream, m);
    }
    auto names = fs_->list_dir(streams_dir_);
    if (!names) {
        return error(names.error());
    }
    for (const auto& name : *names) {
        const auto id = format::parse_stream_dir_name(name);
        const std::string d = path_join(streams_dir_, name);
        if (!id) {
            if (name.ends_with(format::kCreatingSuffix)) {
                NEREUS_LOG(storage_log(), info, "removing interrupted stream creation {}", d);
                NEREUS_TRY(remove_stream_dir(d));
            } else {
                NEREUS_LOG(storage_log(), warn, "ignoring unknown entry {}", d);
            }
            continue;
        }
        auto entries = fs_->list_dir(d);
        if (!entries) {
            return error(entries.error());
        }
        std::vector<std::uint64_t> bases;
        bool tombstone = false;
        for (const auto& e : *entries) {
            if (e == format::kTombstoneName) {
                tombstone = true;
            } else if (auto b = format::parse_segment_file_name(e)) {
                bases.push_back(*b);
            } else if (e.ends_with(format::kTrimmedSuffix)) {
                // A trim's removal that a crash interrupted: no longer a segment, only garbage.
                NEREUS_LOG(storage_log(), info, "removing trimmed segment {}/{}", d, e);
                NEREUS_TRY(remove_in_steps(*fs_, path_join(d, e)));
            }
        }
        std::sort(bases.begin(), bases.end());
        if (tombstone || bases.empty()) {
            // An interrupted delete_stream (tombstone) or create_stream (no segment yet).
            NEREUS_LOG(storage_log(), info, "finishing removal of stream dir {}", d);
            NEREUS_TRY(remove_stream_dir(d));
            continue;
        }
        auto st = std::make_shared<stream_state>(*id, next_incarnation_++);
        for (std::size_t i = 0; i + 1 < bases.size(); ++i) {
            // Sealed segments were synced before their successor existed: trusted by name. Not
            // even their size is read now; their first read scans, checks and indexes them.
            segment_view v;
            v.base = bases[i];
            v.end = bases[i + 1];
            v.bytes = kUnknownSize;
            v.unindexed_pos = kUnknownSize;
            v.unindexed_end = bases[i + 1];
            st->segments.push_back(std::move(v));
        }
        const std::uint64_t base = bases.back();
        const segment_key k = key(*st, base);
        auto f = fds_.get(k);
        if (!f) {
            return error(f.error());
        }
        // The checkpoint says how much of the active segment is synced: scan only the rest.
        std::uint64_t start_pos = 0;
        std::uint64_t start_offset = base;
        if (auto m = mark_of.find(*id); m != mark_of.end()) {
            if (m->second.base > base) {
                return corruption(
                    errc::corrupt_segment,
                    {stream_id(*id), fds_.path(key(*st, m->second.base)), 0, offset(m->second.base),
                     "segment named by the checkpoint is missing"});
            }
            if (m->second.base == base) {
                start_pos = m->second.bytes;
                start_offset = m->second.end;
            }
        }
        auto size = (*f)->size();
        if (!size) {
            return error(size.error());
        }
        if (*size < start_pos) {
            return corruption(errc::corrupt_segment,
                              {stream_id(*id), fds_.path(k), *size, offset(start_offset),
                               fmt::format("segment shorter than its checkpointed (synced) "
                                           "length {}",
                                           start_pos)});
        }
        auto scan = scan_segment(**f, base, opts_.index_interval_bytes, UINT64_MAX, start_pos,
                                 start_offset);
        if (!scan) {
            return error(scan.error());
        }
        segment_view v;
        v.base = base;
        v.end = scan->end_offset;
        v.bytes = scan->valid_bytes;
        v.unindexed_pos = start_pos;
        v.unindexed_end = start_pos != 0 ? start_offset : base;
        v.index = scan->index;
        st->segments.push_back(std::move(v));
        st->first = bases.front();
        st->end = scan->end_offset;
        st->next_offset = scan->end_offset;
        st->active_base = base;
        st->active_bytes = scan->valid_bytes;
        st->write_offset = scan->end_offset;
        st->index_any = !scan->index.empty();
        st->index_last_pos = scan->index.last_pos();
        recovering r;
        r.k = scan->end_offset;
        if (scan->valid_bytes < scan->file_bytes) {
            r.tail_bad = true;
            r.bad_pos = scan->valid_bytes;
            r.bad_offset = scan->end_offset;
            r.bad_what = scan->defect;
        }
        rec.emplace(*id, r);
        streams_.emplace(*id, std::move(st));
    }
    return {};
}

result<void> journaled_store::recover() {
    // 1. The checkpoint: where journal replay starts.
    std::optional<format::journal_position> ckpt;
    std::vector<format::stream_mark> marks;
    const std::string ckpt_path = path_join(dir_, format::kCheckpointName);
    auto ex = fs_->exists(ckpt_path);
    if (!ex) {
        return error(ex.error());
    }
    if (*ex) {
        auto bytes = read_whole(*fs_, ckpt_path);
        if (!bytes) {
            return error(bytes.error());
        }
        auto decoded = format::decode_checkpoint(*bytes);
        if (decoded) {
            ckpt = decoded->pos;
            marks = std::move(decoded->marks);
        }
        if (!ckpt) {
            return corruption(errc::corrupt_checkpoint,
                              {std::nullopt, ckpt_path, 0, std::nullopt, "bad checkpoint file"});
        }
    }
    const std::string tmp = path_join(dir_, format::kCheckpointTmpName);
    if (auto t = fs_->exists(tmp); t && *t) {
        NEREUS_TRY(fs_->remove(tmp));
    }

    // 2. Streams: sealed segments by name, the active one scanned up to its first bad record.
    std::unordered_map<std::uint64_t, recovering> rec;
    NEREUS_TRY(load_streams(rec, marks));

    // 3. Journal files from the checkpoint on.
    auto names = fs_->list_dir(journal_dir_);
    if (!names) {
        return error(names.error());
    }
    std::vector<std::uint64_t> seqs;
    for (const auto& n : *names) {
        if (auto s = format::parse_journal_file_name(n)) {
            seqs.push_back(*s);
        }
    }
    std::sort(seqs.begin(), seqs.end());
    std::size_t first_file = 0;
    std::uint64_t start_pos = 0;
    std::uint64_t expected_seq = 0;
    if (ckpt) {
        auto it = std::lower_bound(seqs.begin(), seqs.end(), ckpt->file_seq);
        if (it == seqs.end() || *it != ckpt->file_seq) {
            return corruption(
                errc::corrupt_journal,
                {std::nullopt, path_join(journal_dir_, format::journal_file_name(ckpt->file_seq)),
                 ckpt->pos, std::nullopt, "journal file named by the checkpoint is missing"});
        }
        first_file = static_cast<std::size_t>(it - seqs.begin());
        start_pos = ckpt->pos;
        expected_seq = ckpt->next_block_seq;
    }
    auto jpath = [&](std::size_t i) {
        return path_join(journal_dir_, format::journal_file_name(seqs[i]));
    };

    // Pass 1 validates everything and changes nothing, so a corrupt store is left as found.
    struct torn {
        std::size_t file;
        std::uint64_t pos;
    };
    std::optional<torn> tail;
    std::uint64_t next_seq = expected_seq;
    std::uint64_t replay_blocks = 0;
    // Where pass 1 found each file's blocks to end (a prepared file's zero tail is read once).
    std::vector<std::uint64_t> block_end(seqs.size(), 0);
    for (std::size_t i = first_file; i < seqs.size(); ++i) {
        auto f = fs_->open(jpath(i), open_mode::read_only);
        if (!f) {
            return error(f.error());
        }
        const std::uint64_t from = i == first_file ? start_pos : 0;
        auto sz = (*f)->size();
        if (!sz) {
            return error(sz.error());
        }
        if (*sz < from) {
            return corruption(errc::corrupt_journal,
                              {std::nullopt, jpath(i), *sz, std::nullopt,
                               "journal file shorter than the checkpoint position"});
        }
        std::uint64_t block_pos = 0;
        auto validate = [&](std::uint64_t pos, bytes_view block) -> result<void> {
            block_pos = pos;
            std::optional<tl::unexpected<std::error_code>> bad;
            format::for_each_block_record(block, [&](std::uint64_t sid, bytes_view r) {
                auto it = rec.find(sid);
                if (bad || it == rec.end()) {
                    return;  // a deleted stream's record
                }
                const auto h = format::decode_record_header(r.data());
                const stream_state& st = *streams_.at(sid);
                if (h.offset < st.first) {
                    return;  // trimmed
                }
                it->second.in_journal = true;
                if (h.offset < it->second.k) {
                    return;  // already in the segment
                }
                if (h.offset > it->second.k) {
                    bad = corruption(
                        errc::corrupt_journal,
                        {stream_id(sid), jpath(i), pos, offset(h.offset),
                         fmt::format("gap: the stream ends at offset {} but the journal continues "
                                     "at {}",
                                     it->second.k, h.offset)});
                    return;
                }
                if (it->second.tail_bad && h.offset == it->second.bad_offset) {
                    it->second.covered = true;
                }
                ++it->second.k;
            });
            if (bad) {
                return *bad;
            }
            ++replay_blocks;
            return {};
        };
        auto scan = scan_journal_file(**f, from, next_seq, validate);
        if (!scan) {
            return error(scan.error());
        }
        next_seq = scan->next_seq;
        block_end[i] = scan->end_pos;
        if (scan->defect) {
            const bool last = i + 1 == seqs.size();
            if (!last || scan->defect->followed_by_valid) {
                return corruption(errc::corrupt_journal,
                                  {std::nullopt, jpath(i), scan->defect->pos, std::nullopt,
                                   fmt::format("bad journal block before the tail: {}",
                                               format::to_string(scan->defect->what))});
            }
            tail = torn{i, scan->defect->pos};
        }
    }
    for (const auto& [sid, r] : rec) {
        if (r.tail_bad && !r.covered) {
            const auto& st = *streams_.at(sid);
            return corruption(errc::corrupt_segment,
                              {stream_id(sid), fds_.path(key(st, st.active_base)), r.bad_pos,
                               offset(r.bad_offset),
                               fmt::format("invalid record ({}) not covered by the journal",
                                           format::to_string(r.bad_what))});
        }
    }

    // Pass 2: truncate torn tails, then replay the journal into the segments.
    if (tail) {
        NEREUS_LOG(storage_log(), warn, "truncating torn journal tail file={} pos={}",
                   jpath(tail->file), tail->pos);
        auto f = fs_->open(jpath(tail->file), open_mode::read_write);
        if (!f) {
            return error(f.error());
        }
        NEREUS_TRY((*f)->truncate(tail->pos));
        NEREUS_TRY((*f)->sync());
    }
    // What recovery saw may be only in the page cache (a killed process leaves it there): make it
    // durable before anything relies on it — in one syncfs, because recovery cannot tell which
    // directories hold unsynced changes: stream dirs created, renamed into place or removed; a
    // segment created by a roll whose directory sync never happened; a segment removed by a
    // trim whose directory sync failed (without this, `first` reported now could move back
    // after a later power loss). The active segment of every stream the journal covers is also
    // marked dirty, so the checkpoint below syncs whatever the replay appends to it before it
    // drops the journal that holds those records.
    NEREUS_TRY(fs_->sync_all(dir_));
    for (const auto& [sid, r] : rec) {
        stream_state& st = *streams_.at(sid);
        st.trim_unsynced = false;
        if (r.in_journal) {
            mark_dirty(st);
        }
        if (r.tail_bad) {
            auto& st = *streams_.at(sid);
            NEREUS_LOG(storage_log(), warn,
                       "truncating segment tail stream={:016x} base={} pos={} offset={}", sid,
                       st.active_base, r.bad_pos, r.bad_offset);
            auto f = fds_.get(key(st, st.active_base));
            if (!f) {
                return error(f.error());
            }
            NEREUS_TRY((*f)->truncate(r.bad_pos));
            mark_dirty(st);
        }
    }
    if (replay_blocks > 0) {
        std::uint64_t seq = expected_seq;
        for (std::size_t i = first_file; i < seqs.size(); ++i) {
            auto f = fs_->open(jpath(i), open_mode::read_only);
            if (!f) {
                return error(f.error());
            }
            auto apply = [&](std::uint64_t, bytes_view block) -> result<void> {
                touched_.clear();
                format::for_each_block_record(block, [&](std::uint64_t sid, bytes_view r) {
                    auto it = streams_.find(sid);
                    if (it == streams_.end()) {
                        return;
                    }
                    stream_state& st = *it->second;
                    const auto h = format::decode_record_header(r.data());
                    const std::uint64_t queued = st.in_group ? st.group_records.size() : 0;
                    if (h.offset < st.first || h.offset < st.write_offset + queued) {
                        return;  // trimmed, or already in the segment
                    }
                    if (!st.in_group) {
                        st.in_group = true;
                        st.group_records.clear();
                        touched_.push_back(&st);
                    }
                    st.group_records.push_back(r);
                });
                for (stream_state* st : touched_) {
                    st->in_group = false;
                    NEREUS_TRY(write_records(*st, st->group_records));
                    st->group_records.clear();
                }
                return {};
            };
            auto scan =
                scan_journal_file(**f, i == first_file ? start_pos : 0, seq, apply, block_end[i]);
            if (!scan) {
                return error(scan.error());
            }
            seq = scan->next_seq;
        }
    }
    for (auto& [sid, st] : streams_) {
        st->next_offset = st->write_offset;
    }

    // 4. A fresh journal file and a checkpoint at its start: everything replayed is synced,
    //    and older journal files (including any records of deleted streams) are dropped.
    journal_file_seq_ =
        std::max<std::uint64_t>(seqs.empty() ? 0 : seqs.back(), ckpt ? ckpt->file_seq : 0) + 1;
    next_block_seq_ = next_seq != 0 ? next_seq : 1;
    NEREUS_TRY(inspect_spare());
    NEREUS_TRY(open_journal_file(journal_file_seq_, /*take_partial=*/true));  // no fill runs yet
    NEREUS_TRY(run_checkpoint(make_job(0)));
    NEREUS_LOG(storage_log(), info,
               "recovered dir={} streams={} replayed_blocks={} torn_journal_tail={}", dir_,
               streams_.size(), replay_blocks, tail.has_value());
    return {};
}

}  // namespace nereus::storage
