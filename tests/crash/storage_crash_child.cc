// storage_crash_child DIR: opens the stream store in DIR and appends forever from several
// concurrent appenders to a few streams. For every append whose completion reports success it
// prints "stream offset crc32c(payload)" on stdout, flushed at once — so whatever the parent read
// before it SIGKILLed this process was durable. Used by storage_crash_test.

#include "nereus/base/crc32c.h"
#include "nereus/base/file_system.h"
#include "nereus/storage/stream_store.h"

#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

namespace {

using namespace nereus;
using namespace nereus::storage;

constexpr int kStreams = 3;
constexpr int kAppenders = 4;
constexpr int kWindow = 64;  // appends in flight per appender

}  // namespace

int main(int argc, char** argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: %s DIR\n", argv[0]);
        return 2;
    }
    store_options o;
    o.segment_max_bytes = 256 << 10;
    o.journal_max_bytes = 2 << 20;
    o.checkpoint_bytes = 1 << 20;
    // Spares however fast it writes, so most journal files are prepared ones written with
    // direct, synchronous writes (and some, when no spare is ready yet, unprepared ones).
    o.prepare_max_bytes_per_s = 0;
    corruption_info info;
    auto opened = stream_store::open(posix_file_system(), argv[1], o, &info);
    if (!opened) {
        std::fprintf(stderr, "open failed: %s %s\n", opened.error().message().c_str(),
                     info.to_string().c_str());
        return 1;
    }
    auto& store = **opened;
    const auto existing = store.list_streams();
    for (int s = 0; s < kStreams; ++s) {
        if (std::find(existing.begin(), existing.end(), stream_id(s)) == existing.end()) {
            if (auto r = store.create_stream(stream_id(s)); !r) {
                std::fprintf(stderr, "create failed: %s\n", r.error().message().c_str());
                return 1;
            }
        }
    }
    std::fprintf(stderr, "child ready\n");

    std::mutex out_mu;
    std::vector<std::thread> appenders;
    for (int t = 0; t < kAppenders; ++t) {
        appenders.emplace_back([&, t] {
            std::mt19937_64 rng(std::random_device{}() + static_cast<unsigned>(t));
            struct window {
                std::mutex mu;
                std::condition_variable cv;
                int in_flight = 0;
            } w;
            std::vector<std::byte> p;
            for (;;) {
                {
                    std::unique_lock l(w.mu);
                    w.cv.wait(l, [&] { return w.in_flight < kWindow; });
                    ++w.in_flight;
                }
                const int s = static_cast<int>(rng() % kStreams);
                p.resize(rng() % 3000);
                for (auto& b : p) {
                    b = static_cast<std::byte>(rng());
                }
                const std::uint32_t crc = crc32c::value(p.data(), p.size());
                store.append(stream_id(s), p, [&w, &out_mu, s, crc](result<offset> r) {
                    if (r) {
                        const std::lock_guard l(out_mu);
                        std::printf("%d %llu %08x\n", s,
                                    static_cast<unsigned long long>(r->value()), crc);
                        std::fflush(stdout);
                    } else {
                        std::fprintf(stderr, "append failed: %s\n", r.error().message().c_str());
                        std::_Exit(1);
                    }
                    const std::lock_guard l(w.mu);
                    --w.in_flight;
                    w.cv.notify_one();
                });
            }
        });
    }
    for (auto& a : appenders) {
        a.join();  // never returns: the parent kills this process
    }
    return 0;
}
