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

// combine(): the CRC of A || B from crc(A), crc(B) and |B| (one length used once: a commit
// group's body), and shifter::combine (a precomputed length: a record's payload).
static void BM_Crc32cCombine(benchmark::State& state) {
    std::uint32_t a = 0x12345678;
    for (auto _ : state) {
        a = nereus::crc32c::combine(a, 0x9abcdef0, static_cast<std::size_t>(state.range(0)));
        benchmark::DoNotOptimize(a);
    }
}
BENCHMARK(BM_Crc32cCombine)->Arg(100)->Arg(1024)->Arg(1 << 20);

static void BM_Crc32cShifter(benchmark::State& state) {
    const nereus::crc32c::shifter s(static_cast<std::size_t>(state.range(0)));
    std::uint32_t a = 0x12345678;
    for (auto _ : state) {
        a = s.combine(a, 0x9abcdef0);
        benchmark::DoNotOptimize(a);
    }
}
BENCHMARK(BM_Crc32cShifter)->Arg(100)->Arg(1024);
