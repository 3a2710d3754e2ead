// Prepared journal files: the preparer thread keeps one zero-filled, synced spare ready, so a
// journal roll switches to a file whose commits overwrite allocated blocks (doc/format/segment.md,
// "Prepared journal files"). Nothing depends on it for correctness: without a ready spare, a roll
// creates an empty file as before. A spare whose first chunk is durable may be taken while it is
// still being filled; the preparer then fills it ahead of the committer, which never writes a
// page at or past the durable fill end while the fill runs.

#include "nereus/storage/journaled_store.h"
#include "nereus/storage/logger.h"

#include <algorithm>
#include <vector>

namespace nereus::storage {
namespace {

constexpr auto kFirstRetryDelay = std::chrono::seconds(1);
constexpr auto kMaxRetryDelay = std::chrono::seconds(64);

}  // namespace

void journaled_store::request_spare() {
    {
        const std::lock_guard lock(prep_mu_);
        if (prep_wanted_ || spare_ != spare_state::none) {
            return;
        }
        prep_wanted_ = true;
    }
    stat_spares_asked_.fetch_add(1, std::memory_order_relaxed);
    prep_cv_.notify_one();
}

void journaled_store::preparer_loop() {
    std::unique_lock lock(prep_mu_);
    std::chrono::seconds retry_delay = kFirstRetryDelay;
    for (;;) {
        prep_cv_.wait(lock,
                      [&] { return prep_stop_ || (prep_wanted_ && spare_ == spare_state::none); });
        if (prep_stop_) {
            break;
        }
        if (failed_.load()) {
            prep_wanted_ = false;  // nothing will be committed again
            continue;
        }
        spare_ = spare_state::preparing;
        lock.unlock();
        const auto t0 = std::chrono::steady_clock::now();
        auto r = prepare_spare();
        lock.lock();
        if (fill_taken_) {
            // The committer took the file while it was being filled: it is a journal file now,
            // and the fill of it is over (complete, stopped, or failed).
            fill_taken_ = false;
            fill_running_ = false;
            fill_done_end_ = fill_end_;
            fill_cv_.notify_all();
            NEREUS_LOG(storage_log(), debug, "journal fill ended bytes={} ms={} error={}",
                       fill_end_,
                       std::chrono::duration_cast<std::chrono::milliseconds>(
                           std::chrono::steady_clock::now() - t0)
                           .count(),
                       r ? "none" : r.error().message());
            if (r || prep_stop_) {
                continue;  // spare_ is none: a request made meanwhile is served next
            }
        } else if (r && *r) {
            retry_delay = kFirstRetryDelay;
            spare_ = spare_state::ready;
            prep_wanted_ = false;
            spare_complete_.store(true, std::memory_order_release);
            spare_ready_.store(true, std::memory_order_release);
            NEREUS_LOG(storage_log(), debug, "journal spare prepared bytes={} ms={}",
                       opts_.journal_max_bytes,
                       std::chrono::duration_cast<std::chrono::milliseconds>(
                           std::chrono::steady_clock::now() - t0)
                           .count());
            continue;
        }
        // Not taken and not complete: a spare that was usable (filling) is gone with it.
        spare_ = spare_state::none;
        spare_ready_.store(false, std::memory_order_relaxed);
        spare_complete_.store(false, std::memory_order_relaxed);
        if (prep_stop_) {
            break;
        }
        // Not on the commit path: the store goes on with unprepared files. Retry later, backing
        // off (the error may be ENOSPC that a checkpoint's journal deletion frees).
        NEREUS_LOG(storage_log(), warn, "cannot prepare a journal spare dir={}: {} (retry in {} s)",
                   journal_dir_, r.error().message(), retry_delay.count());
        prep_cv_.wait_for(lock, retry_delay, [&] { return prep_stop_; });
        retry_delay = std::min(retry_delay * 2, std::chrono::seconds(kMaxRetryDelay));
    }
}

result<bool> journaled_store::prepare_spare() {
    const std::string tmp = path_join(journal_dir_, format::kSpareJournalTmpName);
    if (auto r = fs_->remove(tmp); !r && !is_not_found(r.error())) {
        return error(r.error());
    }
    auto opened = fs_->open(tmp, open_mode::create_exclusive);
    if (!opened) {
        return error(opened.error());
    }
    std::unique_ptr<file> f = std::move(*opened);
    bool taken = false;  // the committer renamed spare.tmp to its journal file
    auto abandon = [&](std::error_code ec) -> result<bool> {
        f.reset();
        if (!taken) {
            (void)fs_->remove(tmp);
        }
        return error(ec);
    };
    // Real writes, not fallocate: fallocated blocks are "unwritten" extents, and the first
    // write into one changes the extent tree, which fdatasync must then write as well.
    // Paced (store_options::prepare_chunk_bytes, prepare_bytes_per_s): each chunk is synced
    // before the next is written, so at most one chunk of writeback ever queues in front of a
    // commit's fdatasync, and chunk k starts no sooner than k * chunk / rate after the first.
    // close() stops it between chunks, also while it waits for its pace.
    const std::uint64_t chunk = opts_.prepare_chunk_bytes == 0
                                    ? opts_.journal_max_bytes
                                    : std::min(opts_.prepare_chunk_bytes, opts_.journal_max_bytes);
    const std::vector<std::byte> zeros(static_cast<std::size_t>(chunk));
    const double rate = static_cast<double>(opts_.prepare_bytes_per_s);
    auto t0 = std::chrono::steady_clock::now();
    {
        const std::lock_guard lock(prep_mu_);
        fill_end_ = 0;
        fill_want_end_ = opts_.journal_max_bytes;  // until taken: the whole file, at the pace
    }
    // Once taken, the file is the committer's: stop when it says so (it caught up, wrote fast,
    // or rolled) or at close(); the zeros written so far stay (a zero tail).
    auto stopped = [&] {
        return prep_stop_ || (fill_taken_ && fill_stop_);
    };
    for (std::uint64_t pos = 0; pos < opts_.journal_max_bytes;) {
        {
            std::unique_lock lock(prep_mu_);
            // A taken file filled prepare_lead_bytes ahead of its writer is not paced (also
            // when the take comes during a pace wait): the lead bounds the fill to the writer's
            // rate, and a pace below that rate would let a fast writer overtake the fill and
            // write the rest unprepared (doc/perf.md, "Prepared files for fast writers").
            const auto follows_writer = [&] {
                return fill_taken_ && opts_.prepare_lead_bytes > 0;
            };
            if (rate > 0 && pos > 0 && !follows_writer()) {
                const auto due =
                    t0 + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                             std::chrono::duration<double>(static_cast<double>(pos) / rate));
                prep_cv_.wait_until(lock, due, [&] { return stopped() || follows_writer(); });
            }
            // A taken file is filled only prepare_lead_bytes ahead of the committer; a spare
            // not taken waits while a fast writer commits (fill_held_for_writer: looked at
            // again every kRateWindow, for a writer gone idle), and its pace starts afresh then
            // (no burst of the chunks "due" meanwhile beside the commits).
            bool held = false;
            while (!stopped()) {
                const bool hold = !fill_taken_ && fill_held_for_writer();
                if (pos < fill_want_end_ && !hold) {
                    break;
                }
                held = held || hold;
                if (hold) {
                    prep_cv_.wait_for(lock, kRateWindow);
                } else {
                    prep_cv_.wait(lock);
                }
            }
            if (held && rate > 0) {
                t0 = std::chrono::steady_clock::now() -
                     std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                         std::chrono::duration<double>(static_cast<double>(pos) / rate));
            }
            taken = fill_taken_;
            if (stopped()) {
                lock.unlock();
                if (taken) {
                    return false;
                }
                return abandon(make_error_code(errc::closed));
            }
        }
        // Never below the durable fill end, where the committer may write once it is taken.
        const auto n = std::min<std::uint64_t>(zeros.size(), opts_.journal_max_bytes - pos);
        // Per chunk, at trace level: when the fill wrote beside the commits, and for how long
        // (to attribute a commit latency tail to it or not: doc/perf.md, session 14).
        const bool trace = storage_log().should_log(spdlog::level::trace);
        const auto c0 =
            trace ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
        if (auto r = f->write_at(pos, bytes_view(zeros.data(), n)); !r) {
            return abandon(r.error());
        }
        const auto c1 = trace ? std::chrono::steady_clock::now() : c0;
        if (auto r = f->sync(); !r) {
            return abandon(r.error());
        }
        // The committer overwrites these zeros with direct writes: their clean pages are
        // dropped now, so that its writes need not evict them first (a hint: the eviction
        // took ~3-7 % of the committer's time at 100 B max rate; doc/perf.md, session 21).
        (void)f->drop_cached(pos, n);
        if (trace) {
            const auto us = [](auto d) {
                return std::chrono::duration_cast<std::chrono::microseconds>(d).count();
            };
            NEREUS_LOG(storage_log(), trace,
                       "journal fill chunk pos={} bytes={} taken={} write_us={} sync_us={}", pos, n,
                       taken, us(c1 - c0), us(std::chrono::steady_clock::now() - c1));
        }
        pos += n;
        const std::lock_guard lock(prep_mu_);
        fill_end_ = pos;  // durable zeros up to here
        if (spare_ == spare_state::preparing && pos < opts_.journal_max_bytes) {
            spare_ = spare_state::filling;  // a roll may take it now
            spare_ready_.store(true, std::memory_order_release);
        }
    }
    {
        std::unique_lock lock(prep_mu_);
        // A take in progress decides whose the file is.
        prep_cv_.wait(lock, [&] { return spare_ != spare_state::taking; });
        if (fill_taken_) {
            return false;  // complete: a journal file with no unprepared bytes
        }
        spare_ = spare_state::preparing;  // not takeable while it is renamed to `spare`
        spare_ready_.store(false, std::memory_order_relaxed);
        spare_complete_.store(false, std::memory_order_relaxed);
    }
    f.reset();
    // Only a complete, synced file ever carries the name `spare`.
    const std::string spare = path_join(journal_dir_, format::kSpareJournalName);
    if (auto r = fs_->rename_noreplace(tmp, spare); !r) {
        return abandon(r.error());
    }
    NEREUS_TRY(fs_->sync_dir(journal_dir_));
    return true;
}

