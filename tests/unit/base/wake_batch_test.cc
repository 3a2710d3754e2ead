#include "nereus/base/wake_batch.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace nereus {
namespace {

struct target {
    std::vector<std::string>* log;
    std::string name;
};

void record(void* t) {
    auto* p = static_cast<target*>(t);
    p->log->push_back(p->name);
}

TEST(WakeBatch, OutsideAScopeDeferRefusesAndTheCallerWakesAtOnce) {
    std::vector<std::string> log;
    auto t = std::make_shared<target>(target{&log, "a"});
    EXPECT_FALSE(wake_batch::defer(t, record));
    EXPECT_TRUE(log.empty());
    EXPECT_EQ(t.use_count(), 1);  // nothing kept
}

TEST(WakeBatch, WakeUpsRunOnceAtTheScopeEndInRegistrationOrder) {
    std::vector<std::string> log;
    auto a = std::make_shared<target>(target{&log, "a"});
    auto b = std::make_shared<target>(target{&log, "b"});
    {
        const wake_batch batch;
        EXPECT_TRUE(wake_batch::defer(a, record));
        EXPECT_TRUE(wake_batch::defer(b, record));
        EXPECT_TRUE(log.empty());     // deferred, not run
        EXPECT_EQ(a.use_count(), 2);  // the scope keeps its target alive
    }
    EXPECT_EQ(log, (std::vector<std::string>{"a", "b"}));
    EXPECT_EQ(a.use_count(), 1);                 // released after the wake-up
    EXPECT_FALSE(wake_batch::defer(a, record));  // the scope is gone
}

TEST(WakeBatch, KeepsATargetAliveThatItsOwnerDropped) {
    std::vector<std::string> log;
    {
        const wake_batch batch;
        auto t = std::make_shared<target>(target{&log, "dropped"});
        EXPECT_TRUE(wake_batch::defer(t, record));
    }
    EXPECT_EQ(log, (std::vector<std::string>{"dropped"}));
}

TEST(WakeBatch, NestedScopesRunTheirOwnEntriesAndAWakeUpDeferringAgainGoesOutward) {
    std::vector<std::string> log;
    auto outer = std::make_shared<target>(target{&log, "outer"});
    auto inner = std::make_shared<target>(target{&log, "inner"});
    auto late = std::make_shared<target>(target{&log, "late"});
    struct again_ctx {
        std::shared_ptr<target> late;
        std::vector<std::string>* log;
    };
    auto again = std::make_shared<again_ctx>(again_ctx{late, &log});
    {
        const wake_batch o;
        EXPECT_TRUE(wake_batch::defer(outer, record));
        {
            const wake_batch i;
            EXPECT_TRUE(wake_batch::defer(inner, record));
            EXPECT_TRUE(wake_batch::defer(again, [](void* p) {
                auto* c = static_cast<again_ctx*>(p);
                c->log->push_back("again");
                // Runs at the inner scope's end: registers with the outer scope.
                EXPECT_TRUE(wake_batch::defer(c->late, record));
            }));
        }
        EXPECT_EQ(log, (std::vector<std::string>{"inner", "again"}));
    }
    EXPECT_EQ(log, (std::vector<std::string>{"inner", "again", "outer", "late"}));
}

TEST(WakeBatch, AScopeIsPerThread) {
    std::vector<std::string> log;
    auto t = std::make_shared<target>(target{&log, "t"});
    const wake_batch batch;
    bool deferred_elsewhere = true;
    std::thread other([&] { deferred_elsewhere = wake_batch::defer(t, record); });
    other.join();
    EXPECT_FALSE(deferred_elsewhere);  // the other thread has no scope
}

}  // namespace
}  // namespace nereus
