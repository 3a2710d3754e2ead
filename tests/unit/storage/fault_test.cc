// I/O faults on the commit path: the error reaches the caller, the store fails closed, and after
// reopening nothing durable is lost (fault_file_system).

#include "nereus/base/fault_file_system.h"
#include "nereus/storage/errc.h"
#include "nereus/storage/stream_store.h"

#include <gtest/gtest.h>

#include "support/payloads.h"
#include "support/store_helpers.h"

namespace nereus::storage {
namespace {

using namespace testing;

class Faults : public ::testing::Test {
protected:
    std::unique_ptr<stream_store> open(store_options o = {}) { return open_store(fs_, "/db", o); }
    void start(int n) {
        s_ = open();
        ASSERT_NE(s_, nullptr);
        ASSERT_TRUE(s_->create_stream(stream_id(1)));
        for (int i = 0; i < n; ++i) {
            ASSERT_TRUE(s_->append_sync(stream_id(1), payload(1, i, 80)));
        }
        acked_ = n;
    }
    // After the failure: every call fails, and reopening recovers all acknowledged appends.
    void expect_failed_then_recovered(bool with_power_loss) {
        auto a = s_->append_sync(stream_id(1), payload(1, 999, 80));
        ASSERT_FALSE(a) << "append after the failure succeeded at " << a->value();
        EXPECT_EQ(a.error(), errc::store_failed) << a.error().message();
        auto rd = s_->read(stream_id(1), offset(0), 1, 100);
        ASSERT_FALSE(rd);
        EXPECT_EQ(rd.error(), errc::store_failed) << rd.error().message();
        EXPECT_FALSE(s_->close());
        s_.reset();
        if (with_power_loss) {
            fs_->power_loss();
        }
        s_ = open();
        ASSERT_NE(s_, nullptr);
        auto all = read_all(*s_, stream_id(1));
        ASSERT_GE(all.size(), static_cast<std::size_t>(acked_));
        for (int i = 0; i < acked_; ++i) {
            EXPECT_EQ(all[i], payload(1, i, 80)) << i;
        }
        auto r = s_->append_sync(stream_id(1), payload(1, all.size(), 80));
        ASSERT_TRUE(r) << r.error().message();
        EXPECT_EQ(r->value(), all.size());
    }

    std::shared_ptr<fault_file_system> fs_ = std::make_shared<fault_file_system>();
    std::unique_ptr<stream_store> s_;
    int acked_ = 0;
};

TEST_F(Faults, ShortJournalWrite) {
    start(5);
    fs_->fail_writes(".journal", std::errc::io_error, 30);
    auto r = s_->append_sync(stream_id(1), payload(1, 5, 80));
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error(), std::errc::io_error);
    expect_failed_then_recovered(false);
}

TEST_F(Faults, ShortJournalWriteThenPowerLoss) {
    start(5);
    fs_->fail_writes(".journal", std::errc::io_error, 30);
    EXPECT_FALSE(s_->append_sync(stream_id(1), payload(1, 5, 80)));
    expect_failed_then_recovered(true);
}

TEST_F(Faults, EioOnJournalSync) {
    start(5);
    fs_->fail_syncs(".journal");
    auto r = s_->append_sync(stream_id(1), payload(1, 5, 80));
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error(), std::errc::io_error);
    expect_failed_then_recovered(true);
}

TEST_F(Faults, EnospcOnJournal) {
    start(3);
    fs_->set_space_limit(fs_->used_bytes() + 1000);
    std::error_code ec;
    for (int i = 3; i < 100 && !ec; ++i) {
        auto r = s_->append_sync(stream_id(1), payload(1, i, 80));
        if (r) {
            ++acked_;
        } else {
            ec = r.error();
        }
    }
    EXPECT_TRUE(ec == std::errc::no_space_on_device || ec == errc::store_failed) << ec.message();
    fs_->set_space_limit(std::nullopt);
    expect_failed_then_recovered(true);
}

TEST_F(Faults, SegmentWriteFailureAfterTheJournalSyncStillReportsDurable) {
    start(3);
    fs_->fail_writes(".log", std::errc::no_space_on_device, 5);
    auto r = s_->append_sync(stream_id(1), payload(1, 3, 80));
    ASSERT_TRUE(r) << "the journal holds it: it is durable";
    ++acked_;
    expect_failed_then_recovered(true);
}

TEST_F(Faults, FailedSegmentSyncInACheckpointFailsTheStore) {
    store_options o;
    o.checkpoint_bytes = 1;  // checkpoint after every group
    s_ = open(o);
    ASSERT_NE(s_, nullptr);
    ASSERT_TRUE(s_->create_stream(stream_id(1)));
    fs_->fail_syncs(".log");
    std::error_code ec;
    for (int i = 0; i < 20000 && !ec; ++i) {  // until the background checkpoint hits the fault
        auto r = s_->append_sync(stream_id(1), payload(1, i, 80));
        if (r) {
            ++acked_;
        } else {
            ec = r.error();
        }
    }
    EXPECT_TRUE(ec == errc::store_failed || ec == std::errc::io_error) << ec.message();
    expect_failed_then_recovered(true);
}

TEST_F(Faults, FailedRollFailsTheStore) {
    store_options o;
    o.segment_max_bytes = 200;  // two 96-byte records per segment
    s_ = open(o);
    ASSERT_NE(s_, nullptr);
    ASSERT_TRUE(s_->create_stream(stream_id(1)));
    ASSERT_TRUE(s_->append_sync(stream_id(1), payload(1, 0, 80)));
    ASSERT_TRUE(s_->append_sync(stream_id(1), payload(1, 1, 80)));
    acked_ = 2;
    fs_->fail_syncs(".log");  // the roll's fdatasync of the sealed segment
    auto r = s_->append_sync(stream_id(1), payload(1, 2, 80));
    ASSERT_TRUE(r) << "journaled before the roll failed";
    ++acked_;
    expect_failed_then_recovered(true);
}

}  // namespace
}  // namespace nereus::storage
