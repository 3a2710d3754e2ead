// Stream administration of the journaled store: create, delete, trim, info, list.

#include "nereus/storage/journaled_store.h"
#include "nereus/storage/logger.h"
#include "nereus/storage/remove_in_steps.h"

#include <fmt/format.h>

#include <algorithm>

namespace nereus::storage {

result<void> journaled_store::create_stream(stream_id id) {
    const std::lock_guard admin(admin_mu_);
    {
        const std::lock_guard lock(mu_);
        if (closing_ || closed_) {
            return error(errc::closed);
        }
        if (failed_.load()) {
            return error(errc::store_failed);
        }
        if (streams_.contains(id.value())) {
            return error(errc::stream_exists);
        }
    }
    // Built under a temporary name and renamed into place, so a stream directory with a proper
    // name always holds its first segment: a crash mid-way leaves only a `.creating` leftover.
    const std::string d = fds_.stream_dir(id.value());
    const std::string tmp = d + format::kCreatingSuffix;
    for (const std::string& leftover : {tmp, d}) {  // of an interrupted create or delete
        auto ex = fs_->exists(leftover);
        if (!ex) {
            return error(ex.error());
        }
        if (*ex) {
            NEREUS_TRY(remove_stream_dir(leftover));
        }
    }
    NEREUS_TRY(fs_->create_dir(tmp));
    std::uint64_t incarnation = 0;
    {
        const std::lock_guard lock(mu_);
        incarnation = next_incarnation_++;
    }
    auto st = std::make_shared<stream_state>(id.value(), incarnation);
    {
        auto f =
            fs_->open(path_join(tmp, format::segment_file_name(0)), open_mode::create_exclusive);
        if (!f) {
            return error(f.error());
        }
    }
    NEREUS_TRY(fs_->sync_dir(tmp));
    NEREUS_TRY(fs_->rename(tmp, d));
    NEREUS_TRY(fs_->sync_dir(streams_dir_));
    auto f = fs_->open(fds_.path(key(*st, 0)), open_mode::read_write);
    if (!f) {
        return error(f.error());
    }
    fds_.put(key(*st, 0), std::move(*f));
    st->segments.emplace_back();
    const std::lock_guard lock(mu_);
    streams_.emplace(id.value(), std::move(st));
    return {};
}

result<void> journaled_store::remove_stream_dir(const std::string& d) {
    auto names = fs_->list_dir(d);
    if (!names) {
        return error(names.error());
    }
    // The tombstone goes last, so an interrupted removal is finished by the next recovery.
    // Files are cut in steps before their unlink (remove_in_steps.h: unlinking a full segment
    // stalls the journal's commits for 20-25 ms); nothing reads them any more but a reader of a
    // deleted stream that held one open, and that reader answers unknown_stream.
    for (const auto& n : *names) {
        if (n != format::kTombstoneName) {
            NEREUS_TRY(remove_in_steps(*fs_, path_join(d, n)));
        }
    }
    for (const auto& n : *names) {
        if (n == format::kTombstoneName) {
            NEREUS_TRY(fs_->sync_dir(d));
            NEREUS_TRY(fs_->remove(path_join(d, n)));
        }
    }
    NEREUS_TRY(fs_->remove_dir(d));
    NEREUS_TRY(fs_->sync_dir(streams_dir_));
    return {};
}

result<void> journaled_store::delete_stream(stream_id id) {
    const std::lock_guard admin(admin_mu_);
    std::shared_ptr<stream_state> st;
    {
        std::unique_lock lock(mu_);
        if (closing_ || closed_) {
            return error(errc::closed);
        }
        auto it = streams_.find(id.value());
        if (it == streams_.end()) {
            return error(errc::unknown_stream);
        }
        st = it->second;
        streams_.erase(it);
        // Wait until the committer is done with every record queued for this stream.
        const std::uint64_t target = enqueued_seq_;
        drain_cv_.wait(lock, [&] { return completed_seq_ >= target || failed_.load(); });
        if (failed_.load()) {
            return error(failure_ ? failure_ : make_error_code(errc::store_failed));
        }
    }
    const std::string d = fds_.stream_dir(id.value());
    {
        auto t = fs_->open(path_join(d, format::kTombstoneName), open_mode::create);
        if (!t) {
            return error(t.error());
        }
    }
    NEREUS_TRY(fs_->sync_dir(d));  // from here on, recovery finishes the deletion
    {
        const std::lock_guard lock(st->view_mu);  // a reader cut short: unknown_stream
        st->deleted = true;
    }
    fds_.evict_stream(id.value());
    NEREUS_TRY(remove_stream_dir(d));
    // Move the checkpoint past the stream's journal records, so a re-created stream with the
    // same id can never receive them on replay.
    NEREUS_TRY(checkpoint_now());
    NEREUS_LOG(storage_log(), info, "stream deleted stream={:016x}", id.value());
    return {};
}

result<offset> journaled_store::trim(stream_id id, offset floor) {
    const std::lock_guard admin(admin_mu_);
    if (failed_.load()) {
        return error(errc::store_failed);
    }
    auto st = find_stream(id.value());
    if (!st) {
        return error(errc::unknown_stream);
    }
    std::vector<std::uint64_t> doomed;
    {
        const std::lock_guard lock(st->view_mu);
        // A segment goes only when its successor starts at or below the floor: all its entries
        // are below it. The active (last) segment never goes.
        for (std::size_t i = 0; i + 1 < st->segments.size(); ++i) {
            if (st->segments[i + 1].base > floor.value()) {
                break;
            }
            doomed.push_back(st->segments[i].base);
        }
    }
    const std::string d = fds_.stream_dir(st->id);
    if (st->trim_unsynced) {
        NEREUS_TRY(fs_->sync_dir(d));
        st->trim_unsynced = false;
    }
    // Oldest first, each removal made durable before the next: a crash leaves a prefix removed,
    // never a hole that would make an older segment look like it covers a newer one's range.
    for (const std::uint64_t base : doomed) {
        segment_view gone;
        {
            const std::lock_guard lock(st->view_mu);  // readers now get errc::trimmed
            gone = std::move(st->segments.front());
            st->segments.pop_front();
            st->first = st->segments.front().base;
        }
        fds_.evict(key(*st, base));
        // Renamed out of the segment names (durable with the directory sync), then cut in steps
        // and unlinked (remove_in_steps.h: a 64 MiB unlink stalls the journal's commits). A
        // reader that still holds it open and reads it short answers errc::trimmed
        // (removed_since); a crash after the sync leaves `<name>.trimmed`, removed at open.
        const std::string path = fds_.path(key(*st, base));
        const std::string cut = path + format::kTrimmedSuffix;
        auto renamed = fs_->rename(path, cut);
        if (!renamed && !is_not_found(renamed.error())) {
            const std::lock_guard lock(st->view_mu);  // still there: keep serving it
            st->segments.push_front(std::move(gone));
            st->first = base;
            return error(renamed.error());
        }
        st->trim_unsynced = true;
        NEREUS_TRY(fs_->sync_dir(d));
        st->trim_unsynced = false;
        if (renamed) {
            if (auto r = remove_in_steps(*fs_, cut); !r) {
                NEREUS_LOG(storage_log(), warn, "cannot remove trimmed segment {}: {}", cut,
                           r.error().message());
            }
        }
    }
    std::uint64_t first = 0;
    {
        const std::lock_guard lock(st->view_mu);
        first = st->first;
    }
    if (!doomed.empty()) {
        NEREUS_LOG(storage_log(), debug, "trimmed stream={:016x} segments={} first={}", st->id,
                   doomed.size(), first);
    }
    return offset(first);
}

result<stream_info> journaled_store::info(stream_id id) {
    auto st = find_stream(id.value());
    if (!st) {
        return error(errc::unknown_stream);
    }
    const std::lock_guard lock(st->view_mu);
    return stream_info{offset(st->first), offset(st->end)};
}

std::vector<stream_id> journaled_store::list_streams() {
    std::vector<stream_id> ids;
    {
        const std::lock_guard lock(mu_);
        ids.reserve(streams_.size());
        for (const auto& [id, st] : streams_) {
            ids.emplace_back(id);
        }
    }
    std::sort(ids.begin(), ids.end());
    return ids;
}

}  // namespace nereus::storage
