// pending_index against std::map (the structure it replaces in subscription): any sequence of
// in-order inserts, out-of-order inserts and overwrites, erasures found by id, by walking, by
// the returned next iterator (as the ack path does) and by predicate gives the same contents
// in the same order, and the slots held stay O(live entries).

#include "nereus/broker/pending_index.h"

#include <gtest/gtest.h>

#include <map>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

namespace nereus::broker {
namespace {

void assert_same(pending_index<int>& p, const std::map<std::uint64_t, int>& m) {
    RC_ASSERT(p.size() == m.size());
    RC_ASSERT(p.empty() == m.empty());
    auto it = p.begin();
    for (const auto& [k, v] : m) {
        RC_ASSERT(it != p.end());
        RC_ASSERT(it->first == k);
        RC_ASSERT(it->second == v);
        ++it;
    }
    RC_ASSERT(it == p.end());
    if (!m.empty()) {
        RC_ASSERT(p.back_key() == m.rbegin()->first);
    }
}

RC_GTEST_PROP(PendingIndex, BehavesLikeAnOrderedMap, ()) {
    pending_index<int> p;
    std::map<std::uint64_t, int> m;
    std::uint64_t next_id = *rc::gen::inRange<std::uint64_t>(0, 5);
    const auto steps = *rc::gen::inRange(1, 400);
    for (int step = 0; step < steps; ++step) {
        const int op = *rc::gen::inRange(0, 100);
        const int v = *rc::gen::inRange(0, 1000);
        if (op < 40) {  // deliver a run in order
            const auto n = *rc::gen::inRange(1, 40);
            for (int i = 0; i < n; ++i) {
                next_id += *rc::gen::inRange<std::uint64_t>(1, 3);
                p.insert_or_assign(next_id, v + i);
                m.insert_or_assign(next_id, v + i);
            }
        } else if (op < 48) {  // a redelivery below the back (maybe over a live one)
            const auto k = *rc::gen::inRange<std::uint64_t>(0, next_id + 1);
            p.insert_or_assign(k, v);
            m.insert_or_assign(k, v);
        } else if (op < 78) {  // a grouped ack: ids in order, following the returned next
            auto next = p.end();
            auto id = m.empty() ? 0 : m.begin()->first + *rc::gen::inRange<std::uint64_t>(0, 6);
            const auto n = *rc::gen::inRange(1, 50);
            for (int i = 0; i < n; ++i, id += *rc::gen::inRange<std::uint64_t>(1, 4)) {
                auto it = next != p.end() && next->first == id ? next : p.find(id);
                RC_ASSERT((it != p.end()) == m.contains(id));
                RC_ASSERT(p.contains(id) == m.contains(id));
                if (it != p.end()) {
                    RC_ASSERT(it->first == id);
                    next = p.erase(it);
                    m.erase(id);
                    auto mn = m.upper_bound(id);
                    RC_ASSERT((next == p.end()) == (mn == m.end()));
                    if (mn != m.end()) {
                        RC_ASSERT(next->first == mn->first);
                    }
                }
            }
        } else if (op < 86) {  // a cumulative ack: walk from the front up to an id
            const auto upto = *rc::gen::inRange<std::uint64_t>(0, next_id + 2);
            for (auto it = p.begin(); it != p.end() && it->first <= upto;) {
                it = p.erase(it);
            }
            m.erase(m.begin(), m.upper_bound(upto));
        } else if (op < 94) {  // release some: walk everything, erase by value
            const int mod = *rc::gen::inRange(2, 5);
            for (auto it = p.begin(); it != p.end();) {
                it = it->second % mod == 0 ? p.erase(it) : ++it;
            }
            std::erase_if(m, [&](const auto& kv) { return kv.second % mod == 0; });
        } else if (op < 97) {
            const int mod = *rc::gen::inRange(2, 5);
            p.erase_if([&](const auto& kv) { return kv.second % mod == 1; });
            std::erase_if(m, [&](const auto& kv) { return kv.second % mod == 1; });
        } else if (op < 98) {
            p.clear();
            m.clear();
        } else {  // values are mutable through iteration
            for (auto& [k, val] : p) {
                val += static_cast<int>(k % 7);
            }
            for (auto& [k, val] : m) {
                val += static_cast<int>(k % 7);
            }
        }
        assert_same(p, m);
        if (op < 48) {
            // Insertions compact: the slots held are O(live entries) after one.
            RC_ASSERT(p.slots_in_use() <= 2 * p.size() + 66);
        }
    }
}

// One old entry stays unacked while a million later ones are delivered and acked: the slots
// held stay bounded (tombstones behind the stuck entry are compacted away).
TEST(PendingIndex, AStuckEntryDoesNotGrowTheRing) {
    pending_index<int> p;
    p.insert_or_assign(0, 1);
    for (std::uint64_t id = 1; id <= 1'000'000; ++id) {
        p.insert_or_assign(id, 2);
        if (id % 100 == 0) {
            for (std::uint64_t a = id - 99; a <= id; ++a) {
                auto it = p.find(a);
                ASSERT_NE(it, p.end());
                p.erase(it);
            }
        }
    }
    EXPECT_EQ(p.size(), 1U);
    EXPECT_LE(p.slots_in_use(), 300U);
    EXPECT_EQ(p.begin()->first, 0U);
}

}  // namespace
}  // namespace nereus::broker
