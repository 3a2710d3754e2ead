// Kills a real process (SIGKILL) in the middle of an ack-heavy load, again and again on the same
// directory, and after each kill reopens the cursor in this process (a new owner session) and
// checks:
//   - every ack the child reported confirmed is still acked: individual acks (is_acked), batch
//     indices (the entry is acked whole, or none of the confirmed indices is in remaining()),
//     cumulative acks (MDO > entry);
//   - nothing was acked that was never issued (so every unacked offset is still delivered):
//     each acked entry lies at or below an issued cumulative ack, was issued individually, or
//     had all its batch indices issued; the acked indices of a partial batch were all issued;
//   - the load really spilled and compacted: at least two different snapshot objects were
//     current after the kills;
//   - the read accessors agree: next_unacked(MDO) is the first unacked entry and backlog()
//     equals the number of entries in [MDO, end) that are not acked whole.
// Then it restarts the child on the same directory, which must reopen and continue. The child
// is cursor_crash_child.

#include "nereus/base/file_system.h"
#include "nereus/cursor/cursor.h"
#include "nereus/cursor/errc.h"
#include "nereus/cursor/memory_stream_view.h"
#include "nereus/cursor/sync.h"
#include "nereus/meta/rocksdb_store.h"
#include "nereus/meta/sync.h"
#include "nereus/objects/fs_object_store.h"

#include <gtest/gtest.h>

#include "support/child_process.h"
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <unistd.h>

namespace nereus::cursor {
namespace {

#ifndef CURSOR_CRASH_CHILD
#error "CURSOR_CRASH_CHILD must name the child executable"
#endif

constexpr std::uint64_t kStreamEnd = 8000000;  // as in the child
constexpr unsigned kFullBatch = 0xff;          // all 8 indices of a batch entry

// What the child reported, accumulated over all of its runs.
struct ack_log {
    std::set<offset> individual;
    std::map<offset, unsigned> batch;  // entry -> OR of the index masks
    std::optional<offset> cumulative;  // the highest cumulative ack
    std::uint64_t lines = 0;

