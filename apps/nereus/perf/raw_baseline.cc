#include "apps/nereus/perf/raw_baseline.h"

#include "nereus/base/crc32c.h"
#include "nereus/base/file_system.h"

#include "apps/nereus/perf/histogram.h"
#include <chrono>
#include <cstring>
#include <filesystem>
#include <vector>

namespace nereus::app::perf {

result<raw_baseline> measure_raw_baseline(const std::string& dir,
                                          std::size_t record_bytes,
                                          std::uint32_t group,
                                          double seconds) {
    using clock = std::chrono::steady_clock;
    constexpr std::size_t header = 24;  // as a journal record: ids, offset, length, CRC
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec) {
        return error(ec);
    }
    auto fs = posix_file_system();
    const std::string path = path_join(dir, "nereus-perf-raw.log");
    (void)fs->remove(path);
    auto f = fs->open(path, open_mode::create_exclusive);
    if (!f) {
        return error(f.error());
    }
    NEREUS_TRY(fs->sync_dir(dir));
    const std::size_t framed = record_bytes + header;
    const std::size_t g = group == 0 ? 1 : group;
    std::vector<std::byte> buf(framed * g, std::byte{0x5a});
    histogram sync_ns;
    std::uint64_t pos = 0;
    std::uint64_t records = 0;
    const auto start = clock::now();
    const auto deadline =
        start + std::chrono::duration_cast<clock::duration>(std::chrono::duration<double>(seconds));
    result<void> status;
    while (clock::now() < deadline) {
        const auto t0 = clock::now();
        for (std::size_t i = 0; i < g; ++i) {
            auto* rec = buf.data() + framed * i;
            const std::uint32_t crc = crc32c::value(rec + header, framed - header);
            std::memcpy(rec, &crc, sizeof crc);
        }
        if (status = (*f)->write_at(pos, buf); !status) {
            break;
        }
        if (status = (*f)->sync(); !status) {
            break;
        }
        pos += buf.size();
        records += g;
        sync_ns.record(static_cast<std::uint64_t>(
            std::chrono::duration_cast<std::chrono::nanoseconds>(clock::now() - t0).count()));
    }
    const double secs = std::chrono::duration<double>(clock::now() - start).count();
    f->reset();
    (void)fs->remove(path);
    if (!status) {
        return error(status.error());
    }
    raw_baseline out;
    out.records_per_s = secs > 0 ? static_cast<double>(records) / secs : 0;
    out.mb_per_s = out.records_per_s * static_cast<double>(record_bytes) / 1e6;
    out.sync_p50_ms = static_cast<double>(sync_ns.percentile(0.5)) / 1e6;
    out.sync_p99_ms = static_cast<double>(sync_ns.percentile(0.99)) / 1e6;
    out.syncs = sync_ns.count();
    return out;
}

}  // namespace nereus::app::perf
