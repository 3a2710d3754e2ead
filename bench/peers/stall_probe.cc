// The machine-stall probe of bench/run: sleeps 1 ms at a time for SECONDS and counts how often
// a wake-up came late. A process that needs no CPU and no disk can only wake late when the
// whole machine did not run it: on the shared 2-core VMs, while a system under test syncs at a
// high rate, every vCPU stalls for 5-15 ms at ~100 ms intervals (doc/perf.md, "The 5,000 msg/s
// tail on this machine: the VM stalls"). Run beside each 5,000 msg/s run, it tells a system's
// latency tail from the machine's.
// Usage: bench_stall_probe SECONDS. Prints one `stall:` line: wake-ups, late wake-ups over
// 2 ms and over 5 ms, the p99 / p999 / max lateness (ms) and the time stalled over 2 ms.
// Thread-safety: single-threaded tool.

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

int main(int argc, char** argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: bench_stall_probe SECONDS\n");
        return 2;
    }
    using clock = std::chrono::steady_clock;
    const double secs = std::strtod(argv[1], nullptr);
    if (!(secs > 0 && secs <= 3600)) {
        std::fprintf(stderr, "bench_stall_probe: SECONDS must be in (0, 3600]\n");
        return 2;
    }
    constexpr auto kPeriod = std::chrono::milliseconds(1);
    std::vector<double> late_ms;
    late_ms.reserve(static_cast<std::size_t>(secs * 1000) + 16);
    const auto end = clock::now() + std::chrono::duration_cast<clock::duration>(
                                        std::chrono::duration<double>(secs));
    while (clock::now() < end) {
        const auto t0 = clock::now();
        std::this_thread::sleep_for(kPeriod);
        late_ms.push_back(
            std::chrono::duration<double, std::milli>(clock::now() - t0 - kPeriod).count());
    }
    if (late_ms.empty()) {
        return 1;
    }
    std::size_t over2 = 0;
    std::size_t over5 = 0;
    double stalled_ms = 0;
    for (double l : late_ms) {
        over2 += l > 2 ? 1 : 0;
        over5 += l > 5 ? 1 : 0;
        stalled_ms += l > 2 ? l : 0;
    }
    std::sort(late_ms.begin(), late_ms.end());
    auto q = [&](double p) {
        return late_ms[std::min(late_ms.size() - 1,
                                static_cast<std::size_t>(p * static_cast<double>(late_ms.size())))];
    };
    std::printf(
        "stall: wakeups=%zu over_2ms=%zu over_5ms=%zu late_p99_ms=%.3f late_p999_ms=%.3f "
        "late_max_ms=%.3f stalled_ms=%.1f\n",
        late_ms.size(), over2, over5, q(0.99), q(0.999), late_ms.back(), stalled_ms);
    return 0;
}