    void add(char kind, offset e, unsigned mask) {
        ++lines;
        if (kind == 'I') {
            individual.insert(e);
        } else if (kind == 'B') {
            batch[e] |= mask;
        } else if (kind == 'C') {
            cumulative = std::max(cumulative.value_or(0), e);
        }
    }
    [[nodiscard]] offset highest() const {
        offset h = cumulative.value_or(0);
        if (!individual.empty()) {
            h = std::max(h, *individual.rbegin());
        }
        if (!batch.empty()) {
            h = std::max(h, batch.rbegin()->first);
        }
        return h;
    }
};

// Parses complete lines out of `buf` into the issued / confirmed logs, leaving a partial last
// line (cut by the kill) in it.
void parse_lines(std::string& buf, ack_log& issued, ack_log& confirmed) {
    std::size_t start = 0;
    for (std::size_t nl; (nl = buf.find('\n', start)) != std::string::npos; start = nl + 1) {
        std::istringstream line(buf.substr(start, nl - start));
        std::string first;
        line >> first;
        ack_log* log = &confirmed;
        if (first == "?") {
            log = &issued;
            line >> first;
        }
        offset e = 0;
        unsigned mask = 0;
        line >> e;
        if (first == "B") {
            line >> std::hex >> mask;
        }
        if (line && first.size() == 1) {
            log->add(first[0], e, mask);
        }
    }
    buf.erase(0, start);
}

// The stores and cursor of one in-process check (a new owner session on the same directory).
struct reopened {
    std::unique_ptr<meta::store> meta;
    std::unique_ptr<objects::fs_object_store> objects;
    memory_stream_view stream;
    std::shared_ptr<cursor> c;
};

void check_state(const std::string& dir,
                 const ack_log& issued,
                 const ack_log& confirmed,
                 int kill_no,
                 std::set<std::string>& snapshots_seen) {
    reopened r;
    auto m = meta::rocksdb_store::open(dir + "/meta");
    ASSERT_TRUE(m) << m.error().message();
    r.meta = std::move(*m);
    auto o = objects::fs_object_store::open(posix_file_system(), dir + "/objects");
    ASSERT_TRUE(o) << o.error().message();
    r.objects = std::move(*o);
    auto owner = meta::open_session_sync(*r.meta, std::chrono::minutes(10));
    ASSERT_TRUE(owner);
    r.stream.append_n(kStreamEnd);
    const cursor_env env{
        .meta = r.meta.get(), .objects = r.objects.get(), .stream = &r.stream, .owner = *owner};
    cursor_options options;
    options.spill_threshold_bytes = 256;
    auto c = open_sync(env, cursor_id{"crash", "sub"}, options);
    if (!c && confirmed.lines == 0 && c.error() == make_error_code(errc::cursor_not_found)) {
        return;  // killed before the creation CAS: nothing was confirmed
    }
    ASSERT_TRUE(c) << "kill " << kill_no << ": reopen failed: " << c.error().message();
    const cursor& cur = **c;
    const offset mdo = cur.mark_delete();

    // Every confirmed ack survived.
    if (confirmed.cumulative) {
        ASSERT_GT(mdo, *confirmed.cumulative) << "kill " << kill_no << ": cumulative ack lost";
    }
    for (offset e : confirmed.individual) {
        ASSERT_TRUE(cur.is_acked(e)) << "kill " << kill_no << ": confirmed ack of " << e << " lost";
    }
    for (const auto& [e, mask] : confirmed.batch) {
        if (cur.is_acked(e)) {
            continue;
        }
        const auto rem = cur.remaining(e);
        ASSERT_TRUE(rem.has_value())
            << "kill " << kill_no << ": confirmed batch ack of " << e << " lost entirely";
        for (std::uint32_t i = 0; i < 8; ++i) {
            if ((mask >> i) & 1U) {
                ASSERT_FALSE(rem->test(i))
                    << "kill " << kill_no << ": confirmed index " << i << " of " << e << " lost";
            }
        }
    }

    // Nothing was acked that was never issued; the accessors agree with is_acked().
    const offset hi = std::max<offset>(issued.highest(), mdo) + 1;
    std::uint64_t unacked_below_hi = 0;
    std::optional<offset> first_unacked;
    for (offset x = 0; x < hi; ++x) {
        const bool acked = cur.is_acked(x);
        if (acked) {
            const bool allowed = (issued.cumulative && x <= *issued.cumulative) ||
                                 issued.individual.contains(x) ||
                                 (issued.batch.contains(x) && issued.batch.at(x) == kFullBatch);
            ASSERT_TRUE(allowed) << "kill " << kill_no << ": " << x << " acked, never issued";
            continue;
        }
        if (auto rem = cur.remaining(x)) {
            const auto it = issued.batch.find(x);
            const unsigned issued_mask = it == issued.batch.end() ? 0 : it->second;
            for (std::uint32_t i = 0; i < rem->size(); ++i) {
                if (!rem->test(i)) {
                    ASSERT_TRUE((issued_mask >> i) & 1U) << "kill " << kill_no << ": index " << i
                                                         << " of " << x << " acked, never issued";
                }
            }
        }
        if (x >= mdo) {
            // hi is one past the mark-delete position, so once every entry was acked (mdo ==
            // kStreamEnd) x reaches the stream's end: not an entry, so no backlog.
            if (x < kStreamEnd) {
                ++unacked_below_hi;
            }
            if (!first_unacked) {
                first_unacked = x;
            }
        }
    }
    EXPECT_EQ(cur.next_unacked(mdo), first_unacked.value_or(hi));
    EXPECT_EQ(cur.backlog(), unacked_below_hi + (kStreamEnd - std::min(hi, kStreamEnd)));

    const auto snap = cur.snapshot();
    if (auto names = r.objects->list("cursor/"); names) {
        snapshots_seen.insert(names->begin(), names->end());
    }
    std::fprintf(stderr,
                 "kill %d: reopened mdo=%llu ranges=%zu partial batches=%zu spilled=%d; checked "
                 "%zu individual, %zu batch, cumulative %s\n",
                 kill_no, static_cast<unsigned long long>(mdo), snap.ranges.size(),
                 snap.batches.size(), static_cast<int>(snap.spilled), confirmed.individual.size(),
                 confirmed.batch.size(),
                 confirmed.cumulative ? std::to_string(*confirmed.cumulative).c_str() : "-");
    (void)close_sync(**c);
}

TEST(CursorCrash, ConfirmedAcksSurviveSigkill) {
    const auto root = std::filesystem::temp_directory_path() /
                      ("nereus-cursor-crash-" + std::to_string(::getpid()));
    std::filesystem::remove_all(root);
    std::filesystem::create_directories(root);
    struct cleanup {
        std::filesystem::path p;
        ~cleanup() {
            std::error_code ec;
            std::filesystem::remove_all(p, ec);
        }
    } const guard{root};  // also when an assertion ends the test early
    const std::string dir = (root / "data").string();
    std::mt19937_64 rng(std::random_device{}());
    ack_log issued;
    ack_log confirmed;
    const auto test_start = std::chrono::steady_clock::now();
    int kills = 0;
    std::set<std::string> snapshots_seen;  // snapshot objects found after the kills

    for (int kill_no = 0; kill_no < 6; ++kill_no) {
        if (std::chrono::steady_clock::now() - test_start > std::chrono::seconds(60)) {
            break;  // bounded in time even on a slow disk
        }
        auto child = test::child_process::spawn({CURSOR_CRASH_CHILD, dir});
        ASSERT_TRUE(child.has_value());
        const auto run_for = std::chrono::milliseconds(100 + rng() % 501);
        std::string buf;
        const std::uint64_t confirmed_before = confirmed.lines;
        bool ready = false;
        const auto sink = [&](std::string_view chunk) {
            buf.append(chunk);
            if (!ready && buf.find("ready\n") != std::string::npos) {
                ready = true;
            }
            if (ready) {
                parse_lines(buf, issued, confirmed);
            }
        };
        // The run window starts once the child has opened its stores and cursor (a loaded
        // machine can take most of a fixed window to get there), bounded by 60 s.
        const auto ready_by = std::chrono::steady_clock::now() + std::chrono::seconds(60);
        while (!ready && std::chrono::steady_clock::now() < ready_by &&
               child->read_until(std::chrono::steady_clock::now() + std::chrono::milliseconds(10),
                                 sink)) {
        }
        // Lines written before the kill (still in the pipe) count too.
        child->read_until(std::chrono::steady_clock::now() + run_for, sink);
        const int status = child->kill_and_drain(sink);
        ++kills;
        ASSERT_TRUE(test::killed_by_sigkill(status))
            << "child exited on its own with status " << status;
        std::fprintf(stderr, "kill %d after %lld ms: %llu new confirmed acks\n", kill_no,
                     static_cast<long long>(run_for.count()),
                     static_cast<unsigned long long>(confirmed.lines - confirmed_before));
        check_state(dir, issued, confirmed, kill_no, snapshots_seen);
        if (HasFatalFailure()) {
            return;
        }
    }
    EXPECT_GE(kills, 3);
    EXPECT_GT(confirmed.lines, 0U);
    EXPECT_FALSE(confirmed.individual.empty());
    EXPECT_FALSE(confirmed.batch.empty());
    // The load went through spills and compactions: different snapshots were current.
    EXPECT_GE(snapshots_seen.size(), 2U);
}

}  // namespace
}  // namespace nereus::cursor
