#include "nereus/storage/journaled_store.h"

#include "nereus/base/assert.h"
#include "nereus/base/crc32c.h"
#include "nereus/base/flush_batch.h"
#include "nereus/base/thread_name.h"
#include "nereus/base/wake_batch.h"
#include "nereus/storage/logger.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

namespace nereus::storage {
namespace {

constexpr std::size_t kMaxIov = 512;
// An unprepared active journal file asks for a spare once it holds this much.
constexpr std::uint64_t kPrepareAfterBytes = 1ULL << 20;
// This thread holds a store's commit token as a leader (its completions may append without
// backpressure, as the committer thread's may).
thread_local bool tl_leading = false;

}  // namespace

std::string corruption_info::to_string() const {
    std::string s = reason;
    if (stream) {
        s += fmt::format(" stream={:016x}", stream->value());
    }
    s += fmt::format(" file={} byte={}", file, byte_position);
    if (at) {
        s += fmt::format(" offset={}", at->value());
    }
    return s;
}

// ---- stream_store ---------------------------------------------------------------------------

result<std::unique_ptr<stream_store>> stream_store::open(std::shared_ptr<file_system> fs,
                                                         std::string dir,
                                                         store_options options,
                                                         corruption_info* corruption) {
    if (options.segment_max_bytes == 0 || options.journal_max_bytes == 0 ||
        options.fd_cache_size == 0 || options.max_group_bytes == 0 ||
        options.max_group_bytes > (1ULL << 30) || options.index_interval_bytes == 0) {
        return error(errc::invalid_argument);
    }
    auto store = std::make_unique<journaled_store>(std::move(fs), std::move(dir), options);
    if (auto r = store->start(); !r) {
        if (corruption != nullptr) {
            if (auto c = store->last_corruption()) {
                *corruption = *c;
            }
        }
        return error(r.error());
    }
    return std::unique_ptr<stream_store>(std::move(store));
}

void stream_store::append(stream_id id,
                          bytes_view payload,
                          verified_tail /*tail*/,
                          append_completion done) {
    append(id, payload, std::move(done));
}

result<read_batch> stream_store::read_nowait(stream_id /*id*/,
                                             offset /*from*/,
                                             std::size_t /*max_entries*/,
                                             std::size_t /*max_bytes*/) {
    return error(errc::would_block);
}

result<offset> stream_store::append_sync(stream_id id, bytes_view payload) {
    struct waiter {
        std::mutex mu;
        std::condition_variable cv;
        std::optional<result<offset>> r;
    } w;
    // Inside a caller's flush_batch scope (an io thread's read batch) a leader commit this
    // append registers would run only at the scope's end, after this wait: the store's
    // committer takes such a late group over (journaled_store.h, kLeaderLate).
    append(id, payload, [&w](result<offset> r) {
        const std::lock_guard lock(w.mu);
        w.r = r;
        w.cv.notify_one();  // under the lock: `w` may be gone once the lock is released
    });
    std::unique_lock lock(w.mu);
    w.cv.wait(lock, [&] { return w.r.has_value(); });
    return *w.r;
}

// ---- lifecycle ------------------------------------------------------------------------------

journaled_store::journaled_store(std::shared_ptr<file_system> fs,
                                 std::string dir,
                                 const store_options& opts)
    : fs_(std::move(fs)),
      dir_(std::move(dir)),
      journal_dir_(path_join(dir_, format::kJournalDirName)),
      streams_dir_(path_join(dir_, format::kStreamsDirName)),
      opts_(opts),
      fds_(fs_, streams_dir_, opts.fd_cache_size) {
    pending_.reset();
    committing_.reset();
    applying_.reset();
    leader_slot_->store = this;
}

journaled_store::~journaled_store() {
    bool need_close = false;
    {
        const std::lock_guard lock(mu_);
        need_close = started_ && !closed_;
    }
    if (need_close) {
        (void)close();
    }
}

result<void> journaled_store::start() {
    NEREUS_TRY(fs_->create_dirs(journal_dir_));
    NEREUS_TRY(fs_->create_dirs(streams_dir_));
    NEREUS_TRY(recover());
    {
        const std::lock_guard lock(mu_);
        started_ = true;
    }
    // store_options::prepare_journal_at_open: the spare is asked for now, while the store is
    // idle (a spare kept from the last run makes this a no-op: request_spare finds it).
    const bool spare_now =
        opts_.prepare_journal_files && opts_.prepare_journal_at_open && !journal_prepared_;
    if (spare_now) {
        spare_requested_ = true;  // before the committer runs: it owns the field from then on
    }
    committer_ = std::thread([this] {
        set_thread_name("nereus-commit");
        committer_loop();
    });
    applier_ = std::thread([this] {
        set_thread_name("nereus-apply");
        apply_loop();
    });
    checkpointer_ = std::thread([this] {
        set_thread_name("nereus-ckpt");
        checkpoint_loop();
    });
    preparer_ = std::thread([this] {
        set_thread_name("nereus-prepare");
        preparer_loop();
    });
    if (spare_now) {
        request_spare();
    }
    if (opts_.segment_writeback_bytes > 0) {
        {
            const std::lock_guard lock(wb_mu_);
            wb_running_ = true;
        }
        writeback_ = std::thread([this] {
            set_thread_name("nereus-wback");
            writeback_loop();
        });
    }
    NEREUS_LOG(storage_log(), info, "stream store open dir={} streams={} journal_file={}", dir_,
               streams_.size(), journal_file_seq_);
    return {};
}

result<void> journaled_store::close() {
    {
        const std::lock_guard lock(mu_);
        if (closed_ || closing_ || !started_) {
            return {};
        }
        closing_ = true;
        stop_ = true;
    }
    {
        // Waits for a leader commit in progress; a scope that ends later finds no store.
        const std::lock_guard lock(leader_slot_->mu);
        leader_slot_->store = nullptr;
    }
    {
        const std::lock_guard lock(prep_mu_);
        prep_stop_ = true;  // an unfinished spare is abandoned (its tmp file removed)
    }
    prep_cv_.notify_all();
    preparer_.join();
    work_cv_.notify_all();
    space_cv_.notify_all();
    committer_.join();  // drains every queued append first
    {
        const std::lock_guard lock(mu_);
        apply_stop_ = true;
    }
    apply_cv_.notify_all();
    applier_.join();  // applies the last handed-off group first
    {
        const std::lock_guard lock(ckpt_mu_);
        ckpt_stop_ = true;
    }
    ckpt_cv_.notify_all();
    checkpointer_.join();
    if (writeback_.joinable()) {
        {
            const std::lock_guard lock(wb_mu_);
            wb_stop_ = true;
        }
        wb_cv_.notify_all();
        writeback_.join();
    }

    result<void> r;
    if (!failed_.load()) {
        const checkpoint_job job = make_job(0);
        r = run_checkpoint(job);
        if (!r) {
            fail_store(r.error());
        }
    }
    if (r && !failed_.load() && journal_ != nullptr) {
        // Cut the unused zero tail of a prepared file, so the next open does not read it. Not
        // synced: if the cut is lost, the next open reads zeros, which is just as correct.
        if (auto t = journal_->truncate(journal_pos_); !t) {
            NEREUS_LOG(storage_log(), warn, "cannot truncate the journal's unused tail: {}",
                       t.error().message());
        }
    }
    journal_.reset();
    fds_.clear();
    {
        const std::lock_guard lock(mu_);
        closed_ = true;
    }
    if (failed_.load()) {
        return error(failure());
    }
    NEREUS_LOG(storage_log(), info, "stream store closed dir={} commits={} leader_commits={}", dir_,
               stat_commits_.load(), stat_leader_commits_.load());
    return r;
}

void journaled_store::fail_store(std::error_code ec) {
    {
        const std::lock_guard lock(mu_);
        if (!failed_.load()) {
            failure_ = ec;
            failed_.store(true);
            NEREUS_LOG(storage_log(), err, "stream store failed dir={} error={}", dir_,
                       ec.message());
        }
    }
    work_cv_.notify_all();
    space_cv_.notify_all();
    drain_cv_.notify_all();
    apply_done_cv_.notify_all();
    {
        const std::lock_guard lock(ckpt_mu_);  // no lost wake-up for checkpoint waiters
    }
    ckpt_done_cv_.notify_all();
    ckpt_cv_.notify_all();
}

std::error_code journaled_store::failure() const {
    const std::lock_guard lock(mu_);
    return failure_ ? failure_ : make_error_code(errc::store_failed);
}

std::optional<corruption_info> journaled_store::last_corruption() const {
    const std::lock_guard lock(corruption_mu_);
    return last_corruption_;
}

store_stats journaled_store::stats() const {
    return {stat_commits_.load(),           stat_appends_.load(),
            stat_journal_bytes_.load(),     stat_checkpoints_.load(),
            stat_segment_rolls_.load(),     stat_journal_rolls_.load(),
            stat_prepared_journals_.load(), stat_spares_skipped_.load(),
            stat_leader_commits_.load(),    stat_partial_spares_.load(),
            stat_fill_stops_.load(),        stat_partial_spares_passed_.load(),
            stat_spares_asked_.load(),      stat_pipelined_applies_.load(),
            stat_paced_commits_.load(),     hist_commit_wait_.snapshot(),
            hist_journal_write_.snapshot(), hist_commit_apply_.snapshot()};
}

tl::unexpected<std::error_code> journaled_store::corruption(errc code, corruption_info info) {
    NEREUS_LOG(storage_log(), err, "corruption ({}): {}", make_error_code(code).message(),
               info.to_string());
    const std::lock_guard lock(corruption_mu_);
    last_corruption_ = std::move(info);
    return error(code);
}

std::shared_ptr<stream_state> journaled_store::find_stream(std::uint64_t id) {
    const std::lock_guard lock(mu_);
    auto it = streams_.find(id);
    return it == streams_.end() ? nullptr : it->second;
}

// ---- append / commit ------------------------------------------------------------------------

void journaled_store::append(stream_id id, bytes_view payload, append_completion done) {
    append(id, payload, verified_tail{}, std::move(done));
}

void journaled_store::append(stream_id id,
                             bytes_view payload,
                             verified_tail tail,
                             append_completion done) {
    if (payload.size() > format::kMaxPayloadBytes) {
        done(error(errc::record_too_large));
        return;
    }
    if (tail.len > payload.size() || tail.len < kShiftMinBytes) {
        tail = {};  // very short tails: reading them costs less than combining
    }
#ifndef NDEBUG
    NEREUS_ASSERT(tail.len == 0 || crc32c::value(payload.last(tail.len)) == tail.crc,
                  "append: the verified tail's CRC does not match its bytes");
#endif
    // The CRC of the payload, or of the bytes before its verified tail (combined under mu_,
    // where the shifters are).
    std::uint32_t payload_crc = crc32c::value(payload.first(payload.size() - tail.len));
    const auto len = static_cast<std::uint32_t>(payload.size());
    const std::size_t rec_len = format::kRecordHeaderSize + len;
    std::unique_lock lock(mu_);
    stream_state* st = nullptr;  // looked up once per pass: a backpressure wait unlocks mu_
    for (;;) {
        std::error_code ec;
        // Failed before closed: reopening_store's append may still reach a failed store its
        // thread is closing for the reopen, and answers store_failed then, as its slow path.
        if (failed_.load()) {
            ec = make_error_code(errc::store_failed);
        } else if (closing_ || closed_) {
            ec = make_error_code(errc::closed);
        } else if (auto it = streams_.find(id.value()); it != streams_.end()) {
            st = it->second.get();
        } else {
            ec = make_error_code(errc::unknown_stream);
        }
        if (ec) {
            lock.unlock();
            done(error(ec));
            return;
        }
        // A completion appending on the committer thread must not wait for itself.
        if (pending_.appends.empty() ||
            pending_.bytes.size() + rec_len <= opts_.max_group_bytes + format::kBlockHeaderSize ||
            std::this_thread::get_id() == committer_id_ ||
            std::this_thread::get_id() == applier_id_ || tl_leading) {
            break;
        }
        space_cv_.wait(lock);  // backpressure: the committer is behind by a whole group
    }
    if (tail.len > 0) {
        if (const crc32c::shifter* sh = shifter_for(tail.len)) {
            payload_crc = sh->combine(payload_crc, tail.crc);
        } else if (tail.len >= kCombineMinBytes) {
            payload_crc = crc32c::combine(payload_crc, tail.crc, tail.len);
        } else {
            payload_crc = crc32c::extend(payload_crc, payload.last(tail.len));
        }
    }
    const std::uint64_t off = st->next_offset++;
    if (pending_.appends.empty()) {
        pending_.first_append = std::chrono::steady_clock::now();
    }
    std::byte* p = pending_.bytes.extend(format::kJournalRecordPrefix + rec_len);
    const std::uint64_t rec_pos =
        static_cast<std::uint64_t>(p - pending_.bytes.data()) + format::kJournalRecordPrefix;
    format::put_u64(p, id.value());
    p += format::kJournalRecordPrefix;
    format::finish_record_header(p, payload_crc, len, off);
    if (len > 0) {
        std::memcpy(p + format::kRecordHeaderSize, payload.data(), len);
    }
    // Fold the record (stream id, header, payload) into the block's CRC: the header's bytes,
    // then the payload from its CRC when a shifter for its length exists.
    pending_.records_crc = crc32c::extend(pending_.records_crc, p - format::kJournalRecordPrefix,
                                          format::kJournalRecordPrefix + format::kRecordHeaderSize);
    if (const crc32c::shifter* sh = len >= kShiftMinBytes ? shifter_for(len) : nullptr) {
        pending_.records_crc = sh->combine(pending_.records_crc, payload_crc);
    } else if (len >= kCombineMinBytes) {
        pending_.records_crc = crc32c::combine(pending_.records_crc, payload_crc, len);
    } else {
        pending_.records_crc =
            crc32c::extend(pending_.records_crc, p + format::kRecordHeaderSize, len);
    }
    // Constructed in place: the completion chain (up to 144 B of nested captures) moves once.
    pending_.appends.emplace_back(st, off, rec_pos, rec_len, std::move(done));
    ++enqueued_seq_;
    // Wake a waiting committer only once the group it waits for is complete (see linger()),
    // and not while a leader commits (its release wakes the committer) or will take the group.
    bool wake = false;
    if (committer_waiting_ && !commit_busy_ && !apply_busy_ && leader_may_take() &&
        (lead_registered_ || leader_mode_)) {
        if (!lead_registered_) {
            lead_registered_ = flush_batch::defer(leader_slot_, &journaled_store::run_leader);
            wake = !lead_registered_;  // no scope on this thread: the committer commits
            if (lead_registered_) {
                lead_since_ = std::chrono::steady_clock::now();
                // The committer's idle wait must be timed while a leader is registered (the
                // safety net, kLeaderLate): wake it once when it waits untimed.
                wake = !committer_timed_;
            }
        }
    } else if (committer_idle_ && !(committer_waiting_ && commit_busy_)) {
        wake = pending_.appends.size() >= wake_at_appends_ ||
               pending_.bytes.size() >= opts_.max_group_bytes;
        // One notify per wait: the appends made before the committer runs (tens of them at
        // max rate) do not signal it again. Its wait's predicate holds from here on.
        committer_idle_ = !wake;
    }
    lock.unlock();
    if (wake) {
        work_cv_.notify_one();
    }
}

const crc32c::shifter* journaled_store::shifter_for(std::size_t len) {
    shift_slot& slot = shifters_[(len * 0x9e3779b97f4a7c15ULL) >> 61];
    if (slot.shifter && slot.shifter->length() == len) {
        // A use of the resident breaks another length's streak: two hot lengths sharing a slot
        // keep the first one's tables instead of rebuilding (~50 us) every 64 appends each.
        slot.streak = 0;
        return slot.shifter.get();
    }
    if (slot.candidate != len) {
        slot.candidate = len;
        slot.streak = 0;
    }
    if (++slot.streak < kShiftStreak) {
        return nullptr;
    }
    slot.shifter = std::make_unique<crc32c::shifter>(len);
    return slot.shifter.get();
}

bool journaled_store::leader_may_take() const {
    return pending_.appends.size() <= kLeaderMaxAppends &&
           pending_.bytes.size() <= kLeaderMaxBytes + format::kBlockHeaderSize;
}

bool journaled_store::committer_has_work() const {
    if (commit_busy_) {
        return false;  // a leader commits; its release wakes us
    }
    if (stop_ || ckpt_requests_ > ckpt_taken_) {
        return true;
    }
    if (pending_.appends.empty()) {
        return false;
    }
    return !lead_registered_ || !leader_may_take() ||
           std::chrono::steady_clock::now() >= lead_since_ + kLeaderLate;
}

void journaled_store::release_commit(std::uint64_t group_seq) {
    if (!apply_busy_) {
        completed_seq_ = group_seq;  // else the applier's group ends at group_seq: it sets it
    }
    commit_busy_ = false;
    leader_mode_ = opts_.leader_commits && last_group_appends_ <= kLeaderMaxAppends;
    drain_cv_.notify_all();
}

void journaled_store::run_leader(void* slot) {
    auto* ls = static_cast<leader_slot*>(slot);
    const std::lock_guard lock(ls->mu);
    if (ls->store != nullptr) {
        ls->store->lead_commit();
    }
}

void journaled_store::lead_commit() {
    std::unique_lock lock(mu_);
    lead_registered_ = false;
    if (pending_.appends.empty()) {
        return;  // the committer took it
    }
    if (commit_busy_ || apply_busy_ || !committer_waiting_ || stop_ || failed_.load() ||
        ckpt_requests_ > ckpt_taken_ || !leader_may_take() || inside_sync_interval()) {
        // Hand the group to the committer (or to the token's release, which wakes it).
        const bool wake = committer_waiting_ && committer_has_work();
        lock.unlock();
        if (wake) {
            work_cv_.notify_one();
        }
        return;
    }
    commit_busy_ = true;
    std::swap(pending_, committing_);
    pending_.reset();
    const std::uint64_t group_seq = enqueued_seq_;
    const std::uint64_t requests = ckpt_taken_;  // never forces a checkpoint
    lock.unlock();
    const bool was_leading = std::exchange(tl_leading, true);
    stat_leader_commits_.fetch_add(1, std::memory_order_relaxed);
    commit_group(committing_);
    maybe_checkpoint(requests);
    tl_leading = was_leading;
    lock.lock();
    release_commit(group_seq);
    const bool wake = committer_waiting_ && committer_has_work();
    lock.unlock();
    if (wake) {
        work_cv_.notify_one();  // appends made meanwhile, a close, or a forced checkpoint
    }
}

void journaled_store::committer_loop() {
    std::unique_lock lock(mu_);
    committer_id_ = std::this_thread::get_id();
    leader_mode_ = opts_.leader_commits;
    for (;;) {
        while (!committer_has_work()) {
            committer_idle_ = true;
            committer_waiting_ = true;
            // Timed for kLeaderLate after the last registration (not only while one is
            // registered): while leaders keep registering, one wake-up per kLeaderLate.
            if (std::chrono::steady_clock::now() < lead_since_ + kLeaderLate) {
                committer_timed_ = true;
                work_cv_.wait_until(lock, lead_since_ + kLeaderLate);
                committer_timed_ = false;
            } else {
                work_cv_.wait(lock);
            }
            committer_waiting_ = false;
            committer_idle_ = false;
        }
        if (pending_.appends.empty() && stop_) {
            break;
        }
        commit_busy_ = true;
        pace(lock);
        linger(lock);
        std::swap(pending_, committing_);
        pending_.reset();
        const std::uint64_t group_seq = enqueued_seq_;
        const std::uint64_t requests = ckpt_requests_;
        lock.unlock();
        space_cv_.notify_all();

        if (!committing_.appends.empty() && write_group(committing_)) {
            apply_or_hand_off(committing_, group_seq);
        }
        maybe_checkpoint(requests);

        lock.lock();
        release_commit(group_seq);
    }
}

void journaled_store::apply_or_hand_off(group& g, std::uint64_t group_seq) {
    std::unique_lock lock(mu_);
    // Inline when the applier is free (else this group would overtake its group) and either
    // nothing is queued behind this group or the group is small (its copies take about as long
    // as waking the applier would; each hand-off costs a thread wake-up and a core switch).
    if (!opts_.pipelined_apply ||
        (!apply_busy_ &&
         (pending_.appends.empty() || g.bytes.size() < opts_.pipelined_apply_min_bytes))) {
        lock.unlock();
        apply_group(g);
        return;
    }
    apply_done_cv_.wait(lock, [&] { return !apply_busy_; });
    std::swap(g, applying_);  // g gets the applier's reset buffer
    applying_seq_ = group_seq;
    apply_busy_ = true;
    lock.unlock();
    stat_pipelined_applies_.fetch_add(1, std::memory_order_relaxed);
    apply_cv_.notify_one();
}

void journaled_store::wait_applied() {
    std::unique_lock lock(mu_);
    apply_done_cv_.wait(lock, [&] { return !apply_busy_; });
}

void journaled_store::apply_loop() {
    std::unique_lock lock(mu_);
    applier_id_ = std::this_thread::get_id();
    for (;;) {
        apply_cv_.wait(lock, [&] { return apply_busy_ || apply_stop_; });
        if (!apply_busy_) {
            break;  // stopping, nothing handed off
        }
        lock.unlock();
        apply_group(applying_);
        lock.lock();
        completed_seq_ = std::max(completed_seq_, applying_seq_);
        apply_busy_ = false;
        apply_done_cv_.notify_all();
        drain_cv_.notify_all();
        // Leaders wait for a free applier: wake the committer if it idles with appends queued.
        if (committer_waiting_ && committer_has_work()) {
            work_cv_.notify_one();
        }
    }
}

void journaled_store::pace(std::unique_lock<std::mutex>& lock) {
    // store_options::min_sync_interval. commit_busy_ is set and committer_idle_ is not, so
    // appenders neither notify nor register a leader meanwhile: they only fill the group.
    if (stop_ || pending_.appends.empty() || !inside_sync_interval()) {
        return;
    }
    stat_paced_commits_.fetch_add(1, std::memory_order_relaxed);
    work_cv_.wait_until(lock, last_sync_start_ + opts_.min_sync_interval, [&] { return stop_; });
}

bool journaled_store::inside_sync_interval() const {
    return opts_.min_sync_interval.count() > 0 &&
           std::chrono::steady_clock::now() < last_sync_start_ + opts_.min_sync_interval;
}

void journaled_store::linger(std::unique_lock<std::mutex>& lock) {
    // A closed-loop writer with W appends in flight re-appends as its completions fire; taking
    // the queue at once would sync a small group and leave the rest for the next sync, so
    // groups alternate between large and small and throughput halves. Wait briefly for the
    // queue to reach the last group's size instead (bounded by half the last sync time).
    const std::size_t target = last_group_appends_;
    if (opts_.max_commit_delay.count() <= 0 || target <= 1 || stop_ || pending_.appends.empty() ||
        pending_.appends.size() >= target) {
        return;
    }
    const auto delay = std::min<std::chrono::nanoseconds>(opts_.max_commit_delay, last_sync_ / 2);
    const auto deadline = std::chrono::steady_clock::now() + delay;
    committer_idle_ = true;  // appenders notify while we wait, once the target is reached
    wake_at_appends_ = target;
    work_cv_.wait_until(lock, deadline, [&] {
        return stop_ || pending_.appends.size() >= target ||
               pending_.bytes.size() >= opts_.max_group_bytes;
    });
    wake_at_appends_ = 1;
    committer_idle_ = false;
}

void journaled_store::commit_group(group& g) {
    if (write_group(g)) {
        wait_applied();  // a leader only commits while the applier is free; cheap then
        apply_group(g);
    }
}

bool journaled_store::write_group(group& g) {
    auto fail_all = [&](std::error_code ec) {
        wait_applied();  // the earlier group's completions first
        for (auto& a : g.appends) {
            a.done(error(ec));
        }
        g.reset();
    };
    if (failed_.load()) {
        fail_all(make_error_code(errc::store_failed));
        return false;
    }
    // Roll when full, or early when a spare is usable and the active file is not prepared (after
    // an open without a spare, or a roll that found none): its commits extend the file. A spare
    // still being filled is taken only by a writer known to be slow: a max-rate writer would
    // catch up with the fill within a few commits and wait for its chunk in progress, then
    // write the rest of the file unprepared anyway (doc/format/segment.md, "Prepared journal
    // files" 2a). It rolls to an empty file instead and switches once the spare is complete.
    // The first commit after an idle gap may start a burst: it does not take one either.
    const bool full = journal_pos_ >= opts_.journal_max_bytes;
    const bool slow = writing_slow(opts_.rate_clock != nullptr ? opts_.rate_clock()
                                                               : std::chrono::steady_clock::now());
    if (full || (!journal_prepared_ && spare_ready_.load(std::memory_order_acquire) &&
                 (spare_complete_.load(std::memory_order_acquire) || slow))) {
        if (full && opts_.prepare_journal_files && !spare_requested_) {
            stat_spares_skipped_.fetch_add(1, std::memory_order_relaxed);  // writes stayed fast
        }
        if (auto r = roll_journal(slow); !r) {
            fail_store(r.error());
            fail_all(r.error());
            return false;
        }
    }
    const auto block = std::span<std::byte>(g.bytes.data(), g.bytes.size());
    if (fill_watch_ && (journal_pos_ + block.size() + kDirectIoAlign > fill_safe_ ||
                        journal_pos_ >= fill_kick_at_)) {
        watch_fill(journal_pos_ + block.size());  // the active file is still being zero-filled
    }
    format::finish_block(block, next_block_seq_, static_cast<std::uint32_t>(g.appends.size()),
                         g.records_crc);
    const auto sync_start = std::chrono::steady_clock::now();
    last_sync_start_ = sync_start;
    hist_commit_wait_.record(sync_start - g.first_append);
    // Durable when this returns: a direct write (O_DSYNC) of the block's pages, or a buffered
    // write and an fdatasync.
    auto r = journal_direct_ ? write_direct(block) : journal_->write_at(journal_pos_, block);
    if (r && !journal_direct_) {
        r = journal_->sync();
    }
    const auto sync_end = std::chrono::steady_clock::now();
    last_sync_ = sync_end - sync_start;
    last_group_appends_ = g.appends.size();
    if (!r) {
        // The block's state on disk is unknown: fail it and everything after (never retry a
        // failed fdatasync, see file_system.h).
        fail_store(r.error());
        fail_all(r.error());
        return false;
    }
    g.synced = sync_end;
    journal_pos_ += block.size();
    ++next_block_seq_;
    // The next spare is prepared while this file fills: from half way, or, if this file is not
    // prepared, once it holds kPrepareAfterBytes (so a store that writes little — a test, an
    // idle per-topic store — never writes a spare); and only while the journal's recent write
    // rate (record_commit_rate) is below prepare_max_bytes_per_s. A writer at max rate gains
    // little from a prepared file and would share the disk with its zero-fill; when it slows
    // down, the spare is asked for then.
    record_commit_rate(opts_.rate_clock != nullptr ? opts_.rate_clock() : sync_start + last_sync_,
                       block.size());
    if (opts_.prepare_journal_files && !spare_requested_ &&
        journal_pos_ >= std::min(journal_prepared_ ? UINT64_MAX : kPrepareAfterBytes,
                                 opts_.journal_max_bytes / 2) &&
        !writing_fast()) {
        spare_requested_ = true;
        request_spare();
    }
    bytes_since_ckpt_ += block.size();
    stat_commits_.fetch_add(1, std::memory_order_relaxed);
    stat_appends_.fetch_add(g.appends.size(), std::memory_order_relaxed);
    stat_journal_bytes_.fetch_add(block.size(), std::memory_order_relaxed);
    hist_journal_write_.record(last_sync_);
    return true;
}

void journaled_store::apply_group(group& g) {
    // Durable now. Copy each record into its stream's segment, grouped per stream.
    touched_.clear();
    for (auto& a : g.appends) {
        if (!a.st->in_group) {
            a.st->in_group = true;
            a.st->group_records.clear();
            touched_.push_back(a.st);
        }
        a.st->group_records.emplace_back(g.bytes.data() + a.rec_pos, a.rec_len);
    }
    for (stream_state* st : touched_) {
        st->in_group = false;
        if (failed_.load()) {
            continue;
        }
        if (auto w = write_records(*st, st->group_records); !w) {
            // The records are durable in the journal (recovery replays them), so their appends
            // still succeed; the store fails because this segment is now inconsistent.
            NEREUS_LOG(storage_log(), err, "segment write failed stream={:016x} error={}", st->id,
                       w.error().message());
            fail_store(w.error());
        }
    }
    {
        // The receivers' wake-ups (posts to io threads) run once each after the whole group.
        const wake_batch wakes;
        for (auto& a : g.appends) {
            a.done(offset(a.offset));
        }
    }
    hist_commit_apply_.record(std::chrono::steady_clock::now() - g.synced);
    g.reset();
}

result<void> journaled_store::write_direct(std::span<const std::byte> block) {
    constexpr std::uint64_t kAlign = kDirectIoAlign;
    const std::uint64_t page = journal_pos_ & ~(kAlign - 1);
    const auto head = static_cast<std::size_t>(journal_pos_ - page);  // kept in direct_buf_
    const std::size_t end = head + block.size();
    const std::size_t len = (end + kAlign - 1) & ~(kAlign - 1);
    if (len > direct_cap_) {
        // Grows to the largest block seen (a group's bytes are bounded by max_group_bytes plus
        // one record): no allocation per commit once grown.
        const std::size_t cap = std::max<std::size_t>(len, 64 * kAlign);
        direct_io_buffer nb = allocate_direct_io_buffer(cap);
        if (nb == nullptr) {
            return error(std::errc::not_enough_memory);
        }
        if (head > 0) {
            std::memcpy(nb.get(), direct_buf_.get(), head);
        }
        direct_buf_ = std::move(nb);
        direct_cap_ = cap;
    }
    std::byte* buf = direct_buf_.get();
    std::memcpy(buf + head, block.data(), block.size());
    std::memset(buf + end, 0, len - end);
    // Rewrites the first page's earlier bytes as they are: a torn write leaves each of its
    // sectors old or new, and both hold the same earlier blocks.
    NEREUS_TRY(journal_->write_at(page, std::span<const std::byte>(buf, len)));
    const std::size_t keep = end % kAlign;  // the new last, partial page
    if (keep != 0 && end > keep) {
        std::memmove(buf, buf + (end - keep), keep);
    }
    return {};
}

result<void> journaled_store::roll_journal(bool take_partial) {
    NEREUS_TRY(open_journal_file(journal_file_seq_ + 1, take_partial));
    stat_journal_rolls_.fetch_add(1, std::memory_order_relaxed);
    return {};
}

result<void> journaled_store::flush_records(file& f, std::uint64_t& pos) {
    for (std::size_t i = 0; i < iov_.size(); i += kMaxIov) {
        const auto parts =
            std::span<const bytes_view>(iov_).subspan(i, std::min(kMaxIov, iov_.size() - i));
        NEREUS_TRY(f.writev_at(pos, parts));
        for (const auto& p : parts) {
            pos += p.size();
        }
    }
    iov_.clear();
    return {};
}

result<void> journaled_store::write_records(stream_state& st, std::span<const bytes_view> records) {
    if (records.empty()) {
        return {};
    }
    auto opened = fds_.get(key(st, st.active_base));
    if (!opened) {
        return error(opened.error());
    }
    std::shared_ptr<file> f = std::move(*opened);
    iov_.clear();
    std::uint64_t pos = st.active_bytes;
    // Whether the active segment is segment_min_age old: read from the clock at most once per
    // call (a group's records are written within microseconds), not once per record.
    age_test aged = age_test::unknown;
    for (const bytes_view rec : records) {
        NEREUS_ASSERT(format::decode_record_header(rec.data()).offset == st.write_offset,
                      "stream {:016x}: record offset {} != write offset {}", st.id,
                      format::decode_record_header(rec.data()).offset, st.write_offset);
        if (st.active_bytes > 0 &&
            (st.active_bytes + rec.size() > opts_.segment_max_bytes || entry_roll_due(st, aged))) {
            NEREUS_TRY(flush_records(*f, pos));
            NEREUS_TRY(roll_segment(st, f));
            aged = age_test::unknown;  // a new segment: its age starts now
            pos = 0;
        }
        if (!st.index_any || st.active_bytes - st.index_last_pos >= opts_.index_interval_bytes) {
            st.staged_index.push_back({st.write_offset, st.active_bytes});
            st.index_any = true;
            st.index_last_pos = st.active_bytes;
        }
        iov_.push_back(rec);
        st.active_bytes += rec.size();
        ++st.write_offset;
    }
    NEREUS_TRY(flush_records(*f, pos));
    if (opts_.segment_writeback_bytes > 0 &&
        st.active_bytes - st.writeback_from >= opts_.segment_writeback_bytes) {
        queue_writeback(f, st.writeback_from, st.active_bytes - st.writeback_from);
        st.writeback_from = st.active_bytes;
    }
    mark_dirty(st);
    publish(st);
    return {};
}

void journaled_store::queue_writeback(std::shared_ptr<file> f,
                                      std::uint64_t from,
                                      std::uint64_t len) {
    {
        const std::lock_guard lock(wb_mu_);
        if (wb_running_) {
            wb_queue_.push_back({std::move(f), from, len});
            wb_cv_.notify_one();
            return;
        }
    }
    // No writeback thread (recovery, before start): a hint, started here. An error (the
    // disk's) is the next sync's to report.
    (void)f->start_writeback(from, len);
}

void journaled_store::writeback_loop() {
    std::vector<writeback_slice> work;
    std::unique_lock lock(wb_mu_);
    for (;;) {
        wb_cv_.wait(lock, [&] { return wb_stop_ || !wb_queue_.empty(); });
        if (wb_queue_.empty()) {
            wb_running_ = false;  // stopping, every queued slice started
            return;
        }
        work.swap(wb_queue_);
        lock.unlock();
        for (auto& w : work) {
            (void)w.f->start_writeback(w.from, w.len);  // a hint, as above
        }
        work.clear();  // the files' last references may go here, off the committer
        lock.lock();
    }
}

bool journaled_store::entry_roll_due(const stream_state& st, age_test& aged) const {
    if (opts_.segment_max_entries == 0 ||
        st.write_offset - st.active_base < opts_.segment_max_entries) {
        return false;
    }
    if (aged == age_test::unknown) {
        aged = opts_.segment_min_age.count() <= 0 ||
                       std::chrono::steady_clock::now() - st.active_since >= opts_.segment_min_age
                   ? age_test::old
                   : age_test::young;
    }
    return aged == age_test::old;
}

result<void> journaled_store::roll_segment(stream_state& st, std::shared_ptr<file>& f) {
    // Invariant: a sealed segment is fully synced, so recovery trusts it by name.
    NEREUS_TRY(f->sync());
    publish(st);
    const std::uint64_t base = st.write_offset;
    const segment_key k = key(st, base);
    auto created = fs_->open(fds_.path(k), open_mode::create);
    if (!created) {
        return error(created.error());
    }
    std::shared_ptr<file> nf = std::move(*created);
    auto sz = nf->size();
    if (!sz) {
        return error(sz.error());
    }
    if (*sz != 0) {
        NEREUS_TRY(nf->truncate(0));  // a leftover of an interrupted roll; never holds records
    }
    NEREUS_TRY(fs_->sync_dir(fds_.stream_dir(st.id)));
    fds_.put(k, nf);
    f = std::move(nf);
    {
        const std::lock_guard lock(st.view_mu);
        segment_view v;
        v.base = base;
        v.end = base;
        st.segments.push_back(std::move(v));
    }
    st.active_base = base;
    st.active_bytes = 0;
    st.writeback_from = 0;
    st.active_since = std::chrono::steady_clock::now();
    st.index_any = false;
    st.index_last_pos = 0;
    stat_segment_rolls_.fetch_add(1, std::memory_order_relaxed);
    NEREUS_LOG(storage_log(), debug, "segment rolled stream={:016x} base={}", st.id, base);
    return {};
}

void journaled_store::publish(stream_state& st) {
    const std::lock_guard lock(st.view_mu);
    segment_view& active = st.segments.back();
    active.bytes = st.active_bytes;
    active.end = st.write_offset;
    if (!st.staged_index.empty()) {
        active.index.append(st.staged_index);
        st.staged_index.clear();
    }
    st.end = st.write_offset;
}

void journaled_store::mark_dirty(stream_state& st) {
    if (st.dirty_epoch != ckpt_epoch_ || st.dirty_base != st.active_base) {
        st.dirty_epoch = ckpt_epoch_;
        st.dirty_base = st.active_base;
        dirty_.push_back(key(st, st.active_base));
    }
}

}  // namespace nereus::storage
