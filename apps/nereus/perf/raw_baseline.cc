#include "apps/nereus/perf/raw_baseline.h"

#include "nereus/base/crc32c.h"
#include "nereus/base/direct_io_buffer.h"
#include "nereus/base/file_system.h"

#include "apps/nereus/perf/histogram.h"
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <span>
#include <vector>

namespace nereus::app::perf {

namespace {

constexpr std::uint64_t kPreparedBytes = 64ULL << 20;

// direct_prepared: the file zero-filled to kPreparedBytes, synced, and opened for direct writes.
result<std::unique_ptr<file>> prepare_direct(file_system& fs,
                                             const std::string& dir,
                                             const std::string& path,
                                             std::unique_ptr<file> f) {
    const std::vector<std::byte> zeros(1U << 20);
    for (std::uint64_t pos = 0; pos < kPreparedBytes; pos += zeros.size()) {
        NEREUS_TRY(f->write_at(pos, zeros));
    }
    NEREUS_TRY(f->sync());
    f.reset();
    NEREUS_TRY(fs.sync_dir(dir));
    return fs.open_direct(path);
}

}  // namespace

result<raw_baseline> measure_raw_baseline(const std::string& dir,
                                          std::size_t record_bytes,
                                          std::uint32_t group,
                                          double seconds,
                                          raw_method method) {
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
    const bool direct = method == raw_method::direct_prepared;
    if (direct) {
        auto d = prepare_direct(*fs, dir, path, std::move(*f));
        if (!d) {
            (void)fs->remove(path);
            return error(d.error());
        }
        *f = std::move(*d);
    }
    const std::size_t framed = record_bytes + header;
    const std::size_t g = group == 0 ? 1 : group;
    // A direct write's length and buffer are page-aligned: the group padded with zeros.
    const std::size_t len =
        direct ? (framed * g + kDirectIoAlign - 1) / kDirectIoAlign * kDirectIoAlign : framed * g;
    if (direct && len > kPreparedBytes) {
        (void)fs->remove(path);
        return error(std::make_error_code(std::errc::file_too_large));
    }
    // Whole pages (an appended group's length need not be a multiple of one).
    const direct_io_buffer mem = allocate_direct_io_buffer(len);
    if (mem == nullptr) {
        f->reset();
        (void)fs->remove(path);
        return error(std::make_error_code(std::errc::not_enough_memory));
    }
    std::memset(mem.get(), 0x5a, framed * g);
    std::memset(mem.get() + framed * g, 0, len - framed * g);
    const std::span<std::byte> buf(mem.get(), len);
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
        if (direct && pos + buf.size() > kPreparedBytes) {
            pos = 0;  // written blocks, as a prepared file's: the same cost as its zeros
        }
        if (status = (*f)->write_at(pos, buf); !status) {
            break;
        }
        if (!direct) {
            if (status = (*f)->sync(); !status) {
                break;
            }
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
