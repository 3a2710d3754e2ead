// The process the ledger crash test SIGKILLs: an ack-heavy load on one durable subscription.
//
// Usage: ledger_crash_child <dir> <seed>
// Opens (or recovers) the ledger in <dir> (RocksDB meta, real file system), then loops: append a
// group of entries, ack a random half of the unacked ones asynchronously (printing "A <offset>"
// to stdout only after the ack's completion reported ok, i.e. it is confirmed), and now and then
// a cumulative ack and a trim. Each line is one write(2), so a kill never tears a line.

#include "nereus/ledger/managed_cursor.h"
#include "nereus/ledger/managed_ledger.h"
#include "nereus/meta/rocksdb_store.h"
#include "nereus/meta/sync.h"
#include "nereus/objects/fs_object_store.h"
#include "nereus/storage/stream_store.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <unistd.h>

namespace {

void emit(const std::string& line) {
    const std::string l = line + "\n";
    (void)!::write(1, l.data(), l.size());
}

}  // namespace

int main(int argc, char** argv) {
    using namespace nereus;
    if (argc != 3) {
        return 2;
    }
    const std::string dir = argv[1];
    std::mt19937_64 rng(std::strtoull(argv[2], nullptr, 10));
    auto m = meta::rocksdb_store::open(dir + "/meta");
    auto s = storage::stream_store::open(posix_file_system(), dir + "/streams");
    auto o = objects::fs_object_store::open(posix_file_system(), dir + "/objects");
    if (!m || !s || !o) {
        return 3;
    }
    auto session = meta::open_session_sync(**m, std::chrono::minutes(10));
    if (!session) {
        return 4;
    }
    ledger::ledger_options opts;
    opts.cursor.spill_threshold_bytes = 256;  // exercise snapshots + deltas too
    auto l = ledger::managed_ledger::open_writable(
        ledger::ledger_env{m->get(), o->get(), s->get(), *session}, "persistent://crash/t", opts);
    if (!l) {
        std::fprintf(stderr, "open: %s\n", l.error().message().c_str());
        return 5;
    }
    auto c = (*l)->find_cursor("sub");
    if (!c) {
        c = (*l)->open_cursor("sub", cursor::initial_position::earliest());
    }
    if (!c) {
        return 6;
    }
    auto& cur = **c;
    std::string payload(32, 'p');
    for (std::uint64_t round = 0;; ++round) {
        for (int i = 0; i < 20; ++i) {
            auto r = (*l)->append_sync(
                std::as_bytes(std::span(payload.data(), payload.size())),
                ledger::append_options{.publish_time = static_cast<std::int64_t>(round)});
            if (!r) {
                return 7;
            }
        }
        auto got = cur.read(1000);
        if (!got) {
            return 8;
        }
        std::atomic<int> outstanding{0};
        for (const auto& e : got->entries) {
            if (rng() % 2 == 0) {
                continue;
            }
            ++outstanding;
            const auto at = e.at;
            cur.ack(e.fence, at, [at, &outstanding](result<cursor::op_result> r) {
                if (r && (r->status == cursor::ack_status::ok ||
                          r->status == cursor::ack_status::already_acked)) {
                    emit("A " + std::to_string(at));
                }
                --outstanding;
            });
        }
        while (outstanding.load() > 0) {
            ::usleep(100);
        }
        cur.rewind();
        if (round % 7 == 6) {
            const auto mdo = cur.mark_delete();
            if (mdo + 5 < (*l)->info().end) {
                auto r = cur.ack_cumulative_sync(cur.current_fence(), mdo + 4);
                if (r && r->status == cursor::ack_status::ok) {
                    emit("C " + std::to_string(mdo + 4));
                }
            }
            (void)(*l)->trim();
        }
    }
}