result<void> journaled_store::inspect_spare() {
    const std::string tmp = path_join(journal_dir_, format::kSpareJournalTmpName);
    const std::string spare = path_join(journal_dir_, format::kSpareJournalName);
    auto tmp_exists = fs_->exists(tmp);
    if (!tmp_exists) {
        return error(tmp_exists.error());
    }
    if (*tmp_exists) {
        NEREUS_LOG(storage_log(), info, "removing interrupted journal spare {}", tmp);
        NEREUS_TRY(fs_->remove(tmp));
    }
    auto exists = fs_->exists(spare);
    if (!exists) {
        return error(exists.error());
    }
    if (!*exists) {
        return {};
    }
    auto size = fs_->file_size(spare);
    if (!size) {
        return error(size.error());
    }
    if (opts_.prepare_journal_files && *size == opts_.journal_max_bytes) {
        spare_ = spare_state::ready;  // threads not started yet
        spare_complete_.store(true);
        spare_ready_.store(true);
        return {};
    }
    NEREUS_LOG(storage_log(), info, "removing journal spare of {} bytes (want {})", *size,
               opts_.prepare_journal_files ? opts_.journal_max_bytes : 0);
    return fs_->remove(spare);
}

result<void> journaled_store::open_journal_file(std::uint64_t seq, bool take_partial) {
    const std::string path = path_join(journal_dir_, format::journal_file_name(seq));
    if (fill_watch_) {
        stop_fill();  // the old file is never written again
    }
    bool take = false;
    bool partial = false;
    {
        const std::lock_guard lock(prep_mu_);
        if (spare_ == spare_state::ready || (take_partial && spare_ == spare_state::filling)) {
            partial = spare_ == spare_state::filling;
            spare_ = spare_state::taking;  // the preparer leaves the name alone meanwhile
            take = true;
        } else if (spare_ == spare_state::filling) {
            // A fast writer: it rolls to an empty file (waiting for the rest of the fill here
            // would stall every commit for it). The fill is held meanwhile after its chunk in
            // progress (fill_held_for_writer: a zero-fill beside a max-rate writer costs it
            // throughput) and goes on once the writer is slow or idle; the spare is then
            // taken by a slow writer, or completed.
            stat_partial_spares_passed_.fetch_add(1, std::memory_order_relaxed);
            NEREUS_LOG(storage_log(), debug,
                       "journal roll passes a spare being filled (fill end {}, fast)", fill_end_);
        }
    }
    std::unique_ptr<file> f;
    bool prepared = false;
    bool direct = false;
    if (take) {
        // A crash after this rename leaves a journal file `seq` of zeros (up to the fill end of
        // a partial spare, then its end): recovery reads it as empty. Before it, the spare is
        // still a spare (spare.tmp for a partial one, which the next open removes).
        auto r =
            fs_->rename_noreplace(path_join(journal_dir_, partial ? format::kSpareJournalTmpName
                                                                  : format::kSpareJournalName),
                                  path);
        {
            const std::lock_guard lock(prep_mu_);
            spare_ = spare_state::none;
            spare_ready_.store(false, std::memory_order_relaxed);
            spare_complete_.store(false, std::memory_order_relaxed);
            if (r && partial) {
                // The preparer goes on filling it (its descriptor follows the rename), ahead of
                // the committer; this request is served. The first commit sets the lead.
                fill_taken_ = true;
                fill_running_ = true;
                fill_stop_ = false;
                fill_want_end_ = fill_end_;
                prep_wanted_ = false;
                fill_watch_ = true;
                fill_safe_ = fill_end_;
                fill_kick_at_ = 0;
            }
        }
        prep_cv_.notify_all();  // a preparer waiting for the take's outcome
        if (!r) {
            if (!is_not_found(r.error())) {
                return error(r.error());
            }
            NEREUS_LOG(storage_log(), warn, "journal spare vanished; creating {}", path);
        } else {
            if (opts_.direct_journal_writes) {
                // Direct, synchronous writes where the file system has them (not tmpfs).
                auto d = fs_->open_direct(path);
                if (d) {
                    f = std::move(*d);
                    direct = true;
                } else {
                    NEREUS_LOG(storage_log(), debug, "no direct writes for {}: {}", path,
                               d.error().message());
                }
            }
            if (!f) {
                auto o = fs_->open(path, open_mode::read_write);
                if (!o) {
                    return error(o.error());
                }
                f = std::move(*o);
            }
            prepared = true;
        }
    }
    if (!f) {
        auto o = fs_->open(path, open_mode::create_exclusive);
        if (!o) {
            return error(o.error());
        }
        f = std::move(*o);
    }
    NEREUS_TRY(fs_->sync_dir(journal_dir_));
    journal_ = std::move(f);
    journal_file_seq_ = seq;
    journal_pos_ = 0;
    journal_prepared_ = prepared;
    journal_direct_ = direct;  // starts at byte 0: no earlier page to keep
    spare_requested_ = false;
    if (prepared) {
        stat_prepared_journals_.fetch_add(1, std::memory_order_relaxed);
        if (fill_watch_) {
            stat_partial_spares_.fetch_add(1, std::memory_order_relaxed);
        }
    }
    NEREUS_LOG(storage_log(), debug, "journal file={} prepared={} partial={}", path, prepared,
               fill_watch_);
    return {};
}

