// The per-round disk probe of bench/run: the raw group-commit ceiling of a directory's file
// system, measured exactly as `nereus perf --raw-baseline` measures it (one thread, G
// CRC32C-framed records per write + fdatasync; apps/nereus/perf/raw_baseline.h).
// Usage: bench_probe DIR SIZE GROUP SECONDS [append|direct]. Prints one `probe:` line. direct:
// each group one O_DSYNC direct write into a zero-filled file (raw_method::direct_prepared).
// Thread-safety: single-threaded tool.

#include "apps/nereus/perf/raw_baseline.h"
#include <cstdio>
#include <cstdlib>
#include <string_view>

int main(int argc, char** argv) {
    if (argc != 5 && argc != 6) {
        std::fprintf(stderr, "usage: bench_probe DIR SIZE GROUP SECONDS [append|direct]\n");
        return 2;
    }
    auto method = nereus::app::perf::raw_method::append_fdatasync;
    if (argc == 6) {
        const std::string_view m = argv[5];
        if (m == "direct") {
            method = nereus::app::perf::raw_method::direct_prepared;
        } else if (m != "append") {
            std::fprintf(stderr, "bench_probe: method must be append or direct\n");
            return 2;
        }
    }
    const auto size = std::strtoull(argv[2], nullptr, 10);
    const auto group = static_cast<std::uint32_t>(std::strtoul(argv[3], nullptr, 10));
    const double secs = std::strtod(argv[4], nullptr);
    auto r = nereus::app::perf::measure_raw_baseline(argv[1], size, group, secs, method);
    if (!r) {
        std::fprintf(stderr, "probe failed: %s\n", r.error().message().c_str());
        return 1;
    }
    std::printf(
        "probe: size=%llu group=%u rec_s=%.0f mb_s=%.2f syncs=%llu sync_p50_ms=%.3f "
        "sync_p99_ms=%.3f\n",
        static_cast<unsigned long long>(size), group, r->records_per_s, r->mb_per_s,
        static_cast<unsigned long long>(r->syncs), r->sync_p50_ms, r->sync_p99_ms);
    return 0;
}
