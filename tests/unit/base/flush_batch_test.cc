#include "nereus/base/flush_batch.h"

#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <string>
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

TEST(FlushBatch, OutsideAScopeDeferRefuses) {
    std::vector<std::string> log;
    auto t = std::make_shared<target>(target{&log, "a"});
    EXPECT_FALSE(flush_batch::active());
    EXPECT_FALSE(flush_batch::defer(t, record));
    EXPECT_TRUE(log.empty());
    EXPECT_EQ(t.use_count(), 1);
}

TEST(FlushBatch, FunctionsRunAtTheScopeEndInOrderAndTheScopeIsLeftFirst) {
    std::vector<std::string> log;
    auto a = std::make_shared<target>(target{&log, "a"});
    auto b = std::make_shared<target>(target{&log, "b"});
    bool active_inside = true;
    struct probe {
        bool* out;
    };
    auto p = std::make_shared<probe>(probe{&active_inside});
    {
        std::optional<flush_batch> batch;
        batch.emplace();
        EXPECT_TRUE(flush_batch::active());
        EXPECT_TRUE(flush_batch::defer(a, record));
        EXPECT_TRUE(flush_batch::defer(b, record));
        EXPECT_TRUE(flush_batch::defer(p, [](void* q) {
            // Runs after the scope was left: a function that defers again is told there is no
            // scope, so it does its work at once instead of registering with a dying scope.
            *static_cast<probe*>(q)->out = flush_batch::active();
        }));
        EXPECT_TRUE(log.empty());
        EXPECT_EQ(a.use_count(), 2);
        batch.reset();
    }
    EXPECT_EQ(log, (std::vector<std::string>{"a", "b"}));
    EXPECT_FALSE(active_inside);
    EXPECT_EQ(a.use_count(), 1);
    EXPECT_FALSE(flush_batch::active());
}

TEST(FlushBatch, NestedScopesRunTheirOwnEntries) {
    std::vector<std::string> log;
    auto a = std::make_shared<target>(target{&log, "outer"});
    auto b = std::make_shared<target>(target{&log, "inner"});
    {
        const flush_batch outer;
        EXPECT_TRUE(flush_batch::defer(a, record));
        {
            const flush_batch inner;
            EXPECT_TRUE(flush_batch::defer(b, record));
        }
        EXPECT_EQ(log, std::vector<std::string>{"inner"});
        EXPECT_TRUE(flush_batch::active());
    }
    EXPECT_EQ(log, (std::vector<std::string>{"inner", "outer"}));
}

}  // namespace
}  // namespace nereus