bool journaled_store::fill_held_for_writer() const {
    if (!writer_fast_) {
        return false;
    }
    const auto now =
        opts_.rate_clock != nullptr ? opts_.rate_clock() : std::chrono::steady_clock::now();
    const auto last = std::chrono::steady_clock::time_point(
        std::chrono::nanoseconds(last_commit_ns_.load(std::memory_order_relaxed)));
    return now - last < kRateWindow;
}

void journaled_store::record_commit_rate(std::chrono::steady_clock::time_point at,
                                         std::uint64_t bytes) {
    last_commit_ns_.store(
        std::chrono::duration_cast<std::chrono::nanoseconds>(at.time_since_epoch()).count(),
        std::memory_order_relaxed);
    rate_bytes_ += bytes;
    rate_ring_[rate_commits_ % kRateCommits] = {at, rate_bytes_};
    ++rate_commits_;
    const bool was_fast = rate_fast_;
    rate_fast_ = commit_rate_fast();
    if (rate_fast_ != was_fast) {
        {
            const std::lock_guard lock(prep_mu_);
            writer_fast_ = rate_fast_;
        }
        prep_cv_.notify_all();  // a spare held for a fast writer fills on
    }
}

bool journaled_store::writing_slow(std::chrono::steady_clock::time_point now) const {
    if (rate_fast_ || rate_commits_ < 2) {
        return false;
    }
    const auto newest = rate_ring_[(rate_commits_ - 1) % kRateCommits].at;
    const auto before = rate_ring_[(rate_commits_ - 2) % kRateCommits].at;
    return newest - before <= kRateWindow && now - newest <= kRateWindow;
}

