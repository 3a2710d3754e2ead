// zk_store specifics, against the real test server: a connection loss during a write is an
// unknown outcome, two stores (two processes' worth of ZooKeeper sessions) share one root, a
// session's fence holds across stores, and writes racing from two stores stay exact.

#include "nereus/meta/zk_store.h"

#include "nereus/meta/errc.h"
#include "nereus/meta/sync.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "unit/meta/support/backends.h"
#include <atomic>
#include <barrier>
#include <csignal>
#include <functional>
#include <future>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace nereus::meta::test {
namespace {

using namespace std::chrono_literals;

std::string fresh_root() {
    static std::atomic<int> next{0};
    return fmt::format("/nereus-zk-test/{}-{}", ::getpid(), ++next);
}

std::unique_ptr<zk_store> open_zk(const std::string& root,
                                  std::chrono::milliseconds session_timeout = 4000ms,
                                  std::function<void()> before_multi = {}) {
    auto& server = zk_server::shared();
    EXPECT_TRUE(server.ok()) << "the ZooKeeper test server is unavailable: " << server.error();
    if (!server.ok()) {
        return nullptr;
    }
    auto s = zk_store::open(zk_store_options{.hosts = server.hosts(),
                                             .root = root,
                                             .session_timeout = session_timeout,
                                             .before_multi = std::move(before_multi)});
    EXPECT_TRUE(s.has_value()) << s.error().message();
    return s ? std::move(*s) : nullptr;
}

// Reads `key` until a read succeeds and finds it (bounded: 15 s); nullopt if none did.
std::optional<record> read_when_available(zk_store& s, const std::string& key) {
    std::optional<record> rec;
    eventually(
        [&] {
            auto g = get_sync(s, key);
            if (g && *g) {
                rec = **g;
                return true;
            }
            return false;
        },
        15s);
    return rec;
}

TEST(ZkStore, ParsesUrls) {
    auto o = zk_store::parse_url("zk://127.0.0.1:2181,127.0.0.1:2182/a/b?session_timeout_ms=900");
    ASSERT_TRUE(o);
    EXPECT_EQ(o->hosts, "127.0.0.1:2181,127.0.0.1:2182");
    EXPECT_EQ(o->root, "/a/b");
    EXPECT_EQ(o->session_timeout, 900ms);
    auto d = zk_store::parse_url("zk://h:1");
    ASSERT_TRUE(d);
    EXPECT_EQ(d->root, "/nereus");
    for (const char* bad : {"zk://", "zk:///x", "zk://h:1/a/", "zk://h:1//a", "rocksdb:/x",
                            "zk://h:1/a?session_timeout_ms=x", "zk://h:1/a?other=1"}) {
        EXPECT_FALSE(zk_store::parse_url(bad)) << bad;
    }
}

TEST(ZkStore, TwoStoresShareKeysVersionsAndOwners) {
    const std::string root = fresh_root();
    auto a = open_zk(root);
    auto b = open_zk(root);
    ASSERT_TRUE(a && b);
    const auto sid = open_session_sync(*a, 30s);
    ASSERT_TRUE(sid);
    auto created = create_sync(*a, "owner/t1", "broker-a", *sid);
    ASSERT_TRUE(created && created->applied);
    auto seen = get_sync(*b, "owner/t1");
    ASSERT_TRUE(seen && *seen);
    EXPECT_EQ((*seen)->value, "broker-a");
    EXPECT_EQ((*seen)->ver, created->current);
    EXPECT_EQ((*seen)->owner, *sid);
    // B cannot take it while A's session lives; B cannot create an ephemeral for A's session.
    auto taken = create_sync(*b, "owner/t1", "broker-b");
    ASSERT_TRUE(taken);
    EXPECT_FALSE(taken->applied);
    auto foreign = create_sync(*b, "owner/t2", "x", *sid);
    ASSERT_FALSE(foreign);
    EXPECT_EQ(foreign.error(), errc::session_expired);
}

TEST(ZkStore, AFencedWriteFailsInAnyStoreOnceItsSessionIsGone) {
    const std::string root = fresh_root();
    auto a = open_zk(root);
    auto b = open_zk(root);
    ASSERT_TRUE(a && b);
    const auto sid = open_session_sync(*a, 30s);
    ASSERT_TRUE(sid);
    auto rootv = create_sync(*b, "stream/root", "s0");
    ASSERT_TRUE(rootv && rootv->applied);
    // While A's session lives, a write fenced by it applies, from either store.
    auto live =
        multi_sync(*b, {check_session{.session = *sid},
                        put{.key = "stream/root", .value = "s1", .expected = rootv->current}});
    ASSERT_TRUE(live && live->applied);
    // A dies (its store closes every session); B still holds the matching version.
    a.reset();
    auto late =
        multi_sync(*b, {check_session{.session = *sid},
                        put{.key = "stream/root", .value = "late", .expected = live->versions[1]}});
    ASSERT_TRUE(late);
    EXPECT_FALSE(late->applied);
    EXPECT_EQ(late->failed_op, 0U);
    EXPECT_EQ((*get_sync(*b, "stream/root"))->value, "s1");
}

TEST(ZkStore, RacingStoresHaveExactlyOneWinnerAndLoseNoUpdate) {
    const std::string root = fresh_root();
    std::vector<std::unique_ptr<zk_store>> stores;
    for (int i = 0; i < 3; ++i) {
        stores.push_back(open_zk(root));
        ASSERT_TRUE(stores.back());
    }
    // Exactly one of three stores creates the (ephemeral) ownership key.
    std::vector<session_id> sids;
    for (auto& s : stores) {
        auto sid = open_session_sync(*s, 30s);
        ASSERT_TRUE(sid);
        sids.push_back(*sid);
    }
    std::barrier sync_point(3);
    std::atomic<int> winners{0};
    std::vector<std::thread> ts;
    for (int i = 0; i < 3; ++i) {
        ts.emplace_back([&, i] {
            sync_point.arrive_and_wait();
            auto r = create_sync(*stores[i], "own/topic", fmt::format("b{}", i), sids[i]);
            ASSERT_TRUE(r.has_value()) << r.error().message();
            winners += r->applied ? 1 : 0;
        });
    }
    for (auto& t : ts) {
        t.join();
    }
    EXPECT_EQ(winners.load(), 1);

    // Free-running read-modify-CAS increments from three stores (other ZooKeeper sessions, so
    // the guarded zoo_multi really races): no lost update.
    ASSERT_TRUE(create_sync(*stores[0], "counter", "0"));
    constexpr int per_store = 20;
    ts.clear();
    for (int i = 0; i < 3; ++i) {
        ts.emplace_back([&, i] {
            for (int done = 0; done < per_store;) {
                auto cur = get_sync(*stores[i], "counter");
                ASSERT_TRUE(cur && *cur);
                auto r = multi_sync(*stores[i],
                                    {check{.key = "own/topic", .expected = any_version},
                                     put{.key = "counter",
                                         .value = std::to_string(std::stoi((*cur)->value) + 1),
                                         .expected = (*cur)->ver}});
                ASSERT_TRUE(r.has_value()) << r.error().message();
                done += r->applied ? 1 : 0;
            }
        });
    }
    for (auto& t : ts) {
        t.join();
    }
    EXPECT_EQ((*get_sync(*stores[1], "counter"))->value, std::to_string(3 * per_store));
}

// A real connection loss: the server is frozen (SIGSTOP) just before the CAS's zoo_multi is
// sent. The client times out (2/3 of the session timeout) and the store must say
// unknown_outcome, not guess.
TEST(ZkStore, ConnectionLossDuringAWriteIsAnUnknownOutcome) {
    auto& server = zk_server::shared();
    ASSERT_TRUE(server.ok()) << server.error();
    std::atomic<bool> freeze{false};
    auto s = open_zk(fresh_root(), 6000ms, [&] {
        if (freeze.exchange(false)) {
            ::kill(server.pid(), SIGSTOP);
        }
    });
    ASSERT_TRUE(s);
    auto v = create_sync(*s, "k", "0");
    ASSERT_TRUE(v && v->applied);

    freeze = true;
    std::promise<result<cas_outcome>> done;
    s->compare_and_set("k", v->current, "1", [&](result<cas_outcome> r) { done.set_value(r); });
    auto f = done.get_future();
    const bool completed = f.wait_for(15s) == std::future_status::ready;
    ::kill(server.pid(), SIGCONT);
    ASSERT_TRUE(completed);
    auto r = f.get();
    ASSERT_FALSE(r.has_value());
    EXPECT_EQ(r.error(), errc::unknown_outcome);

    // The caller resolves it by re-reading: the value is one of the two, with its version. (On
    // a loaded machine the store's session may have expired while the server was stopped: the
    // store then reads through a new one.)
    const std::optional<record> rec = read_when_available(*s, "k");
    ASSERT_TRUE(rec);
    EXPECT_TRUE(rec->value == "0" || rec->value == "1") << rec->value;
    EXPECT_EQ(rec->value == "0", rec->ver == v->current);
    auto next = cas_sync(*s, "k", rec->ver, "2");
    ASSERT_TRUE(next && next->applied);
}

// The store's own session expires (a stall past its timeout): its watches end with
// unavailable, and the store carries on with a new session: reads, writes and new watches work.
TEST(ZkStore, TheStoresOwnSessionExpiringIsRecoveredFrom) {
    auto s = open_zk(fresh_root());
    ASSERT_TRUE(s);
    auto v = create_sync(*s, "k", "0");
    ASSERT_TRUE(v && v->applied);
    std::promise<std::error_code> ended;
    auto handle = s->watch("k", [&](const result<watch_event>& ev) {
        if (!ev.has_value()) {
            ended.set_value(ev.error());
        }
    });
    auto ended_f = ended.get_future();
    ASSERT_TRUE(s->expire_own_session_for_test());

    // The store hears of the expiry on its own (an event), or at the latest on the next request.
    const std::optional<record> rec = read_when_available(*s, "k");
    ASSERT_TRUE(rec);
    EXPECT_EQ(rec->value, "0");
    EXPECT_EQ(rec->ver, v->current);
    ASSERT_EQ(ended_f.wait_for(15s), std::future_status::ready);
    EXPECT_EQ(ended_f.get(), make_error_code(errc::unavailable));

    std::mutex mu;
    std::vector<watch_event> events;
    auto again = s->watch("k", [&](const result<watch_event>& ev) {
        ASSERT_TRUE(ev.has_value()) << ev.error().message();
        const std::lock_guard lock(mu);
        events.push_back(*ev);
    });
    auto next = cas_sync(*s, "k", v->current, "1");
    ASSERT_TRUE(next && next->applied);
    ASSERT_TRUE(eventually(
        [&] {
            const std::lock_guard lock(mu);
            return !events.empty();
        },
        15s));
    const std::lock_guard lock(mu);
    EXPECT_EQ(events.front().kind, event_kind::put);
    EXPECT_EQ(events.front().ver, next->current);
}

// Another process's writes, and the end of its session, reach this store's watchers: each
// reported version is one the writer produced, in order, and a deletion is reported once.
TEST(ZkStore, WatchesReportChangesMadeByOtherStores) {
    const std::string root = fresh_root();
    auto a = open_zk(root);
    auto b = open_zk(root);
    ASSERT_TRUE(a && b);
    std::mutex mu;
    std::vector<watch_event> events;
    auto handle = a->watch("w/", [&](const result<watch_event>& ev) {
        ASSERT_TRUE(ev.has_value()) << ev.error().message();
        const std::lock_guard lock(mu);
        events.push_back(*ev);
    });
    auto count = [&] {
        const std::lock_guard lock(mu);
        return events.size();
    };
    // A list through A after watch() returns orders the arming before B's writes.
    ASSERT_TRUE(list_sync(*a, "w/"));

    auto v1 = create_sync(*b, "w/x", "1");
    ASSERT_TRUE(v1 && v1->applied);
    ASSERT_TRUE(eventually([&] { return count() >= 1; }));
    auto v2 = cas_sync(*b, "w/x", v1->current, "2");
    ASSERT_TRUE(v2 && v2->applied);
    ASSERT_TRUE(eventually([&] { return count() >= 2; }));
    auto gone = remove_sync(*b, "w/x", v2->current);
    ASSERT_TRUE(gone && gone->applied);
    ASSERT_TRUE(eventually([&] { return count() >= 3; }));
    {
        const std::lock_guard lock(mu);
        ASSERT_EQ(events.size(), 3U);
        EXPECT_EQ(events[0],
                  (watch_event{.key = "w/x", .kind = event_kind::put, .ver = v1->current}));
        EXPECT_EQ(events[1],
                  (watch_event{.key = "w/x", .kind = event_kind::put, .ver = v2->current}));
        EXPECT_EQ(events[2].kind, event_kind::erase);
        EXPECT_EQ(events[2].key, "w/x");
    }

    // B's owner session ends with B's process: A hears of the ephemeral key's deletion.
    const auto sid = open_session_sync(*b, 30s);
    ASSERT_TRUE(sid);
    auto lock_key = create_sync(*b, "w/owner", "b", *sid);
    ASSERT_TRUE(lock_key && lock_key->applied);
    ASSERT_TRUE(eventually([&] { return count() >= 4; }));
    b.reset();
    ASSERT_TRUE(eventually([&] { return count() >= 5; }));
    std::this_thread::sleep_for(200ms);  // nothing else arrives
    const std::lock_guard lock(mu);
    ASSERT_EQ(events.size(), 5U);
    EXPECT_EQ(events[3],
              (watch_event{.key = "w/owner", .kind = event_kind::put, .ver = lock_key->current}));
    EXPECT_EQ(events[4].key, "w/owner");
    EXPECT_EQ(events[4].kind, event_kind::erase);
}

}  // namespace
}  // namespace nereus::meta::test
