// The SQLite projection repository: replace_atomically and apply_once semantics, persistence
// across reopen, and crashes (a child process SIGKILLed between apply and commit, and at random
// points of an apply loop): the applied cursor and the data always agree.

#include "nereus/events/sqlite_projection.h"

#include "nereus/events/errc.h"

#include <gtest/gtest.h>

#include "support/child_process.h"
#include "support_ops.h"
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <random>
#include <sstream>

namespace nereus::events::test {
namespace {

class SqliteProjectionTest : public ::testing::Test {
protected:
    void SetUp() override {
        std::string pattern =
            (std::filesystem::temp_directory_path() / "nereus-events-XXXXXX").string();
        ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
        dir_ = pattern;
        db_ = dir_ + "/projection.db";
    }
    void TearDown() override {
        std::error_code ec;
        std::filesystem::remove_all(dir_, ec);
    }
    std::unique_ptr<sqlite_projection> open() {
        auto p = sqlite_projection::open(db_);
        EXPECT_TRUE(p.has_value());
        return p ? std::move(*p) : nullptr;
    }
    std::string dir_;
    std::string db_;
};

TEST_F(SqliteProjectionTest, ApplyOnceIsIdempotentAndFencedByEpoch) {
    auto p = open();
    ASSERT_TRUE(p);
    EXPECT_TRUE(p->durable());
    const auto e1 = event_at(1);
    auto r = p->apply_once(cursor{0, 1, 1}, e1.op, bytes_of(e1.payload));
    ASSERT_FALSE(r.has_value());
    EXPECT_EQ(r.error(), make_error_code(errc::not_bootstrapped));

    const std::vector<cursor> barriers{cursor{0, 1, 0}, cursor{1, 1, 40}};
    ASSERT_TRUE(p->replace_atomically(barriers, bootstrap_image()).has_value());
    for (std::uint64_t n = 1; n <= 12; ++n) {
        const auto e = event_at(n);
        auto a = p->apply_once(cursor{0, 1, n}, e.op, bytes_of(e.payload));
        ASSERT_TRUE(a.has_value());
        EXPECT_EQ(*a, apply_outcome::applied);
    }
    // Redeliveries of applied cursors change nothing.
    for (std::uint64_t n : {1, 7, 12}) {
        const auto e = event_at(n);
        auto a = p->apply_once(cursor{0, 1, n}, operation{operation::kind::upsert, "dup"},
                               bytes_of(e.payload));
        ASSERT_TRUE(a.has_value());
        EXPECT_EQ(*a, apply_outcome::already_applied);
    }
    EXPECT_EQ(*p->rows(), fold(12));
    EXPECT_EQ(**p->applied(0), (cursor{0, 1, 12}));
    EXPECT_EQ(**p->applied(1), (cursor{1, 1, 40}));
    // Partition 1 at or below its barrier: already applied; another epoch: refused.
    EXPECT_EQ(*p->apply_once(cursor{1, 1, 40}, e1.op, bytes_of(e1.payload)),
              apply_outcome::already_applied);
    auto other = p->apply_once(cursor{0, 2, 13}, e1.op, bytes_of(e1.payload));
    ASSERT_FALSE(other.has_value());
    EXPECT_EQ(other.error(), make_error_code(errc::epoch_mismatch));
    EXPECT_EQ(*p->rows(), fold(12));

    // A re-snapshot at a new epoch replaces everything, cursors included.
    const std::vector<cursor> next{cursor{0, 2, 100}};
    const std::vector<row> image{row{"only", "one"}};
    ASSERT_TRUE(p->replace_atomically(next, image).has_value());
    EXPECT_EQ(*p->rows(), image);
    EXPECT_EQ(**p->applied(0), (cursor{0, 2, 100}));
    EXPECT_FALSE(p->applied(1)->has_value());
    // Invalid barrier sets change nothing.
    const std::vector<cursor> dup{cursor{0, 3, 1}, cursor{0, 3, 2}};
    EXPECT_FALSE(p->replace_atomically(dup, {}).has_value());
    const std::vector<cursor> mixed{cursor{0, 3, 1}, cursor{1, 4, 2}};
    EXPECT_FALSE(p->replace_atomically(mixed, {}).has_value());
    EXPECT_FALSE(p->replace_atomically({}, {}).has_value());
    EXPECT_EQ(*p->rows(), image);
}

TEST_F(SqliteProjectionTest, StateSurvivesReopen) {
    {
        auto p = open();
        ASSERT_TRUE(p);
        const cursor b{0, 1, 0};
        ASSERT_TRUE(p->replace_atomically(std::span(&b, 1), bootstrap_image()).has_value());
        for (std::uint64_t n = 1; n <= 9; ++n) {
            const auto e = event_at(n);
            ASSERT_TRUE(p->apply_once(cursor{0, 1, n}, e.op, bytes_of(e.payload)).has_value());
        }
    }
    auto p = open();
    ASSERT_TRUE(p);
    EXPECT_EQ(*p->rows(), fold(9));
    EXPECT_EQ(**p->applied(0), (cursor{0, 1, 9}));
}

TEST_F(SqliteProjectionTest, SigkillBetweenApplyAndCommitLeavesNeitherChangeNorCursor) {
    const auto run = nereus::test::run_and_kill({NEREUS_EVENTS_CRASH_CHILD, db_, "hold"},
                                                std::chrono::milliseconds(100), "HOLD");
    ASSERT_TRUE(nereus::test::killed_by_sigkill(run.wait_status)) << run.output;
    ASSERT_NE(run.output.find("A 5\nHOLD\n"), std::string::npos) << run.output;
    auto p = open();
    ASSERT_TRUE(p);
    EXPECT_EQ(**p->applied(0), (cursor{0, 1, 5}));
    EXPECT_EQ(*p->rows(), fold(5));
    // The redelivery of event 6 applies it once; of event 5, nothing.
    const auto e6 = event_at(6);
    EXPECT_EQ(*p->apply_once(cursor{0, 1, 6}, e6.op, bytes_of(e6.payload)), apply_outcome::applied);
    const auto e5 = event_at(5);
    EXPECT_EQ(*p->apply_once(cursor{0, 1, 5}, e5.op, bytes_of(e5.payload)),
              apply_outcome::already_applied);
    EXPECT_EQ(*p->rows(), fold(6));
}

TEST_F(SqliteProjectionTest, SigkillAtRandomPointsKeepsCursorAndDataTogether) {
    std::mt19937_64 rng(::testing::UnitTest::GetInstance()->random_seed() + 6);
    std::uint64_t confirmed = 0;
    for (int round = 0; round < 3; ++round) {
        const auto run = nereus::test::run_and_kill(
            {NEREUS_EVENTS_CRASH_CHILD, db_, "loop"},
            std::chrono::milliseconds(150 + static_cast<int>(rng() % 350)),
            numbered("A ", confirmed + 1));
        ASSERT_TRUE(nereus::test::killed_by_sigkill(run.wait_status)) << run.output;
        std::istringstream in(run.output);
        std::string tag;
        std::uint64_t n = 0;
        while (in >> tag >> n) {
            if (tag == "A") {
                confirmed = std::max(confirmed, n);
            }
        }
        auto p = open();
        ASSERT_TRUE(p);
        auto c = p->applied(0);
        ASSERT_TRUE(c && *c);
        // Every commit the child reported is there (at most one more, committed but not yet
        // printed), and the rows are exactly the fold through the applied cursor.
        EXPECT_GE((*c)->sequence, confirmed);
        EXPECT_LE((*c)->sequence, confirmed + 1);
        EXPECT_EQ(*p->rows(), fold((*c)->sequence)) << "round " << round;
        confirmed = (*c)->sequence;
    }
    EXPECT_GT(confirmed, 0u);
    std::cout << "random kills: " << confirmed << " events applied across 3 SIGKILLed runs\n";
}

}  // namespace
}  // namespace nereus::events::test
