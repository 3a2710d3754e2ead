// Checkpoints of the journaled store: sync dirty segments, record P, drop old journal files.

#include "nereus/storage/journaled_store.h"
#include "nereus/storage/logger.h"
#include "nereus/storage/remove_in_steps.h"

#include <fmt/format.h>

#include <algorithm>

namespace nereus::storage {

void journaled_store::maybe_checkpoint(std::uint64_t requests) {
    const bool forced = requests > ckpt_taken_;
    if (failed_.load()) {
        if (forced) {
            ckpt_taken_ = requests;  // waiters see the failure
        }
        return;
    }
    if (!forced && bytes_since_ckpt_ < opts_.checkpoint_bytes) {
        return;
    }
    // P (journal_pos_) may only cover applied groups: their records are in the segments the
    // job syncs, and dirty_ lists them. The applier is free from here until our next hand-off.
    wait_applied();
    std::unique_lock lock(ckpt_mu_);
    if (ckpt_job_ || ckpt_busy_) {
        if (!forced) {
            return;  // try again after the next group
        }
        ckpt_done_cv_.wait(lock, [&] { return (!ckpt_job_ && !ckpt_busy_) || ckpt_exited_; });
        if (ckpt_exited_) {
            return;
        }
    }
    ckpt_job_ = make_job(requests);
    bytes_since_ckpt_ = 0;
    if (forced) {
        ckpt_taken_ = requests;  // only the committer thread forces (a leader never writes it)
    }
    lock.unlock();
    ckpt_cv_.notify_one();
}

std::vector<format::stream_mark> journaled_store::stream_marks() {
    std::vector<format::stream_mark> marks;
    const std::lock_guard lock(mu_);
    marks.reserve(streams_.size());
    for (const auto& [id, st] : streams_) {
        marks.push_back({id, st->active_base, st->active_bytes, st->write_offset});
    }
    return marks;
}

journaled_store::checkpoint_job journaled_store::make_job(std::uint64_t covers) {
    checkpoint_job job;
    job.pos = {journal_file_seq_, journal_pos_, next_block_seq_};
    job.dirty.swap(dirty_);
    job.marks = stream_marks();
    job.covers = covers;
    ++ckpt_epoch_;
    return job;
}

void journaled_store::checkpoint_loop() {
    std::unique_lock lock(ckpt_mu_);
    for (;;) {
        ckpt_cv_.wait(lock, [&] { return ckpt_job_.has_value() || ckpt_stop_; });
        if (!ckpt_job_) {
            break;
        }
        checkpoint_job job = std::move(*ckpt_job_);
        ckpt_job_.reset();
        ckpt_busy_ = true;
        lock.unlock();
        result<void> r;
        if (!failed_.load()) {
            r = run_checkpoint(job);
            if (!r) {
                fail_store(r.error());
            }
        }
        lock.lock();
        ckpt_busy_ = false;
        if (r && !failed_.load()) {
            ckpt_done_covers_ = std::max(ckpt_done_covers_, job.covers);
        }
        ckpt_done_cv_.notify_all();
    }
    ckpt_exited_ = true;
    ckpt_done_cv_.notify_all();
}

result<void> journaled_store::run_checkpoint(const checkpoint_job& job) {
    // 1. Every segment written by a block before P is synced ...
    for (const segment_key& k : job.dirty) {
        auto f = fds_.get_uncached(k);
        if (!f) {
            if (is_not_found(f.error())) {
                continue;  // trimmed or deleted since: nothing to keep
            }
            return error(f.error());
        }
        NEREUS_TRY((*f)->sync());
    }
    // 2. ... before P becomes durable, 3. then the journal before P is garbage.
    NEREUS_TRY(write_checkpoint_file(job.pos, job.marks));
    delete_journals_before(job.pos.file_seq);
    stat_checkpoints_.fetch_add(1, std::memory_order_relaxed);
    NEREUS_LOG(storage_log(), debug, "checkpoint journal_file={} pos={} segments_synced={}",
               job.pos.file_seq, job.pos.pos, job.dirty.size());
    return {};
}

result<void> journaled_store::write_checkpoint_file(const format::journal_position& pos,
                                                    std::span<const format::stream_mark> marks) {
    const std::string tmp = path_join(dir_, format::kCheckpointTmpName);
    const auto bytes = format::encode_checkpoint(pos, marks);
    auto f = fs_->open(tmp, open_mode::create);
    if (!f) {
        return error(f.error());
    }
    NEREUS_TRY((*f)->truncate(0));
    NEREUS_TRY((*f)->write_at(0, bytes));
    NEREUS_TRY((*f)->sync());
    f->reset();
    NEREUS_TRY(fs_->rename(tmp, path_join(dir_, format::kCheckpointName)));
    NEREUS_TRY(fs_->sync_dir(dir_));
    return {};
}

void journaled_store::delete_journals_before(std::uint64_t file_seq) {
    auto names = fs_->list_dir(journal_dir_);
    if (!names) {
        return;
    }
    for (const auto& n : *names) {
        auto seq = format::parse_journal_file_name(n);
        if (seq && *seq < file_seq) {
            // Garbage: the checkpoint at file_seq is durable, and recovery starts there (a
            // crash may leave this file cut short; it is never read and goes at the next one).
            if (auto r = remove_in_steps(*fs_, path_join(journal_dir_, n)); !r) {
                NEREUS_LOG(storage_log(), warn, "cannot remove journal file {}: {}", n,
                           r.error().message());
            }
        }
    }
}

result<void> journaled_store::checkpoint_now() {
    std::uint64_t mine = 0;
    {
        const std::lock_guard lock(mu_);
        if (failed_.load()) {
            return error(failure_ ? failure_ : make_error_code(errc::store_failed));
        }
        if (stop_) {
            return error(errc::closed);
        }
        mine = ++ckpt_requests_;
    }
    work_cv_.notify_all();
    std::unique_lock lock(ckpt_mu_);
    ckpt_done_cv_.wait(lock,
                       [&] { return ckpt_done_covers_ >= mine || failed_.load() || ckpt_exited_; });
    if (ckpt_done_covers_ >= mine) {
        return {};
    }
    lock.unlock();
    return error(failed_.load() ? failure() : make_error_code(errc::closed));
}

}  // namespace nereus::storage