bool journaled_store::commit_rate_fast() const {
    if (opts_.prepare_max_bytes_per_s == 0 || rate_commits_ < 2) {
        return false;
    }
    // From the oldest commit that ended within kRateWindow of the newest (but at least the one
    // before the newest): the bytes committed after it, over the time since it ended.
    const rate_point& newest = rate_ring_[(rate_commits_ - 1) % kRateCommits];
    const rate_point* from = &rate_ring_[(rate_commits_ - 2) % kRateCommits];
    const std::uint64_t known = std::min<std::uint64_t>(rate_commits_, kRateCommits);
    for (std::uint64_t k = 3; k <= known; ++k) {
        const rate_point& p = rate_ring_[(rate_commits_ - k) % kRateCommits];
        if (newest.at - p.at > kRateWindow) {
            break;
        }
        from = &p;
    }
    const double window_s = std::chrono::duration<double>(newest.at - from->at).count();
    return static_cast<double>(newest.bytes - from->bytes) >
           static_cast<double>(opts_.prepare_max_bytes_per_s) * window_s;
}

void journaled_store::watch_fill(std::uint64_t end) {
    // The write covers whole pages (write_direct), and the preparer's buffered writes would
    // read-modify-write a page they share: keep a page of distance.
    const std::uint64_t need = (end + kDirectIoAlign - 1) & ~std::uint64_t{kDirectIoAlign - 1};
    const bool fast = writing_fast();
    std::unique_lock lock(prep_mu_);
    if (!fill_running_) {
        lock.unlock();
        stop_fill();  // the fill is over: nothing else writes the file now
        return;
    }
    fill_safe_ = fill_end_;
    if (!fast && need <= fill_safe_) {
        // Let the fill run ahead; look again after half the lead (or when it is reached).
        const std::uint64_t lead = opts_.prepare_lead_bytes;
        fill_want_end_ = lead == 0 ? opts_.journal_max_bytes : end + lead;
        fill_kick_at_ = lead == 0 ? UINT64_MAX : end + lead / 2;
        lock.unlock();
        prep_cv_.notify_all();
        return;
    }
    // A fast writer gains little from the rest (and would share the disk with it); a writer
    // that caught up must not wait for it.
    if (!fill_stop_) {
        fill_stop_ = true;
        stat_fill_stops_.fetch_add(1, std::memory_order_relaxed);
        NEREUS_LOG(storage_log(), debug, "journal fill stopped at {} (write end {}, fast={})",
                   fill_end_, end, fast);
    }
    fill_kick_at_ = UINT64_MAX;
    if (need <= fill_safe_) {
        lock.unlock();
        prep_cv_.notify_all();
        return;  // below the fill end still: the chunk in progress may go on meanwhile
    }
    lock.unlock();
    prep_cv_.notify_all();
    stop_fill();
}

void journaled_store::stop_fill() {
    std::unique_lock lock(prep_mu_);
    if (fill_running_ && !fill_stop_) {
        fill_stop_ = true;
        stat_fill_stops_.fetch_add(1, std::memory_order_relaxed);
    }
    lock.unlock();
    prep_cv_.notify_all();
    lock.lock();
    fill_cv_.wait(lock, [&] { return !fill_running_; });  // at most the chunk in progress
    // From the fill end on, the file is unprepared: its commits extend it (and the early
    // switch to the next spare applies again).
    if (fill_done_end_ < opts_.journal_max_bytes) {
        journal_prepared_ = false;
    }
    fill_watch_ = false;
    fill_safe_ = 0;
    fill_kick_at_ = 0;
}

}  // namespace nereus::storage
