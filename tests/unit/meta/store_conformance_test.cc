// The conformance suite every meta::store backend must pass (architecture.md, "Backends").

#include "nereus/meta/errc.h"
#include "nereus/meta/fault_store.h"
#include "nereus/meta/store.h"
#include "nereus/meta/sync.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "unit/meta/support/backends.h"
#include <atomic>
#include <barrier>
#include <chrono>
#include <future>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace nereus::meta::test {
namespace {

using namespace std::chrono_literals;

// Collects watch events (and a final error) delivered on the store's callback thread.
class event_log {
public:
    watch_callback callback() {
        return [this](const result<watch_event>& ev) {
            const std::lock_guard lock(mu_);
            if (ev) {
                events_.push_back(*ev);
            } else {
                errors_.push_back(ev.error());
            }
        };
    }
    std::vector<watch_event> events() const {
        const std::lock_guard lock(mu_);
        return events_;
    }
    std::vector<std::error_code> errors() const {
        const std::lock_guard lock(mu_);
        return errors_;
    }
    std::size_t size() const {
        const std::lock_guard lock(mu_);
        return events_.size();
    }

private:
    mutable std::mutex mu_;
    std::vector<watch_event> events_;
    std::vector<std::error_code> errors_;
};

class StoreConformance : public ::testing::TestWithParam<backend_kind> {
protected:
    StoreConformance() : holder_(GetParam()) {}

    store& s() { return holder_.get(); }

    version create_ok(const std::string& key,
                      const std::string& value,
                      session_id owner = no_session) {
        auto r = create_sync(s(), key, value, owner);
        EXPECT_TRUE(r.has_value()) << key << ": " << r.error().message();
        EXPECT_TRUE(r && r->applied) << key;
        return r ? r->current : absent;
    }
    std::optional<record> get_ok(const std::string& key) {
        auto r = get_sync(s(), key);
        EXPECT_TRUE(r.has_value()) << key << ": " << r.error().message();
        return r ? *r : std::nullopt;
    }
    multi_result multi_ok(std::vector<op> ops) {
        auto r = multi_sync(s(), std::move(ops));
        EXPECT_TRUE(r.has_value()) << r.error().message();
        return r ? *r : multi_result{};
    }
    std::vector<std::string> keys_of(const std::string& prefix) {
        auto r = list_sync(s(), prefix);
        EXPECT_TRUE(r.has_value()) << r.error().message();
        std::vector<std::string> keys;
        if (r) {
            for (const auto& kr : *r) {
                keys.push_back(kr.key);
            }
        }
        return keys;
    }
    session_id open_session_ok(std::chrono::milliseconds ttl) {
        auto r = open_session_sync(s(), ttl);
        EXPECT_TRUE(r.has_value()) << r.error().message();
        return r ? *r : no_session;
    }

