// Reads of the journaled store: segment lookup, lazy index, one buffer per read.

#include "nereus/base/assert.h"
#include "nereus/storage/journaled_store.h"
#include "nereus/storage/logger.h"
#include "nereus/storage/segment_scan.h"

#include <fmt/format.h>

#include <algorithm>

namespace nereus::storage {

std::optional<errc> journaled_store::removed_since(stream_state& st,
                                                   std::uint64_t base,
                                                   bool nowait) {
    std::unique_lock lock(st.view_mu, std::defer_lock);
    if (!(nowait ? lock.try_lock() : (lock.lock(), true))) {
        return errc::would_block;  // asked again by the blocking read
    }
    if (st.deleted) {
        return errc::unknown_stream;
    }
    return base < st.first ? std::optional<errc>(errc::trimmed) : std::nullopt;
}

result<void> journaled_store::load_index(stream_state& st, std::uint64_t base) {
    std::uint64_t expected_end = 0;
    std::uint64_t bytes = 0;
    {
        const std::lock_guard lock(st.view_mu);
        auto it = std::find_if(st.segments.begin(), st.segments.end(),
                               [&](const segment_view& s) { return s.base == base; });
        if (it == st.segments.end() || it->unindexed_pos == 0) {
            return {};
        }
        expected_end = it->unindexed_end;
        bytes = it->unindexed_pos;
    }
    const segment_key k = key(st, base);
    auto f = fds_.get(k);
    if (!f) {
        return error(f.error());
    }
    // The prefix is immutable (sealed, or synced by a checkpoint), so no lock is needed here.
    auto scan = scan_segment(**f, base, opts_.index_interval_bytes, bytes);
    if (!scan) {
        return error(scan.error());
    }
    const bool whole_file = bytes == kUnknownSize;
    if (!scan->clean() || scan->end_offset != expected_end ||
        scan->valid_bytes != (whole_file ? scan->file_bytes : bytes)) {
        if (auto t = removed_since(st, base, false)) {
            return error(*t);  // cut while this scan held it open
        }
        std::string reason =
            !scan->clean()
                ? fmt::format("synced segment record invalid: {}", format::to_string(scan->defect))
                : fmt::format("synced segment part ends at offset {} but should end at {}",
                              scan->end_offset, expected_end);
        return corruption(errc::corrupt_segment, {stream_id(st.id), fds_.path(k), scan->valid_bytes,
                                                  offset(scan->end_offset), std::move(reason)});
    }
    const std::lock_guard lock(st.view_mu);
    for (auto& s : st.segments) {
        if (s.base == base && s.unindexed_pos != 0) {
            s.index.prepend(scan->index);
            s.unindexed_pos = 0;
            s.unindexed_end = base;
            if (whole_file) {
                s.bytes = scan->valid_bytes;
            }
        }
    }
    return {};
}

result<read_batch> journaled_store::read(stream_id id,
                                         offset from,
                                         std::size_t max_entries,
                                         std::size_t max_bytes) {
    return read_impl(id, from, max_entries, max_bytes, false);
}

result<read_batch> journaled_store::read_nowait(stream_id id,
                                                offset from,
                                                std::size_t max_entries,
                                                std::size_t max_bytes) {
    return read_impl(id, from, max_entries, max_bytes, true);
}

// With `nowait` the same walk, checks and results, except that each step that could wait
// answers errc::would_block instead (nothing is changed by then: a segment's file stays
// closed, its index unbuilt): a pread of bytes not in the page cache, an open, an index scan,
// and a busy mutex (mu_, view_mu, fds_'s are only tried).
result<read_batch> journaled_store::read_impl(
    stream_id id, offset from, std::size_t max_entries, std::size_t max_bytes, bool nowait) {
    std::shared_ptr<stream_state> st;
    {
        // nowait: every mutex is tried, not waited for (a busy one answers would_block): the
        // holders are other threads' short critical sections, but on a loaded machine a holder
        // may be preempted for a scheduler slice, which an io thread must not sit out.
        std::unique_lock lock(mu_, std::defer_lock);
        if (!(nowait ? lock.try_lock() : (lock.lock(), true))) {
            return error(errc::would_block);
        }
        if (closed_) {
            return error(errc::closed);
        }
        if (failed_.load()) {
            return error(errc::store_failed);
        }
        auto it = streams_.find(id.value());
        if (it == streams_.end()) {
            return error(errc::unknown_stream);
        }
        st = it->second;
    }
    struct found {
        std::uint64_t at;
        std::size_t pos;
        std::uint32_t len;
    };
    read_buffer buf;  // grown without zero-fill: every byte used is read from the file first
    std::vector<found> got;
    std::uint64_t cur = from.value();
    std::size_t taken = 0;
    bool full = false;
    int retries = 0;
    while (!full && got.size() < max_entries) {
        std::uint64_t base = 0;
        std::uint64_t seg_end = 0;
        std::uint64_t seg_bytes = 0;
        index_entry start{};
        // The wanted records all lie before this file byte: the position of the first index
        // entry at or after the first offset not wanted (or the segment's end). Sizes the
        // preads to what the read needs, give or take one index interval, instead of the whole
        // byte budget (a read of 500 x 100 B entries read 288 KiB before, for ~70 KiB).
        std::uint64_t need_end = 0;
        {
            std::unique_lock lock(st->view_mu, std::defer_lock);
            if (!(nowait ? lock.try_lock() : (lock.lock(), true))) {
                return error(errc::would_block);
            }
            if (cur < st->first) {
                if (got.empty()) {
                    return error(errc::trimmed);
                }
                break;
            }
            if (cur >= st->end) {
                break;
            }
            auto it =
                std::upper_bound(st->segments.begin(), st->segments.end(), cur,
                                 [](std::uint64_t o, const segment_view& s) { return o < s.base; });
            NEREUS_ASSERT(it != st->segments.begin(), "offset {} below first segment", cur);
            --it;
            base = it->base;
            if (cur < it->unindexed_end) {
                if (nowait) {
                    return error(errc::would_block);  // building the index scans the segment
                }
                lock.unlock();
                NEREUS_TRY(load_index(*st, base));
                continue;
            }
            seg_end = it->end;
            seg_bytes = it->bytes;
            start = it->index.floor(cur, it->unindexed_pos != 0
                                             ? index_entry{it->unindexed_end, it->unindexed_pos}
                                             : index_entry{base, 0});
            need_end =
                it->index.ceiling(cur + (max_entries - got.size()), {seg_end, seg_bytes}).pos;
        }
        const segment_key k = key(*st, base);
        auto opened = nowait ? result<std::shared_ptr<file>>(fds_.find(k)) : fds_.get(k);
        if (opened && *opened == nullptr) {
            return error(errc::would_block);  // not open: an open() may wait for the disk
        }
        if (!opened) {
            if (is_not_found(opened.error()) && ++retries < 3) {
                continue;  // trimmed meanwhile: the view says so on the next pass
            }
            return error(opened.error());
        }
        file& f = **opened;
        const std::size_t region = buf.size();  // buf index of file byte start.pos
        std::uint64_t read_end = start.pos;     // next file byte to read
        // One pread of what the index says the wanted records span (bounded by the byte
        // budget), into a buffer reserved for it: no second pread and no reallocation that
        // copies the bytes already read (1 KiB entries: a 500-entry read took two 288 KiB
        // preads and a 288 KiB copy before).
        const std::uint64_t chunk = std::clamp<std::uint64_t>(
            need_end > start.pos ? need_end - start.pos : 0, format::kRecordHeaderSize,
            std::min<std::uint64_t>(max_bytes, 4U << 20) +
                format::kRecordHeaderSize * std::min<std::uint64_t>(max_entries, 4096) +
                opts_.index_interval_bytes);
        if (seg_bytes > start.pos) {
            buf.reserve(region + std::min<std::uint64_t>(chunk, seg_bytes - start.pos));
        }
        // Makes file bytes [p, p + n) available in buf; false if the segment is shorter.
        auto ensure = [&](std::uint64_t p, std::uint64_t n) -> result<bool> {
            if (p + n <= read_end) {
                return true;
            }
            if (p + n > seg_bytes) {
                return false;
            }
            const std::uint64_t want =
                std::min(std::max(p + n - read_end, chunk), seg_bytes - read_end);
            const std::size_t old = buf.size();
            buf.resize(old + want);
            std::size_t done = 0;
            while (done < want) {
                const std::span<std::byte> into(buf.data() + old + done, want - done);
                auto r = nowait ? f.read_at_nowait(read_end + done, into)
                                : f.read_at(read_end + done, into);
                if (!r) {
                    if (nowait && r.error() == std::errc::operation_would_block) {
                        return error(errc::would_block);
                    }
                    return error(r.error());
                }
                if (*r == 0) {
                    return false;
                }
                done += *r;
            }
            read_end += want;
            return true;
        };
        auto damaged = [&](std::uint64_t p, std::uint64_t at, std::string why) {
            if (auto t = removed_since(*st, base, nowait)) {
                // A trim or a delete cut the file this read held open: everything in it is
                // below the first retained offset now, or the stream is gone.
                return tl::unexpected<std::error_code>(make_error_code(*t));
            }
            return corruption(errc::corrupt_segment,
                              {stream_id(st->id), fds_.path(k), p, offset(at), std::move(why)});
        };
        std::uint64_t at = start.offset;
        std::uint64_t p = start.pos;
        while (at < seg_end) {
            if (at >= cur && got.size() >= max_entries) {
                full = true;  // checked before the next header is read: no pread for it
                break;
            }
            auto ok = ensure(p, format::kRecordHeaderSize);
            if (!ok) {
                return error(ok.error());
            }
            if (!*ok) {
                return damaged(p, at, "segment shorter than its records");
            }
            const auto h = format::decode_record_header(buf.data() + region + (p - start.pos));
            if (h.len > format::kMaxPayloadBytes || h.offset != at) {
                return damaged(p, at, "bad record header");
            }
            const bool wanted = at >= cur;
            if (wanted && !got.empty() && taken + h.len > max_bytes) {
                full = true;
                break;
            }
            ok = ensure(p, format::kRecordHeaderSize + h.len);
            if (!ok) {
                return error(ok.error());
            }
            if (!*ok) {
                return damaged(p, at, "segment shorter than its records");
            }
            const std::size_t hp = region + (p - start.pos);
            if (wanted) {
                if (!format::record_crc_ok(buf.data() + hp,
                                           buf.data() + hp + format::kRecordHeaderSize, h.len)) {
                    return damaged(p, at, "record checksum mismatch");
                }
                got.push_back({at, hp + format::kRecordHeaderSize, h.len});
                taken += h.len;
            }
            p += format::kRecordHeaderSize + h.len;
            ++at;
        }
        cur = std::max(cur, at);
    }
    std::vector<entry_view> entries;
    entries.reserve(got.size());
    for (const auto& g : got) {
        entries.push_back({offset(g.at), bytes_view(buf.data() + g.pos, g.len)});
    }
    return read_batch(std::move(buf), std::move(entries));
}

}  // namespace nereus::storage
