#include "apps/nereus/perf/raw_baseline.h"

#include "nereus/base/file_system.h"

#include <gtest/gtest.h>

#include "unit/meta/support/temp_dir.h"
#include <filesystem>
#include <string>

namespace nereus::app::perf {
namespace {

bool empty_dir(const std::string& dir) {
    return std::filesystem::is_empty(dir);
}

// Whether the file system under `dir` opens files for direct I/O at all (tmpfs does not).
bool direct_io_available(const std::string& dir) {
    auto fs = posix_file_system();
    const std::string path = path_join(dir, "probe");
    if (!fs->open(path, open_mode::create_exclusive)) {
        return false;
    }
    const bool ok = fs->open_direct(path).has_value();
    (void)fs->remove(path);
    return ok;
}

TEST(RawBaseline, AppendFdatasyncWritesGroupsAndRemovesItsFile) {
    const meta::test::temp_dir dir;
    auto r = measure_raw_baseline(dir.path(), 100, 50, 0.2);
    ASSERT_TRUE(r.has_value()) << r.error().message();
    EXPECT_GT(r->syncs, 0U);
    EXPECT_GT(r->records_per_s, 0.0);
    EXPECT_GT(r->sync_p50_ms, 0.0);
    EXPECT_TRUE(empty_dir(dir.path()));
}

// Every write of the direct probe is O_DIRECT, so a misaligned length, offset or buffer fails
// the run with EINVAL. Groups of 1,000 x 1 KiB are 1 MiB + padding per write: the 64 MiB
// prepared file is wrapped every 63 writes, so a run of a few hundred goes round it several
// times. Groups of 7 x 3 B (189 bytes framed) are each padded to one 4 KiB page.
TEST(RawBaseline, DirectPreparedWritesAlignedGroupsAndRemovesItsFile) {
    const meta::test::temp_dir dir;
    if (!direct_io_available(dir.path())) {
        GTEST_SKIP() << "no direct I/O on " << dir.path() << " (tmpfs?)";
    }
    for (const auto& [size, group] : {std::pair<std::size_t, std::uint32_t>{1024, 1000}, {3, 7}}) {
        auto r = measure_raw_baseline(dir.path(), size, group, 0.2, raw_method::direct_prepared);
        ASSERT_TRUE(r.has_value()) << size << " B x " << group << ": " << r.error().message();
        EXPECT_GT(r->syncs, 0U) << size;
        EXPECT_GT(r->records_per_s, 0.0) << size;
        EXPECT_TRUE(empty_dir(dir.path())) << size;
    }
}

}  // namespace
}  // namespace nereus::app::perf
