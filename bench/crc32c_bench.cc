// CRC32C throughput: hardware (SSE4.2) against the portable table, same run.
#include "nereus/base/crc32c.h"

#include <benchmark/benchmark.h>
#include <vector>

static void BM_Crc32cHardware(benchmark::State& state) {
    std::vector<unsigned char> buf(static_cast<std::size_t>(state.range(0)), 0x5a);
    for (auto _ : state) {
        benchmark::DoNotOptimize(nereus::crc32c::value(buf.data(), buf.size()));
    }
    state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) * state.range(0));
}
BENCHMARK(BM_Crc32cHardware)->Arg(100)->Arg(1024)->Arg(65536);

static void BM_Crc32cPortable(benchmark::State& state) {
    std::vector<unsigned char> buf(static_cast<std::size_t>(state.range(0)), 0x5a);
    for (auto _ : state) {
        benchmark::DoNotOptimize(nereus::crc32c::extend_portable(0, buf.data(), buf.size()));
    }
    state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) * state.range(0));
}
BENCHMARK(BM_Crc32cPortable)->Arg(100)->Arg(1024)->Arg(65536);
