// Read-side faults (issue 8): an EIO while the stream log reads a segment must reach the caller
// as an error — never as the end of the topic, an empty read or a silent skip — and must not
// move the cursor's read position, so the entries are delivered once the fault clears.
//
// The stream log and the object store sit on the real file system behind a wrapper whose
// read_at fails while armed (only reads of segment files, `.log`); the metadata store is the
// in-memory one. Every wait is bounded (synchronous calls only).

#include "nereus/ledger/managed_cursor.h"
#include "nereus/ledger/managed_ledger.h"
#include "nereus/meta/memory_store.h"
#include "nereus/meta/sync.h"
#include "nereus/objects/fs_object_store.h"
#include "nereus/storage/stream_store.h"

#include <gtest/gtest.h>

#include "support/read_fault_fs.h"
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <span>
#include <string>

namespace nereus::ledger::test {
namespace {

using nereus::test::read_fault_fs;
using nereus::test::read_faults;

TEST(LedgerReadFault, SegmentReadEioIsAnErrorNeverEndOfTopicOrASkip) {
    std::string pattern =
        (std::filesystem::temp_directory_path() / "nereus-readfault-XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    const std::string dir = pattern;
    auto faults = std::make_shared<read_faults>();
    auto fs = std::make_shared<read_fault_fs>(faults);
    {
        auto meta = meta::memory_store::open();
        auto session = meta::open_session_sync(*meta, std::chrono::minutes(5));
        ASSERT_TRUE(session.has_value());
        auto streams = storage::stream_store::open(fs, dir + "/streams");
        ASSERT_TRUE(streams.has_value()) << streams.error().message();
        auto objects = objects::fs_object_store::open(fs, dir + "/objects");
        ASSERT_TRUE(objects.has_value()) << objects.error().message();
        auto l = managed_ledger::open_writable(
            ledger_env{meta.get(), objects->get(), streams->get(), *session}, "persistent://t/n/r");
        ASSERT_TRUE(l.has_value()) << l.error().message();
        const std::string payload = "entry";
        for (int i = 0; i < 30; ++i) {
            ASSERT_TRUE((*l)->append_sync(std::as_bytes(std::span(payload.data(), payload.size())),
                                          append_options{.publish_time = 1000 + i})
                            .has_value());
        }
        auto c = (*l)->open_cursor("s", cursor::initial_position::earliest());
        ASSERT_TRUE(c.has_value()) << c.error().message();

        // Two reads while every segment read fails: errors, nothing delivered or skipped, the
        // backlog intact, the end of the topic unchanged.
        faults->failing_reads = 1'000'000;
        for (int i = 0; i < 2; ++i) {
            auto r = (*c)->read(100);
            ASSERT_FALSE(r.has_value()) << "a failed read came back as " << r->entries.size()
                                        << " entries (skipped: " << r->skipped.has_value() << ")";
            EXPECT_EQ(r.error(), std::make_error_code(std::errc::io_error)) << r.error().message();
            EXPECT_EQ((*c)->next_read_position(), 0U);
            EXPECT_EQ((*c)->backlog(), 30U);
            EXPECT_EQ((*l)->info().end, 30U);
        }
        EXPECT_GT(faults->failed.load(), 0) << "no segment read was attempted: the test is void";

        // The fault clears: the next read (no rewind) delivers everything from entry 0, in order.
        faults->failing_reads = 0;
        auto r = (*c)->read(100);
        ASSERT_TRUE(r.has_value()) << r.error().message();
        EXPECT_FALSE(r->skipped.has_value());
        ASSERT_EQ(r->entries.size(), 30U);
        for (std::size_t i = 0; i < r->entries.size(); ++i) {
            EXPECT_EQ(r->entries[i].at, i);
        }
        c->reset();
        ASSERT_TRUE((*l)->close().has_value());
        ASSERT_TRUE((*streams)->close().has_value());
    }
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
}

}  // namespace
}  // namespace nereus::ledger::test
