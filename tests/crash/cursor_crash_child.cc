// cursor_crash_child DIR: opens (or creates) one cursor on a RocksDB metadata store in DIR/meta
// and a file-system object store in DIR/objects, then acks forever with 64 acks in flight:
// random individual acks, batch-index acks and occasional cumulative acks, with a small spill
// threshold so snapshots, deltas and compaction all happen. Used by cursor_crash_test, which
// SIGKILLs it at a random point.
//
// Output on stdout, one line per event, flushed at once:
//   "? I e" / "? B e mask" / "? C e"   issued: written BEFORE the ack is submitted
//   "I e" / "B e mask" / "C e"         confirmed: written from the ack's completion (ok or
//                                      already_acked), i.e. after its CAS is durable
// I = individual ack of entry e, B = batch-index ack of the indices in `mask` (hex) of entry e
// (a batch of kBatchSize messages), C = cumulative ack through e. So whatever the parent read
// before the kill was issued, resp. confirmed.

#include "nereus/base/file_system.h"
#include "nereus/cursor/cursor.h"
#include "nereus/cursor/errc.h"
#include "nereus/cursor/memory_stream_view.h"
#include "nereus/cursor/sync.h"
#include "nereus/meta/rocksdb_store.h"
#include "nereus/meta/sync.h"
#include "nereus/objects/fs_object_store.h"

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <filesystem>
#include <mutex>
#include <random>
#include <string>

namespace {

using namespace nereus;
using namespace nereus::cursor;

constexpr std::uint64_t kStreamEnd = 8000000;  // the stream is fixed: this tests the cursor
constexpr int kWindow = 64;                    // acks in flight
constexpr offset kSpread = 20000;              // individual acks land in [MDO, MDO + kSpread)
constexpr std::uint32_t kBatchSize = 8;

}  // namespace

int main(int argc, char** argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: %s DIR\n", argv[0]);
        return 2;
    }
    const std::string dir = argv[1];
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);  // the first run starts from nothing
    auto meta_store = meta::rocksdb_store::open(dir + "/meta");
    if (!meta_store) {
        std::fprintf(stderr, "meta open failed: %s\n", meta_store.error().message().c_str());
        return 1;
    }
    auto objects = objects::fs_object_store::open(posix_file_system(), dir + "/objects");
    if (!objects) {
        std::fprintf(stderr, "objects open failed: %s\n", objects.error().message().c_str());
        return 1;
    }
    // A new process is a new owner (opening the embedded store expired the previous one's).
    auto owner = meta::open_session_sync(**meta_store, std::chrono::hours(1));
    if (!owner) {
        std::fprintf(stderr, "session failed: %s\n", owner.error().message().c_str());
        return 1;
    }
    memory_stream_view stream;
    stream.append_n(kStreamEnd);
    const cursor_env env{
        .meta = meta_store->get(), .objects = objects->get(), .stream = &stream, .owner = *owner};
    cursor_options options;
    options.spill_threshold_bytes = 256;  // spill early: snapshots, deltas and compaction
    const cursor_id id{"crash", "sub"};

    auto opened = open_sync(env, id, options);
    if (!opened && opened.error() == errc::cursor_not_found) {
        opened = create_sync(env, id, initial_position::earliest(), options);
        if (opened) {
            if (auto a = activate_sync(**opened, (*opened)->current_fence()); !a) {
                std::fprintf(stderr, "activate failed: %s\n", a.error().message().c_str());
                return 1;
            }
        }
    }
    if (!opened) {
        std::fprintf(stderr, "cursor open failed: %s\n", opened.error().message().c_str());
        return 1;
    }
    auto c = *opened;
    const fence f = c->current_fence();
    std::fprintf(stderr, "child ready: mdo=%llu spilled=%d\n",
                 static_cast<unsigned long long>(c->mark_delete()),
                 static_cast<int>(c->snapshot().spilled));
    std::fputs("ready\n", stdout);  // the test's kill timer starts here (ignored as an ack line)
    std::fflush(stdout);

    std::mutex out_mu;
    auto emit = [&out_mu](const std::string& line) {
        const std::lock_guard l(out_mu);
        std::fputs(line.c_str(), stdout);
        std::fflush(stdout);
    };
    struct window {
        std::mutex mu;
        std::condition_variable cv;
        int in_flight = 0;
    } w;
    auto completion = [&w, &emit](std::string line) {
        return [&w, &emit, line = std::move(line)](result<op_result> r) {
            if (!r) {
                std::fprintf(stderr, "ack failed: %s\n", r.error().message().c_str());
                std::_Exit(1);
            }
            if (r->status != ack_status::ok && r->status != ack_status::already_acked) {
                std::fprintf(stderr, "ack not confirmed: %s\n", to_string(r->status));
                std::_Exit(1);
            }
            emit(line);
            const std::lock_guard l(w.mu);
            --w.in_flight;
            w.cv.notify_one();
        };
    };

    std::mt19937_64 rng(std::random_device{}());
    for (;;) {
        {
            std::unique_lock l(w.mu);
            w.cv.wait(l, [&] { return w.in_flight < kWindow; });
            ++w.in_flight;
        }
        const offset mdo = c->mark_delete();
        const unsigned kind = static_cast<unsigned>(rng() % 100);
        if (kind < 2 && mdo + 1 < kStreamEnd) {
            const offset e = std::min<offset>(mdo + rng() % 500, kStreamEnd - 1);
            const std::string body = "C " + std::to_string(e) + "\n";
            emit("? " + body);
            c->ack_cumulative(f, e, std::nullopt, 0, {}, completion(body));
        } else if (kind < 40) {
            // Batch entries are the multiples of 7 (every process agrees on the batch size).
            offset e = std::min<offset>(mdo + rng() % kSpread, kStreamEnd - 1);
            e -= e % 7;
            auto bits = batch_bits::none_set(kBatchSize);
            unsigned mask = 0;
            while (mask == 0) {
                mask = static_cast<unsigned>(rng() % 256) & static_cast<unsigned>(rng() % 256);
            }
            for (std::uint32_t i = 0; i < kBatchSize; ++i) {
                if ((mask >> i) & 1U) {
                    bits.set(i);
                }
            }
            char buf[64];
            std::snprintf(buf, sizeof buf, "B %llu %x\n", static_cast<unsigned long long>(e), mask);
            emit(std::string("? ") + buf);
            c->ack_batch_index(f, e, std::move(bits), completion(buf));
        } else {
            offset e = std::min<offset>(mdo + rng() % kSpread, kStreamEnd - 1);
            if (e % 7 == 0) {
                e = e + 1 < kStreamEnd ? e + 1 : e - 1;  // individual acks skip batch entries
            }
            const std::string body = "I " + std::to_string(e) + "\n";
            emit("? " + body);
            c->ack(f, e, completion(body));
        }
    }
}