    store_holder holder_;
};

TEST_P(StoreConformance, GetOfAbsentKeyIsNullopt) {
    EXPECT_EQ(get_ok("nothing/here"), std::nullopt);
}

TEST_P(StoreConformance, CreateStoresValueWithVersionAndRefusesSecondCreate) {
    const version v = create_ok("k", "one");
    EXPECT_NE(v, absent);
    EXPECT_NE(v, any_version);
    auto rec = get_ok("k");
    ASSERT_TRUE(rec);
    EXPECT_EQ(rec->value, "one");
    EXPECT_EQ(rec->ver, v);
    EXPECT_EQ(rec->owner, no_session);

    auto again = create_sync(s(), "k", "two");
    ASSERT_TRUE(again);
    EXPECT_FALSE(again->applied);
    EXPECT_EQ(again->current, v);  // a conflict reports the version found
    EXPECT_EQ(get_ok("k")->value, "one");
}

TEST_P(StoreConformance, CompareAndSetAppliesOnlyOnTheCurrentVersion) {
    const version v1 = create_ok("k", "a");
    auto ok = cas_sync(s(), "k", v1, "b");
    ASSERT_TRUE(ok);
    ASSERT_TRUE(ok->applied);
    const version v2 = ok->current;
    EXPECT_NE(v2, v1);

    auto stale = cas_sync(s(), "k", v1, "c");  // a conflict is an outcome, not an error
    ASSERT_TRUE(stale);
    EXPECT_FALSE(stale->applied);
    EXPECT_EQ(stale->current, v2);
    EXPECT_EQ(get_ok("k")->value, "b");
    EXPECT_EQ(get_ok("k")->ver, v2);

    auto on_absent = cas_sync(s(), "missing", v1, "x");
    ASSERT_TRUE(on_absent);
    EXPECT_FALSE(on_absent->applied);
    EXPECT_EQ(on_absent->current, absent);
    EXPECT_EQ(get_ok("missing"), std::nullopt);
}

TEST_P(StoreConformance, ExpectedAbsentCreatesAndAnyVersionUpserts) {
    auto created = cas_sync(s(), "k", absent, "a");
    ASSERT_TRUE(created);
    EXPECT_TRUE(created->applied);
    auto refused = cas_sync(s(), "k", absent, "b");
    ASSERT_TRUE(refused);
    EXPECT_FALSE(refused->applied);
    EXPECT_EQ(refused->current, created->current);

    auto upsert = cas_sync(s(), "k", any_version, "c");
    ASSERT_TRUE(upsert);
    EXPECT_TRUE(upsert->applied);
    auto upsert_new = cas_sync(s(), "k2", any_version, "d");
    ASSERT_TRUE(upsert_new);
    EXPECT_TRUE(upsert_new->applied);
    EXPECT_EQ(get_ok("k")->value, "c");
    EXPECT_EQ(get_ok("k2")->value, "d");
}

TEST_P(StoreConformance, RemoveHonoursTheExpectedVersion) {
    const version v = create_ok("k", "a");
    auto stale = remove_sync(s(), "k", v + 1);
    ASSERT_TRUE(stale);
    EXPECT_FALSE(stale->applied);
    EXPECT_EQ(stale->current, v);
    EXPECT_TRUE(get_ok("k"));

    auto removed = remove_sync(s(), "k", v);
    ASSERT_TRUE(removed);
    EXPECT_TRUE(removed->applied);
    EXPECT_EQ(removed->current, absent);
    EXPECT_EQ(get_ok("k"), std::nullopt);

    auto again = remove_sync(s(), "k", v);  // gone: the version no longer matches
    ASSERT_TRUE(again);
    EXPECT_FALSE(again->applied);
    EXPECT_EQ(again->current, absent);

    auto if_present = remove_sync(s(), "k", any_version);  // delete-if-present is a no-op
    ASSERT_TRUE(if_present);
    EXPECT_TRUE(if_present->applied);
}

TEST_P(StoreConformance, DeleteAndRecreateNeverReusesAVersion) {
    std::set<version> seen;
    version last = absent;
    for (int i = 0; i < 5; ++i) {
        last = create_ok("aba", fmt::format("v{}", i));
        EXPECT_TRUE(seen.insert(last).second) << "version " << last << " reused";
        auto removed = remove_sync(s(), "aba", last);
        ASSERT_TRUE(removed && removed->applied);
    }
    const version fresh = create_ok("aba", "final");
    // An old handle holding a pre-delete version must not be able to write.
    for (const version old : seen) {
        auto r = cas_sync(s(), "aba", old, "stale writer");
        ASSERT_TRUE(r);
        EXPECT_FALSE(r->applied);
        EXPECT_EQ(r->current, fresh);
    }
    EXPECT_EQ(get_ok("aba")->value, "final");
}

TEST_P(StoreConformance, FailedCheckLeavesEveryKeyUntouched) {
    const version vb = create_ok("b", "b0");
    const version vc = create_ok("c", "c0");
    auto r =
        multi_ok({put{.key = "a", .value = "a1", .expected = absent},
                  put{.key = "b", .value = "b1", .expected = vb}, erase{.key = "c", .expected = vc},
                  check{.key = "c", .expected = vc + 1000}});
    EXPECT_FALSE(r.applied);
    ASSERT_EQ(r.failed_op, 3u);
    ASSERT_EQ(r.versions.size(), 4u);
    // The check ran after the erase of the same multi: it saw the key absent.
    EXPECT_EQ(r.versions[3], absent);
    EXPECT_EQ(r.versions[0], absent);
    EXPECT_EQ(get_ok("a"), std::nullopt);
    EXPECT_EQ(get_ok("b")->value, "b0");
    EXPECT_EQ(get_ok("b")->ver, vb);
    EXPECT_EQ(get_ok("c")->ver, vc);

    // A failed version check in the middle stops the multi too.
    auto mid = multi_ok({put{.key = "a", .value = "a1", .expected = absent},
                         put{.key = "b", .value = "b2", .expected = vb + 1000},
                         put{.key = "c", .value = "c2", .expected = vc}});
    EXPECT_FALSE(mid.applied);
    EXPECT_EQ(mid.failed_op, 1u);
    EXPECT_EQ(mid.versions[1], vb);
    EXPECT_EQ(get_ok("a"), std::nullopt);
    EXPECT_EQ(get_ok("c")->value, "c0");
}

TEST_P(StoreConformance, MultiAppliesAllWritesAndLaterOpsSeeEarlierOnes) {
    const version vb = create_ok("b", "b0");
    auto r = multi_ok(
        {put{.key = "a", .value = "a1", .expected = absent},
         check{.key = "a", .expected = any_version}, put{.key = "b", .value = "b1", .expected = vb},
         put{.key = "t", .value = "tmp", .expected = absent},
         erase{.key = "t", .expected = any_version}, check{.key = "t", .expected = absent}});
    ASSERT_TRUE(r.applied);
    EXPECT_FALSE(r.failed_op);
    ASSERT_EQ(r.versions.size(), 6u);
    EXPECT_EQ(r.versions[1], r.versions[0]);
    EXPECT_EQ(get_ok("a")->ver, r.versions[0]);
    EXPECT_EQ(get_ok("b")->ver, r.versions[2]);
    EXPECT_EQ(get_ok("b")->value, "b1");
    EXPECT_EQ(r.versions[4], absent);
    EXPECT_EQ(get_ok("t"), std::nullopt);
    // Two writes in one multi get distinct versions.
    EXPECT_NE(r.versions[0], r.versions[2]);
}

TEST_P(StoreConformance, MalformedRequestsAreErrorsAndApplyNothing) {
    auto expect_invalid = [&](std::vector<op> ops) {
        auto r = multi_sync(s(), std::move(ops));
        ASSERT_FALSE(r.has_value());
        EXPECT_EQ(r.error(), errc::invalid_argument);
    };
    expect_invalid({});
    expect_invalid({put{.key = "ok", .value = "x"}, put{.key = "", .value = "x"}});
    expect_invalid({put{.key = "ok", .value = std::string(max_value_size + 1, 'v')}});
    expect_invalid({check{.key = std::string(max_key_size + 1, 'k')}});
    expect_invalid(std::vector<op>(max_multi_ops + 1, check{.key = "k", .expected = absent}));
    EXPECT_EQ(get_ok("ok"), std::nullopt);

    auto g = get_sync(s(), "");
    ASSERT_FALSE(g);
    EXPECT_EQ(g.error(), errc::invalid_argument);
    auto sess = open_session_sync(s(), 0ms);
    ASSERT_FALSE(sess);
    EXPECT_EQ(sess.error(), errc::invalid_argument);

    // The limits themselves are accepted.
    auto big = create_sync(s(), std::string(max_key_size, 'k'), std::string(max_value_size, 'v'));
    ASSERT_TRUE(big);
    EXPECT_TRUE(big->applied);
    EXPECT_EQ(get_ok(std::string(max_key_size, 'k'))->value.size(), max_value_size);
}

TEST_P(StoreConformance, ListHonoursPrefixBoundariesAndSortsBytewise) {
    const std::vector<std::string> keys = {
        "a",        "a/", "a/b", "a/b/c",  "a/c",
        "a0",       "a.", "b/x", "a/\xff", std::string("a/\0z", 4),
        "\xff\xff", "A/b"};
    for (const auto& k : keys) {
        create_ok(k, fmt::format("v:{}", k));
    }
    const std::vector<std::string> under_a = {
        "a/", std::string("a/\0z", 4), "a/b", "a/b/c", "a/c", "a/\xff"};
    EXPECT_EQ(keys_of("a/"), under_a);
    EXPECT_EQ(keys_of("a/b"), (std::vector<std::string>{"a/b", "a/b/c"}));
    EXPECT_EQ(keys_of("a/b/"), (std::vector<std::string>{"a/b/c"}));
    EXPECT_EQ(keys_of("a/\xff"), (std::vector<std::string>{"a/\xff"}));
    EXPECT_EQ(keys_of("\xff"), (std::vector<std::string>{"\xff\xff"}));
    EXPECT_EQ(keys_of("zz"), std::vector<std::string>{});
    EXPECT_EQ(keys_of("A"), (std::vector<std::string>{"A/b"}));

    std::vector<std::string> all = keys;
    std::sort(all.begin(), all.end());  // char_traits<char> compares as unsigned bytes
    EXPECT_EQ(keys_of(""), all);        // and nothing of the store's own bookkeeping

    auto listed = list_sync(s(), "a/b");
    ASSERT_TRUE(listed);
    ASSERT_EQ(listed->size(), 2u);
    EXPECT_EQ((*listed)[0].rec.value, "v:a/b");
    EXPECT_EQ((*listed)[0].rec, *get_ok("a/b"));
}

TEST_P(StoreConformance, CompletionsRunOnTheStoreThreadInSubmissionOrder) {
    const auto caller = std::this_thread::get_id();
    std::promise<void> done;
    std::mutex mu;
    std::vector<int> order;
    std::atomic<bool> off_caller_thread{true};
    auto note = [&](int i) {
        if (std::this_thread::get_id() == caller || !s().is_callback_thread()) {
            off_caller_thread = false;
        }
        const std::lock_guard lock(mu);
        order.push_back(i);
    };
    // Submitted without waiting: the get must see the put before it (FIFO per thread).
    s().create("fifo", "1", no_session, [&](result<cas_outcome> r) {
        EXPECT_TRUE(r && r->applied);
        note(0);
    });
    s().get("fifo", [&](result<std::optional<record>> r) {
        ASSERT_TRUE(r);
        EXPECT_TRUE(r->has_value());
        EXPECT_EQ((*r)->value, "1");
        note(1);
    });
    s().compare_and_set("fifo", absent, "2", [&](result<cas_outcome> r) {
        EXPECT_TRUE(r && !r->applied);
        note(2);
        done.set_value();
    });
    done.get_future().wait();
    EXPECT_TRUE(off_caller_thread);
    EXPECT_FALSE(s().is_callback_thread());
    EXPECT_EQ(order, (std::vector<int>{0, 1, 2}));
}

TEST_P(StoreConformance, WatchDeliversMatchingEventsInCommitOrderBeforeTheCompletion) {
    event_log log;
    auto handle = s().watch("w/", log.callback());
    const version v1 = create_ok("w/a", "1");
    create_ok("x/other", "ignored");
    create_ok("w", "ignored: prefix is w/");
    auto cas = cas_sync(s(), "w/a", v1, "2");
    ASSERT_TRUE(cas && cas->applied);
    // A write's events are delivered before its own completion.
    std::promise<std::size_t> seen_at_completion;
    s().remove("w/a", cas->current, [&](result<cas_outcome> r) {
        EXPECT_TRUE(r && r->applied);
        seen_at_completion.set_value(log.size());
    });
    EXPECT_EQ(seen_at_completion.get_future().get(), 3u);
    auto events = log.events();
    ASSERT_EQ(events.size(), 3u);
    EXPECT_EQ(events[0], (watch_event{.key = "w/a", .kind = event_kind::put, .ver = v1}));
    EXPECT_EQ(events[1], (watch_event{.key = "w/a", .kind = event_kind::put, .ver = cas->current}));
    EXPECT_EQ(events[2].key, "w/a");
    EXPECT_EQ(events[2].kind, event_kind::erase);
    EXPECT_NE(events[2].ver, cas->current);

    // A multi's events come in op order; a failed multi produces none.
    auto m = multi_ok({put{.key = "w/m2", .value = "x"}, put{.key = "w/m1", .value = "y"}});
    ASSERT_TRUE(m.applied);
    auto failed = multi_ok({put{.key = "w/m3", .value = "x"}, check{.key = "w/m1"}});
    EXPECT_FALSE(failed.applied);
    create_ok("w/sync", "z");  // completes after every earlier event was delivered
    events = log.events();
    ASSERT_EQ(events.size(), 6u);
    EXPECT_EQ(events[3].key, "w/m2");
    EXPECT_EQ(events[3].ver, m.versions[0]);
    EXPECT_EQ(events[4].key, "w/m1");
    EXPECT_EQ(events[5].key, "w/sync");
    EXPECT_TRUE(log.errors().empty());
}

TEST_P(StoreConformance, CancelledWatchIsNeverCalledAgain) {
    event_log kept;
    event_log cancelled;
    auto keep = s().watch("c/", kept.callback());
    auto gone = s().watch("c/", cancelled.callback());
    create_ok("c/1", "x");
    gone.cancel();
    EXPECT_FALSE(gone.active());
    create_ok("c/2", "x");
    { auto scoped = s().watch("c/", cancelled.callback()); }  // destroyed at once
    create_ok("c/3", "x");
    EXPECT_EQ(kept.size(), 3u);
    EXPECT_EQ(cancelled.size(), 1u);

    // A watch may cancel itself from inside its own callback.
    std::atomic<int> calls{0};
    watch_handle self;
    std::promise<void> installed;
    auto installed_f = installed.get_future().share();
    self = s().watch("self/", [&](const result<watch_event>&) {
        installed_f.wait();
        ++calls;
        self.cancel();
    });
    installed.set_value();
    create_ok("self/1", "x");
    create_ok("self/2", "x");
    EXPECT_EQ(calls.load(), 1);
}

TEST_P(StoreConformance, ClosingASessionDeletesItsEphemeralKeys) {
    event_log log;
    auto handle = s().watch("s/", log.callback());
    const session_id sid = open_session_ok(30s);
    const version ve = create_ok("s/eph", "mine", sid);
    create_ok("s/persistent", "stays");
    EXPECT_EQ(get_ok("s/eph")->owner, sid);

    // A put on an existing key keeps the owner it was created with (as ZooKeeper's setData).
    auto upd = cas_sync(s(), "s/eph", ve, "still mine");
    ASSERT_TRUE(upd && upd->applied);
    EXPECT_EQ(get_ok("s/eph")->owner, sid);
    auto named =
        multi_ok({put{.key = "s/persistent", .value = "v", .expected = any_version, .owner = sid}});
    ASSERT_TRUE(named.applied);
    EXPECT_EQ(get_ok("s/persistent")->owner, no_session);

    ASSERT_TRUE(close_session_sync(s(), sid));
    EXPECT_EQ(get_ok("s/eph"), std::nullopt);
    EXPECT_TRUE(get_ok("s/persistent"));
    auto events = log.events();
    ASSERT_FALSE(events.empty());
    EXPECT_EQ(events.back().key, "s/eph");
    EXPECT_EQ(events.back().kind, event_kind::erase);

    auto ka = keep_alive_sync(s(), sid);
    ASSERT_FALSE(ka);
    EXPECT_EQ(ka.error(), errc::session_expired);
    auto again = close_session_sync(s(), sid);
    ASSERT_FALSE(again);
    EXPECT_EQ(again.error(), errc::session_expired);
    // A put that names a dead owner is an error and applies nothing.
    auto dead = multi_sync(
        s(), {put{.key = "s/new", .value = "x"}, put{.key = "s/eph", .value = "x", .owner = sid}});
    ASSERT_FALSE(dead);
    EXPECT_EQ(dead.error(), errc::session_expired);
    EXPECT_EQ(get_ok("s/new"), std::nullopt);
}

TEST_P(StoreConformance, ExpiredSessionLosesItsKeysAndFencesDelayedWrites) {
    event_log log;
    auto handle = s().watch("owner/", log.callback());
    const session_id sid = open_session_ok(100ms);
    create_ok("owner/lock", "broker-1", sid);
    const version root = create_ok("root", "state-0");

    // While alive, the owner's fenced CAS applies.
    auto live = multi_ok(
        {check_session{.session = sid}, put{.key = "root", .value = "state-1", .expected = root}});
    ASSERT_TRUE(live.applied);
    const version root1 = live.versions[1];

    // No keep-alive: the session expires and its ephemeral key is deleted durably.
    ASSERT_TRUE(eventually([&] { return log.size() == 2; }));
    EXPECT_EQ(log.events()[1].key, "owner/lock");
    EXPECT_EQ(log.events()[1].kind, event_kind::erase);
    EXPECT_EQ(get_ok("owner/lock"), std::nullopt);

    // The crashed owner's delayed CAS: its expected version still matches, but the session
    // check fences it.
    auto fenced = multi_ok(
        {check_session{.session = sid}, put{.key = "root", .value = "late", .expected = root1}});
    EXPECT_FALSE(fenced.applied);
    EXPECT_EQ(fenced.failed_op, 0u);
    EXPECT_EQ(get_ok("root")->value, "state-1");
    auto ka = keep_alive_sync(s(), sid);
    ASSERT_FALSE(ka);
    EXPECT_EQ(ka.error(), errc::session_expired);
}

TEST_P(StoreConformance, KeepAliveHoldsASessionOpen) {
    const session_id sid = open_session_ok(150ms);
    create_ok("held", "x", sid);
    const auto until = std::chrono::steady_clock::now() + 600ms;
    while (std::chrono::steady_clock::now() < until) {
        ASSERT_TRUE(keep_alive_sync(s(), sid));
        std::this_thread::sleep_for(30ms);
    }
    EXPECT_TRUE(get_ok("held"));
    auto check = multi_ok({check_session{.session = sid}});
    EXPECT_TRUE(check.applied);
    EXPECT_TRUE(eventually([&] { return !get_ok("held").has_value(); }));
}

TEST_P(StoreConformance, SessionIdsAreNeverReused) {
    std::set<session_id> ids;
    for (int i = 0; i < 5; ++i) {
        const session_id sid = open_session_ok(10s);
        EXPECT_NE(sid, no_session);
        EXPECT_TRUE(ids.insert(sid).second);
        if (i % 2 == 0) {
            ASSERT_TRUE(close_session_sync(s(), sid));
        }
    }
    if (holder_.durable()) {
        holder_.reopen();
        for (int i = 0; i < 3; ++i) {
            EXPECT_TRUE(ids.insert(open_session_ok(10s)).second);
        }
    }
    // A session id that never existed is not alive.
    auto unknown = multi_ok({check_session{.session = session_id{999999}}});
    EXPECT_FALSE(unknown.applied);
    EXPECT_FALSE(multi_ok({check_session{.session = no_session}}).applied);
}

TEST_P(StoreConformance, ConcurrentCasHasExactlyOneWinnerPerVersion) {
    constexpr int threads = 8;
    const int rounds = holder_.durable() ? 15 : 60;
    version v = create_ok("race", "0");
    for (int round = 0; round < rounds; ++round) {
        std::barrier sync_point(threads);
        std::atomic<int> winners{0};
        std::vector<std::thread> ts;
        ts.reserve(threads);
        for (int t = 0; t < threads; ++t) {
            ts.emplace_back([&, t] {
                sync_point.arrive_and_wait();
                auto r = cas_sync(s(), "race", v, fmt::format("t{}", t));
                ASSERT_TRUE(r.has_value()) << r.error().message();
                if (r->applied) {
                    ++winners;
                }
            });
        }
        for (auto& th : ts) {
            th.join();
        }
        ASSERT_EQ(winners.load(), 1) << "round " << round;
        v = get_ok("race")->ver;
    }

    // Free-running increments: no lost update, no version won twice.
    const int per_thread = holder_.durable() ? 15 : 100;
    std::mutex mu;
    std::set<version> won;
    std::vector<std::thread> ts;
    auto base = cas_sync(s(), "counter", absent, "0");
    ASSERT_TRUE(base && base->applied);
    ts.reserve(threads);
    for (int t = 0; t < threads; ++t) {
        ts.emplace_back([&] {
            for (int done = 0; done < per_thread;) {
                auto cur = get_sync(s(), "counter");
                ASSERT_TRUE(cur && *cur);
                const auto next = std::to_string(std::stoll((*cur)->value) + 1);
                auto r = cas_sync(s(), "counter", (*cur)->ver, next);
                ASSERT_TRUE(r);
                if (r->applied) {
                    ++done;
                    const std::lock_guard lock(mu);
                    EXPECT_TRUE(won.insert((*cur)->ver).second);
                }
            }
        });
    }
    for (auto& th : ts) {
        th.join();
    }
    EXPECT_EQ(get_ok("counter")->value, std::to_string(threads * per_thread));
    EXPECT_EQ(won.size(), static_cast<std::size_t>(threads * per_thread));
}

TEST_P(StoreConformance, ReopenKeepsValuesAndDropsEphemeralKeys) {
    if (!holder_.durable()) {
        GTEST_SKIP() << "memory_store keeps nothing across instances";
    }
    const session_id sid = open_session_ok(30s);
    const version vp = create_ok("p/root", "persistent");
    create_ok("p/eph", "ephemeral", sid);
    const version big = create_ok("p/big", std::string(100000, 'b'));
    holder_.reopen();
    auto rec = get_ok("p/root");
    ASSERT_TRUE(rec);
    EXPECT_EQ(rec->value, "persistent");
    EXPECT_EQ(rec->ver, vp);
    EXPECT_EQ(get_ok("p/big")->value.size(), 100000u);
    EXPECT_EQ(get_ok("p/eph"), std::nullopt);  // its owner died with the old instance
    EXPECT_EQ(keys_of("p/"), (std::vector<std::string>{"p/big", "p/root"}));
    // The revision survives: a new write never reuses an old version (no ABA across restart).
    const version after = create_ok("p/eph", "new");
    EXPECT_GT(after, big);
    auto old = cas_sync(s(), "p/root", vp, "cas after reopen");
    ASSERT_TRUE(old);
    EXPECT_TRUE(old->applied);
    // The old session is gone too.
    EXPECT_FALSE(multi_ok({check_session{.session = sid}}).applied);
}

TEST_P(StoreConformance, DestroyingTheStoreCompletesEverythingAndEndsWatches) {
    event_log log;
    auto handle = s().watch("", log.callback());
    std::atomic<int> completed{0};
    for (int i = 0; i < 50; ++i) {
        s().create(fmt::format("d/{}", i), "x", no_session, [&](result<cas_outcome> r) {
            EXPECT_TRUE(r.has_value() || r.error() == errc::closed);
            ++completed;
        });
    }
    holder_.close();
    EXPECT_EQ(completed.load(), 50);
    ASSERT_EQ(log.errors().size(), 1u);
    EXPECT_EQ(log.errors()[0], errc::closed);
}

TEST_P(StoreConformance, UnknownOutcomeMeansTheCallerMustReRead) {
    // fault_store injects the remote-store failure on every backend.
    fault_store faults(s());
    event_log log;
    auto handle = faults.watch("u/", log.callback());
    const version v = create_ok("u/k", "0");

    // Lost reply: applied, but the writer cannot know.
    faults.fail_multis(/*applied=*/true);
    auto lost = cas_sync(faults, "u/k", v, "1");
    ASSERT_FALSE(lost);
    EXPECT_EQ(lost.error(), errc::unknown_outcome);
    auto reread = get_ok("u/k");
    EXPECT_EQ(reread->value, "1");
    EXPECT_EQ(log.size(), 2u);  // the change happened, so watchers hear of it

    // Not applied: nothing changed and no event fires.
    faults.fail_multis(/*applied=*/false);
    auto failed = cas_sync(faults, "u/k", reread->ver, "2");
    ASSERT_FALSE(failed);
    EXPECT_EQ(failed.error(), errc::unknown_outcome);
    EXPECT_EQ(get_ok("u/k")->value, "1");
    EXPECT_EQ(get_ok("u/k")->ver, reread->ver);
    EXPECT_EQ(log.size(), 2u);
    // The store keeps working.
    auto next = cas_sync(faults, "u/k", reread->ver, "3");
    ASSERT_TRUE(next && next->applied);
}

INSTANTIATE_TEST_SUITE_P(meta,
                         StoreConformance,
                         ::testing::Values(backend_kind::memory,
                                           backend_kind::rocksdb,
                                           backend_kind::zookeeper),
                         backend_name);

}  // namespace
}  // namespace nereus::meta::test
