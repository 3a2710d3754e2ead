// A segment file lost or deleted by hand below everything the ledger trimmed: the stream then
// starts above the ledger's logical start. The open fails closed (stream_missing); it is never
// read as a trim (which would silently skip the lost entries for every cursor). A real trim
// followed by a restart still opens.

#include "nereus/ledger/errc.h"

#include <gtest/gtest.h>

#include "support/harness.h"

namespace nereus::ledger::test {
namespace {

std::vector<std::string> segments(fault_file_system& fs) {
    auto dirs = fs.list_dir("/data/streams/streams");
    EXPECT_TRUE(dirs && dirs->size() == 1);
    if (!dirs || dirs->empty()) {
        return {};
    }
    const std::string d = "/data/streams/streams/" + dirs->front();
    std::vector<std::string> out;
    auto names = fs.list_dir(d);
    EXPECT_TRUE(names.has_value());
    for (const auto& n : names ? *names : std::vector<std::string>{}) {
        out.push_back(d + "/" + n);
    }
    return out;
}

TEST(LedgerMissingSegment, LostFirstSegmentFailsTheOpenNeverReadsAsATrim) {
    harness h;
    h.open();
    h.append_n(35);  // 10 entries per segment: 4 segments
    ASSERT_TRUE(h.ledger()->close().has_value());
    h.ledger().reset();
    const auto segs = segments(h.fs());
    ASSERT_GE(segs.size(), 3U);
    ASSERT_TRUE(h.fs().remove(segs.front()));
    h.crash(harness::crash_kind::process);
    auto l = h.try_open();
    ASSERT_FALSE(l.has_value()) << "opened with start=" << (*l)->info().start;
    EXPECT_EQ(l.error(), make_error_code(errc::stream_missing)) << l.error().message();
}

TEST(LedgerMissingSegment, RealTrimThenRestartStillOpens) {
    harness h;
    h.open();
    h.append_n(35);
    auto c = h.ledger()->open_cursor("c", cursor::initial_position::earliest());
    ASSERT_TRUE(c.has_value());
    ASSERT_TRUE((*c)->ack_cumulative_sync((*c)->current_fence(), 24).has_value());
    auto t = h.ledger()->trim();
    ASSERT_TRUE(t.has_value()) << t.error().message();
    c->reset();
    const auto start = h.ledger()->info().start;
    EXPECT_GT(start, 0U) << "nothing trimmed: the test shows nothing";
    h.restart();
    ASSERT_NE(h.ledger(), nullptr);
    EXPECT_EQ(h.ledger()->info().start, start);
}

}  // namespace
}  // namespace nereus::ledger::test
