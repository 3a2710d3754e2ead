// The delivery API (event_subscriptions, host.h) against an in-process broker with the admin
// REST API: the barrier under concurrent writes, a lost ack reply, a crash between apply and
// ack, RESUME vs SNAPSHOT, expiry with STOP and RESNAPSHOT, trimmed/skipped history, a timeout
// that is not expiry, two processes sharing one identity, exclusive fenced ownership and the
// admitted payload format. doc/events.md.

#include "events_fixture.h"
#include <atomic>
#include <boost/json.hpp>
#include <set>
#include <thread>

namespace nereus::events::test {
namespace {

struct seen_delivery {
    delivery_kind kind;
    cursor at;
};

// Counts what apply_once did (exactly-once checks) around a real store.
class counting_projection final : public projection_repository {
public:
    explicit counting_projection(projection_repository& inner) : inner_(inner) {}
    bool durable() const override { return inner_.durable(); }
    result<void> replace_atomically(std::span<const cursor> b, std::span<const row> i) override {
        return inner_.replace_atomically(b, i);
    }
    result<apply_outcome> apply_once(const cursor& c,
                                     const operation& op,
                                     std::span<const std::byte> payload) override {
        auto r = inner_.apply_once(c, op, payload);
        if (r) {
            (*r == apply_outcome::applied ? applied_count : already)++;
        }
        return r;
    }
    result<std::optional<cursor>> applied_cursor(std::uint32_t p) const {
        return inner_.applied(p);
    }
    result<std::optional<cursor>> applied(std::uint32_t p) const override {
        return inner_.applied(p);
    }
    result<std::vector<row>> rows() const override { return inner_.rows(); }

    int applied_count = 0;
    int already = 0;

private:
    projection_repository& inner_;
};

// The projection handler, recording every delivery it is given and the barriers.
struct recorder {
    batch_handler inner;
    std::vector<seen_delivery> seen;
    std::vector<cursor> barriers;
    batch_handler handler() {
        return [this](const page& pg) {
            for (const auto& d : pg.events) {
                seen.push_back({d.kind, d.at});
            }
            if (pg.snapshot_complete) {
                barriers = pg.barriers;
            }
            return inner(pg);
        };
    }
};

run_options until_idle() {
    run_options o;
    o.poll_wait = 300ms;
    o.idle_polls = 2;
    return o;
}

TEST_F(EventsTest, BarrierUnderConcurrentWritesLosesAndDuplicatesNothing) {
    for (int i = 0; i < 40; ++i) {
        put("k" + std::to_string(i % 20), "v0-" + std::to_string(i));
    }
    put("k3", "");  // a tombstone before the snapshot
    std::atomic<bool> writer_done{false};
    std::vector<std::int64_t> written;
    struct joiner {
        std::thread t;
        ~joiner() {
            if (t.joinable()) {
                t.join();
            }
        }
    } writer;
    writer.t = std::thread([&] {
        for (int i = 0; i < 150; ++i) {
            const auto key = "k" + std::to_string((i * 7) % 25);
            written.push_back(put(key, i % 11 == 5 ? std::string() : "w-" + std::to_string(i)));
        }
        writer_done = true;
    });
    auto store = open_store("barrier");
    counting_projection counted(*store);
    recorder rec{projection_handler(counted)};
    auto a = process("A", make_policy(), store.get());
    ASSERT_TRUE(a);
    const auto h = rec.handler();
    bool finished = false;
    for (int round = 0; round < 200 && !finished; ++round) {
        const bool done_before = writer_done.load();
        auto r = run(*a, "orders-projection", h, until_idle());
        ASSERT_TRUE(r.has_value()) << r.error().message();
        finished = done_before;
    }
    writer.t.join();
    ASSERT_TRUE(finished);
    ASSERT_EQ(rec.barriers.size(), 1U);
    const auto barrier_entry = entry_of(rec.barriers[0].sequence);

    // The projection equals the source's final state.
    EXPECT_EQ(rows_of(*store), expected_);
    // Every write after the barrier is delivered exactly once as an EVENT; none before it.
    std::multiset<std::int64_t> event_entries;
    for (const auto& d : rec.seen) {
        if (d.kind == delivery_kind::event) {
            event_entries.insert(entry_of(d.at.sequence));
        } else {
            EXPECT_LE(entry_of(d.at.sequence), barrier_entry);
        }
    }
    std::multiset<std::int64_t> expected_events;
    for (auto e : written) {
        if (e > barrier_entry) {
            expected_events.insert(e);
        }
    }
    EXPECT_EQ(event_entries, expected_events);
    EXPECT_EQ(counted.already, 0);
    EXPECT_EQ(counted.applied_count, static_cast<int>(expected_events.size()));
    std::printf(
        "barrier at entry %lld; %zu writes during/after the snapshot, %zu after the barrier\n",
        static_cast<long long>(barrier_entry), written.size(), expected_events.size());
}

TEST_F(EventsTest, LostAckReplyIsConfirmedByRepeatingTheAckId) {
    for (int i = 0; i < 5; ++i) {
        put("k" + std::to_string(i), "v" + std::to_string(i));
    }
    auto store = open_store("lost");
    auto a = process("A", make_policy(), store.get());
    ASSERT_TRUE(a);
    ASSERT_TRUE(run(*a, "orders-projection", projection_handler(*store), until_idle()).has_value());
    put("k1", "x1");
    put("k2", "x2");
    put("k7", "x7");
    auto pg = a->poll("orders-projection", 128, in(20s));
    ASSERT_TRUE(pg.has_value()) << pg.error().message();
    ASSERT_EQ(pg->kind, delivery_kind::event);
    ASSERT_EQ(pg->events.size(), 3U);

    auto first = a->ack("ack-page-42", "orders-projection", pg->through, 30s, in(20s));
    ASSERT_TRUE(first.has_value()) << first.error().message();
    EXPECT_FALSE(first->repeated);
    // The reply is "lost": the same ack id is repeated and confirms the same cursor.
    auto again = a->ack("ack-page-42", "orders-projection", pg->through, 30s, in(20s));
    ASSERT_TRUE(again.has_value());
    EXPECT_TRUE(again->repeated);
    EXPECT_EQ(again->committed, pg->through);
    // Or the client reads the durable position.
    auto pos = a->position("orders-projection", in(20s));
    ASSERT_TRUE(pos.has_value());
    ASSERT_EQ(pos->committed.size(), 1U);
    EXPECT_EQ(pos->committed[0], pg->through);
    // Another process sees the same record (state lives in the broker, not in memory).
    auto b = process("B", make_policy(), store.get());
    auto from_b = b->ack("ack-page-42", "orders-projection", pg->through, 0ms, in(20s));
    ASSERT_TRUE(from_b.has_value());
    EXPECT_TRUE(from_b->repeated);
    EXPECT_EQ(from_b->committed, pg->through);
    // A new ack id behind the committed cursor, beyond anything delivered, or of another
    // epoch is refused.
    auto behind = a->ack("ack-other", "orders-projection", pg->through, 0ms, in(20s));
    EXPECT_EQ(behind.error(), make_error_code(errc::ack_behind_committed));
    cursor beyond = pg->through;
    beyond.sequence += 10 * sequence_stride;
    EXPECT_EQ(a->ack("ack-x", "orders-projection", beyond, 0ms, in(20s)).error(),
              make_error_code(errc::ack_beyond_delivered));
    cursor stale = pg->through;
    stale.epoch -= 1;
    EXPECT_EQ(a->ack("ack-y", "orders-projection", stale, 0ms, in(20s)).error(),
              make_error_code(errc::epoch_mismatch));
    // Nothing is redelivered.
    auto none = a->poll("orders-projection", 128, in(1500ms));
    ASSERT_TRUE(none.has_value());
    EXPECT_TRUE(none->empty());
}

TEST_F(EventsTest, CrashBetweenApplyAndAckIsAppliedOnce) {
    for (int i = 0; i < 10; ++i) {
        put("k" + std::to_string(i), "v" + std::to_string(i));
    }
    {
        auto store = open_store("crash");
        auto a = process("A", make_policy(), store.get());
        ASSERT_TRUE(
            run(*a, "orders-projection", projection_handler(*store), until_idle()).has_value());
        for (int i = 0; i < 5; ++i) {
            put("k" + std::to_string(i), "after-" + std::to_string(i));
        }
        // A applies a page and "dies" before its ack: no ack, no release.
        auto pg = a->poll("orders-projection", 128, in(20s));
        ASSERT_TRUE(pg.has_value());
        ASSERT_EQ(pg->events.size(), 5U);
        auto h = projection_handler(*store);
        ASSERT_TRUE(h(*pg).get().has_value());
    }
    // The replacement reopens the durable store and RESUMEs: it receives the same cursors
    // again (A's lease expires) and apply_once recognises them.
    auto store = open_store("crash");
    counting_projection counted(*store);
    recorder rec{projection_handler(counted)};
    auto b = process("B", make_policy(), store.get());
    auto pos = b->position("orders-projection", in(20s));
    ASSERT_TRUE(pos.has_value());
    EXPECT_EQ(pos->epoch, 1U);  // RESUME: no new epoch
    ASSERT_TRUE(run(*b, "orders-projection", rec.handler(), until_idle()).has_value());
    EXPECT_EQ(counted.already, 5);
    EXPECT_EQ(counted.applied_count, 0);
    EXPECT_EQ(rows_of(*store), expected_);
    auto after = b->position("orders-projection", in(20s));
    ASSERT_TRUE(after.has_value());
    ASSERT_TRUE(after->committed[0].has_value());
    EXPECT_EQ(after->committed[0], counted.applied_cursor(0).value());
}

TEST_F(EventsTest, ResumeContinuesAndSnapshotRebuildsAtANewEpoch) {
    for (int i = 0; i < 10; ++i) {
        put("k" + std::to_string(i), "v" + std::to_string(i));
    }
    std::uint64_t epoch = 0;
    {
        auto store = open_store("resume");
        auto a = process("A", make_policy(), store.get());
        ASSERT_TRUE(
            run(*a, "orders-projection", projection_handler(*store), until_idle()).has_value());
        epoch = a->position("orders-projection", in(20s))->epoch;
        ASSERT_TRUE(a->release("orders-projection", in(20s)).has_value());
    }
    put("k1", "r1");
    put("k11", "r11");
    {
        auto store = open_store("resume");
        auto b = process("B", make_policy(restart_policy::resume), store.get());
        EXPECT_EQ(b->position("orders-projection", in(20s))->epoch, epoch);
        auto pg = b->poll("orders-projection", 128, in(20s));
        ASSERT_TRUE(pg.has_value());
        EXPECT_EQ(pg->kind, delivery_kind::event);
        EXPECT_EQ(pg->events.size(), 2U);
        ASSERT_TRUE(projection_handler(*store)(*pg).get().has_value());
        ASSERT_TRUE(b->ack("resume-1", "orders-projection", pg->through, 0ms, in(20s)).has_value());
        EXPECT_EQ(rows_of(*store), expected_);
        ASSERT_TRUE(b->release("orders-projection", in(20s)).has_value());
    }
    {
        // SNAPSHOT restart: a fresh snapshot at a new epoch, delivered first.
        memory_projection mem;
        auto c = process("C", make_policy(restart_policy::snapshot), &mem);
        EXPECT_EQ(c->position("orders-projection", in(20s))->epoch, epoch + 1);
        auto pg = c->poll("orders-projection", 4, in(20s));
        ASSERT_TRUE(pg.has_value());
        EXPECT_EQ(pg->kind, delivery_kind::snapshot);
        EXPECT_FALSE(pg->resnapshot);
        EXPECT_EQ(pg->epoch, epoch + 1);
        ASSERT_TRUE(c->release("orders-projection", in(20s)).has_value());
    }
    {
        // RESUME with a store that is not durable is refused.
        memory_projection mem;
        result<void> reg;
        auto d = process("D", make_policy(restart_policy::resume), &mem, &reg);
        ASSERT_FALSE(reg.has_value());
        EXPECT_EQ(reg.error(), make_error_code(errc::resume_needs_durable_store));
    }
}

TEST_F(EventsTest, ExpiryWithStopIsATypedErrorAndNeverASilentReset) {
    for (int i = 0; i < 6; ++i) {
        put("k" + std::to_string(i), "v" + std::to_string(i));
    }
    auto store = open_store("stop");
    auto a = process("A", make_policy(restart_policy::resume, expiry_policy::stop), store.get());
    ASSERT_TRUE(run(*a, "orders-projection", projection_handler(*store), until_idle()).has_value());
    const auto before = a->position("orders-projection", in(20s)).value();
    put("k1", "lost-1");
    put("k2", "lost-2");
    // An operator skips the subscription's backlog: history the projection never saw is gone.
    ASSERT_EQ(admin_request("POST",
                            "/admin/v2/persistent/public/default/orders/subscription/"
                            "events.orders-projection/skip_all"),
              204U);
    for (int i = 0; i < 2; ++i) {
        auto pg = a->poll("orders-projection", 128, in(20s));
        ASSERT_FALSE(pg.has_value());
        EXPECT_EQ(pg.error(), make_error_code(errc::expired));
    }
    auto after = a->position("orders-projection", in(20s));
    ASSERT_TRUE(after.has_value());
    EXPECT_EQ(after->epoch, before.epoch);
    EXPECT_EQ(after->committed, before.committed);
}

TEST_F(EventsTest, ExpiryWithResnapshotStartsAMarkedEpoch) {
    for (int i = 0; i < 6; ++i) {
        put("k" + std::to_string(i), "v" + std::to_string(i));
    }
    auto store = open_store("resnap");
    auto a =
        process("A", make_policy(restart_policy::resume, expiry_policy::resnapshot), store.get());
    ASSERT_TRUE(run(*a, "orders-projection", projection_handler(*store), until_idle()).has_value());
    const auto epoch = a->position("orders-projection", in(20s))->epoch;
    put("k1", "skipped-1");
    put("k9", "skipped-9");
    // The history is trimmed under the subscription: its source cursor is deleted.
    ASSERT_EQ(admin_request("DELETE",
                            "/admin/v2/persistent/public/default/orders/subscription/"
                            "events.orders-projection"),
              204U);
    auto pg = a->poll("orders-projection", 128, in(60s));
    ASSERT_TRUE(pg.has_value()) << pg.error().message();
    EXPECT_EQ(pg->kind, delivery_kind::snapshot);
    EXPECT_TRUE(pg->resnapshot);
    EXPECT_EQ(pg->epoch, epoch + 1);
    for (const auto& d : pg->events) {
        EXPECT_TRUE(d.resnapshot);
        EXPECT_EQ(d.at.epoch, epoch + 1);
    }
    auto h = projection_handler(*store);
    ASSERT_TRUE(h(*pg).get().has_value());
    ASSERT_TRUE(a->ack("resnap-1", "orders-projection", pg->through, 0ms, in(20s)).has_value());
    ASSERT_TRUE(run(*a, "orders-projection", h, until_idle()).has_value());
    // The re-snapshot carries the changes the trimmed history had: nothing is lost.
    EXPECT_EQ(rows_of(*store), expected_);
}

TEST_F(EventsTest, TimeoutIsNeverTakenAsExpiry) {
    put("k1", "v1");
    auto store = open_store("timeout");
    auto a =
        process("A", make_policy(restart_policy::resume, expiry_policy::resnapshot), store.get());
    const auto before = a->position("orders-projection", in(20s)).value();
    // A poll whose deadline passes delivers nothing and changes nothing.
    auto pg = a->poll("orders-projection", 128, std::chrono::steady_clock::now());
    ASSERT_TRUE(pg.has_value()) << pg.error().message();
    // An admin endpoint that does not answer: timeout, not expiry.
    host_options o;
    o.service_url = "pulsar://127.0.0.1:" + std::to_string(broker_->port());
    o.admin_url = "http://127.0.0.1:1";
    auto dead = event_subscriptions::open(o);
    ASSERT_TRUE(dead.has_value());
    ASSERT_TRUE((*dead)->declare_policy("order-events", make_policy()).has_value());
    auto reg =
        (*dead)->register_subscription({"orders-projection", "order-events"}, store.get(), in(5s));
    ASSERT_FALSE(reg.has_value());
    EXPECT_EQ(reg.error(), make_error_code(errc::timeout));
    auto after = a->position("orders-projection", in(20s)).value();
    EXPECT_EQ(after.epoch, before.epoch);
}

TEST_F(EventsTest, TwoProcessesSharingOneIdentityGetDisjointLeases) {
    for (int i = 0; i < 4; ++i) {
        put("k" + std::to_string(i), "v" + std::to_string(i));
    }
    // lease_order::unordered: two holders may lease pages of one partition at once (the
    // default, per_partition, is OutOfOrderPagesAfterACrashLoseNothing below).
    auto pol = make_policy();
    pol.order = lease_order::unordered;
    auto a = process("A", pol, open_store("shared").get());
    auto b = process("B", pol, open_store("shared2").get());
    ASSERT_TRUE(a && b);
    EXPECT_EQ(b->position("orders-projection", in(20s))->epoch, 1U);  // B resumed A's epoch
    // The snapshot is leased to one holder at a time.
    auto snap = a->poll("orders-projection", 128, in(20s));
    ASSERT_TRUE(snap.has_value());
    ASSERT_EQ(snap->kind, delivery_kind::snapshot);
    auto b_during = b->poll("orders-projection", 128, in(500ms));
    ASSERT_TRUE(b_during.has_value());
    EXPECT_TRUE(b_during->empty());
    ASSERT_TRUE(a->ack("s1", "orders-projection", snap->through, 0ms, in(20s)).has_value());
    auto fin = a->poll("orders-projection", 128, in(20s));
    ASSERT_TRUE(fin.has_value());
    ASSERT_TRUE(fin->snapshot_complete);
    ASSERT_TRUE(a->ack("s2", "orders-projection", fin->through, 0ms, in(20s)).has_value());

    std::set<std::int64_t> written;
    for (int i = 0; i < 20; ++i) {
        written.insert(put("k" + std::to_string(i), "e" + std::to_string(i)));
    }
    auto pa = a->poll("orders-projection", 5, in(20s));
    auto pb = b->poll("orders-projection", 5, in(20s));
    ASSERT_TRUE(pa.has_value() && pb.has_value());
    ASSERT_EQ(pa->events.size(), 5U);
    ASSERT_EQ(pb->events.size(), 5U);
    std::set<std::uint64_t> seq_a;
    for (const auto& d : pa->events) {
        seq_a.insert(d.at.sequence);
    }
    for (const auto& d : pb->events) {
        EXPECT_EQ(seq_a.count(d.at.sequence), 0U) << "pages of two holders overlap";
    }
    // A dies without acking; B acks its pages and, once A's lease expired, A's page.
    a.reset();
    std::multiset<std::int64_t> acked_by_b;
    auto take = [&](const page& pg) {
        for (const auto& d : pg.events) {
            acked_by_b.insert(entry_of(d.at.sequence));
        }
    };
    take(*pb);
    ASSERT_TRUE(b->ack("b-0", "orders-projection", pb->through, 0ms, in(20s)).has_value());
    int n = 1;
    const auto until = in(60s);
    while (acked_by_b.size() < written.size() && std::chrono::steady_clock::now() < until) {
        auto pg = b->poll("orders-projection", 5, in(2s));
        ASSERT_TRUE(pg.has_value()) << pg.error().message();
        if (pg->empty()) {
            continue;
        }
        take(*pg);
        ASSERT_TRUE(
            b->ack("b-" + std::to_string(n++), "orders-projection", pg->through, 0ms, in(20s))
                .has_value());
    }
    // The combined ack stream has no gap; A's page was delivered twice (to A, then to B), and
    // nothing else was.
    EXPECT_EQ(std::set<std::int64_t>(acked_by_b.begin(), acked_by_b.end()), written);
    EXPECT_EQ(acked_by_b.size(), written.size());
    auto pos = b->position("orders-projection", in(20s));
    ASSERT_TRUE(pos.has_value());
    EXPECT_EQ(entry_of(pos->committed[0]->sequence), *written.rbegin());
}

// Two holders share one identity and one projection store; the first dies holding page 1
// while page 2 exists. Under the default lease_order::per_partition the second holder is not
// handed page 2 before page 1 (which comes back after its lease), so apply_once never sees
// page 1 after page 2 and nothing is lost. (Before the fix the second holder got page 2 at
// once, applied it, and later skipped page 1 as "already applied": a0..a4 were lost.)
TEST_F(EventsTest, OutOfOrderPagesAfterACrashLoseNothing) {
    for (int i = 0; i < 3; ++i) {
        put("k" + std::to_string(i), "v" + std::to_string(i));
    }
    auto store_a = open_store("ordered");
    auto store_b = open_store("ordered");  // a second connection to the same projection
    ASSERT_TRUE(store_a && store_b);
    auto a = process("A", make_policy(), store_a.get());
    auto b = process("B", make_policy(), store_b.get());
    ASSERT_TRUE(a && b);
    ASSERT_TRUE(
        run(*a, "orders-projection", projection_handler(*store_a), until_idle()).has_value());
    std::vector<std::int64_t> page1;
    for (int i = 0; i < 5; ++i) {
        page1.push_back(put("a" + std::to_string(i), "page1-" + std::to_string(i)));
    }
    for (int i = 0; i < 5; ++i) {
        put("b" + std::to_string(i), "page2-" + std::to_string(i));
    }
    put("a0", "");  // page 3: a tombstone of a page-1 key (applied after page 1 or not at all)
    // A leases page 1 and dies holding it (no apply, no ack, no release).
    auto p1 = a->poll("orders-projection", 5, in(20s));
    ASSERT_TRUE(p1.has_value()) << p1.error().message();
    ASSERT_EQ(p1->events.size(), 5U);
    EXPECT_EQ(entry_of(p1->events.front().at.sequence), page1.front());
    EXPECT_EQ(entry_of(p1->through.sequence), page1.back());
    a.reset();
    // While A's lease is live, B gets nothing of the partition (not page 2).
    auto during = b->poll("orders-projection", 5, in(300ms));
    ASSERT_TRUE(during.has_value()) << during.error().message();
    EXPECT_TRUE(during->empty()) << "a later page was leased while page 1 is outstanding";
    // B drains: page 1 after its lease, then page 2, then the tombstone, in cursor order.
    counting_projection counted(*store_b);
    recorder rec{projection_handler(counted)};
    auto o = until_idle();
    o.max_per_poll = 5;
    auto r = run(*b, "orders-projection", rec.handler(), o);
    ASSERT_TRUE(r.has_value()) << r.error().message();
    ASSERT_EQ(rec.seen.size(), 11U);
    for (std::size_t i = 1; i < rec.seen.size(); ++i) {
        EXPECT_LT(rec.seen[i - 1].at.sequence, rec.seen[i].at.sequence) << "out of order at " << i;
    }
    EXPECT_EQ(entry_of(rec.seen.front().at.sequence), page1.front());
    EXPECT_EQ(counted.applied_count, 11);
    EXPECT_EQ(counted.already, 0);
    EXPECT_EQ(rows_of(*store_b), expected_);
    auto pos = b->position("orders-projection", in(20s));
    ASSERT_TRUE(pos.has_value());
    EXPECT_EQ(pos->committed[0], counted.applied_cursor(0).value());
}

// The unordered lease mode is refused by projection_handler (it would lose updates).
TEST_F(EventsTest, ProjectionHandlerRefusesUnorderedPages) {
    put("k1", "v1");
    auto store = open_store("unordered");
    auto pol = make_policy();
    pol.order = lease_order::unordered;
    auto a = process("A", pol, store.get());
    ASSERT_TRUE(run(*a, "orders-projection", projection_handler(*store), until_idle())
                    .has_value());  // the snapshot is unaffected
    put("k2", "v2");
    auto pg = a->poll("orders-projection", 128, in(20s));
    ASSERT_TRUE(pg.has_value()) << pg.error().message();
    ASSERT_EQ(pg->events.size(), 1U);
    EXPECT_FALSE(pg->in_order);
    auto h = projection_handler(*store);
    auto w = h(*pg).get();
    ASSERT_FALSE(w.has_value());
    EXPECT_EQ(w.error(), make_error_code(errc::invalid_argument));
    EXPECT_EQ(rows_of(*store).count("k2"), 0U);
}

// A source whose last message is a tombstone and that then stays idle: compaction drops the
// tombstone, so the view ends before the log does. The broker answers GET_LAST_MESSAGE_ID of a
// read_compacted reader with the view's last entry once the horizon reached the end of the log
// (Pulsar's behaviour): has_message_available turns false after the view, the reader never
// waits for a message that does not exist, and the snapshot completes.
TEST_F(EventsTest, TrailingTombstoneSourceCompletesItsSnapshot) {
    put("k1", "v1");
    put("k2", "v2");
    put("k3", "v3");
    put("k2", "");  // the last message: a tombstone; the source then stays idle
    auto store = open_store("tombstone");
    auto a = process("A", make_policy(), store.get());
    ASSERT_TRUE(a);
    auto h = projection_handler(*store);  // one handler: it collects the image across pages
    bool complete = false;
    int n = 0;
    const auto until = in(60s);
    while (!complete && std::chrono::steady_clock::now() < until) {
        auto pg = a->poll("orders-projection", 128, in(2s));
        ASSERT_TRUE(pg.has_value()) << pg.error().message();
        if (pg->empty()) {
            continue;
        }
        ASSERT_EQ(pg->kind, delivery_kind::snapshot);
        ASSERT_TRUE(h(*pg).get().has_value());
        ASSERT_TRUE(
            a->ack("t-" + std::to_string(n++), "orders-projection", pg->through, 0ms, in(20s))
                .has_value());
        complete = pg->snapshot_complete;
    }
    ASSERT_TRUE(complete) << "the snapshot of a source ending on a tombstone never completed";
    EXPECT_EQ(rows_of(*store), expected_);  // k1, k3

    // The same at the client level: a read_compacted reader from earliest reads k1 and k3 and
    // then has nothing more available (not: "available", then a read that never returns).
    client::reader_options ro;
    ro.topic = "persistent://public/default/orders";
    ro.read_compacted = true;
    ro.start_message_id = client::message_id::earliest();
    auto rf = client_->create_reader(ro, asio::use_future);
    ASSERT_EQ(rf.wait_for(30s), std::future_status::ready);
    auto r = rf.get();
    ASSERT_TRUE(r.has_value()) << r.error().message();
    std::vector<std::string> keys;
    for (int i = 0; i < 10; ++i) {
        auto af = r->has_message_available(asio::use_future);
        ASSERT_EQ(af.wait_for(30s), std::future_status::ready);
        auto avail = af.get();
        ASSERT_TRUE(avail.has_value()) << avail.error().message();
        if (!*avail) {
            break;
        }
        auto mf = r->read_next(asio::use_future);
        ASSERT_EQ(mf.wait_for(10s), std::future_status::ready)
            << "has_message_available said yes, but no message arrives";
        auto m = mf.get();
        ASSERT_TRUE(m.has_value()) << m.error().message();
        keys.push_back(m->key());
    }
    EXPECT_EQ(keys, (std::vector<std::string>{"k1", "k3"}));
    auto last = *r;
    last.close([](result<void>) {});
}

// Expiry by the broker's retention pass (POST .../trim, doc/configuration.md *Retention*), with
// a real trim rather than an operator skip. What protects the history: the subscription's
// durable source cursor (mark-delete = committed) is a protection floor, so a trim never
// removes what was not committed. Only once that cursor is gone (the subscription deleted /
// expired) can the history be trimmed — and then only up to the compaction cursor
// (`__compaction`, also durable) until the next compaction moves it.
class RetentionExpiryTest : public EventsTest, public ::testing::WithParamInterface<expiry_policy> {
protected:
    std::string admin_body(std::string_view method, const std::string& target) {
        auto h = detail::admin_http::open("http://127.0.0.1:" + std::to_string(admin_->port()));
        if (!h) {
            return {};
        }
        auto r = (*h)->request(method, target, {}, 20s);
        return r && r->status == 200 ? r->body : std::string();
    }
    // ledgers[0].firstEntry of the source (the first readable entry after trims).
    std::int64_t first_entry() {
        auto body = admin_body("GET", "/admin/v2/persistent/public/default/orders/internalStats");
        boost::system::error_code ec;
        auto v = boost::json::parse(body, ec);
        if (ec || !v.is_object()) {
            ADD_FAILURE() << "internalStats: " << body;
            return -1;
        }
        const auto& l = v.as_object().at("ledgers").as_array().at(0).as_object();
        return l.at("firstEntry").to_number<std::int64_t>();
    }
    void compact_and_wait() {
        ASSERT_EQ(admin_request("PUT", "/admin/v2/persistent/public/default/orders/compaction"),
                  202U);
        const auto until = in(60s);
        while (std::chrono::steady_clock::now() < until) {
            auto body = admin_body("GET", "/admin/v2/persistent/public/default/orders/compaction");
            if (body.find("SUCCESS") != std::string::npos) {
                return;
            }
            ASSERT_EQ(body.find("ERROR"), std::string::npos) << body;
            std::this_thread::sleep_for(20ms);
        }
        FAIL() << "compaction did not finish";
    }
    unsigned trim() {
        return admin_request("POST", "/admin/v2/persistent/public/default/orders/trim");
    }
};

TEST_P(RetentionExpiryTest, TrimmedHistory) {
    const auto policy_kind = GetParam();
    for (int i = 0; i < 6; ++i) {
        put("k" + std::to_string(i), "v" + std::to_string(i));
    }
    auto store = open_store("retention");
    auto a = process("A", make_policy(restart_policy::resume, policy_kind), store.get());
    ASSERT_TRUE(a);
    ASSERT_TRUE(run(*a, "orders-projection", projection_handler(*store), until_idle()).has_value());

    // 1. Uncommitted history survives a real retention pass: the source cursor is the floor.
    const auto held = put("k1", "kept-1");
    put("k7", "kept-7");
    ASSERT_EQ(trim(), 204U);
    EXPECT_LE(first_entry(), held)
        << "retention trimmed history the subscription had not committed";
    ASSERT_TRUE(run(*a, "orders-projection", projection_handler(*store), until_idle()).has_value());
    EXPECT_EQ(rows_of(*store), expected_);
    const auto before = a->position("orders-projection", in(20s)).value();

    // 2. The subscription's source cursor is deleted (an operator, or subscription expiry);
    //    writes it never saw are then trimmed for real by the retention pass.
    const auto gone = put("k2", "gone-2");
    put("k9", "gone-9");
    ASSERT_EQ(admin_request("DELETE",
                            "/admin/v2/persistent/public/default/orders/subscription/"
                            "events.orders-projection"),
              204U);
    ASSERT_EQ(trim(), 204U);
    // The compaction cursor still holds everything after the last compaction's horizon.
    EXPECT_LE(first_entry(), gone);
    compact_and_wait();
    ASSERT_EQ(trim(), 204U);
    ASSERT_GT(first_entry(), gone + 1) << "the retention pass did not trim the unseen writes";

    if (policy_kind == expiry_policy::stop) {
        for (int i = 0; i < 2; ++i) {
            auto pg = a->poll("orders-projection", 128, in(20s));
            ASSERT_FALSE(pg.has_value());
            EXPECT_EQ(pg.error(), make_error_code(errc::expired));
        }
        auto after = a->position("orders-projection", in(20s)).value();
        EXPECT_EQ(after.epoch, before.epoch);
        EXPECT_EQ(after.committed, before.committed);
        EXPECT_NE(rows_of(*store), expected_);  // the projection stays as it was (k2, k9 unseen)
        return;
    }
    // RESNAPSHOT: the new snapshot comes from the compacted view. The view outlives the trimmed
    // log: the broker's read_compacted reader at earliest reads it from its first entry, also
    // below the log's first readable entry (doc/compaction.md), so the library's guard (view
    // entries a reader gets = the view's size) passes and the projection is rebuilt whole: one
    // new epoch, every delivery marked resnapshot, and the projection equal to the source.
    auto h = projection_handler(*store);  // one handler: it collects the image across pages
    bool complete = false;
    int pages = 0;
    const auto until = in(60s);
    while (!complete && std::chrono::steady_clock::now() < until) {
        auto pg = a->poll("orders-projection", 128, in(5s));
        ASSERT_TRUE(pg.has_value()) << pg.error().message();
        if (pg->empty()) {
            continue;
        }
        ASSERT_EQ(pg->kind, delivery_kind::snapshot);
        EXPECT_TRUE(pg->resnapshot);
        EXPECT_EQ(pg->epoch, before.epoch + 1);
        for (const auto& d : pg->events) {
            EXPECT_TRUE(d.resnapshot);
            EXPECT_EQ(d.at.epoch, before.epoch + 1);
        }
        ASSERT_TRUE(h(*pg).get().has_value());
        ASSERT_TRUE(a->ack("resnap-" + std::to_string(pages++), "orders-projection", pg->through,
                           0ms, in(20s))
                        .has_value());
        complete = pg->snapshot_complete;
    }
    ASSERT_TRUE(complete) << "the re-snapshot of the trimmed source never completed";
    ASSERT_TRUE(run(*a, "orders-projection", h, until_idle()).has_value());
    EXPECT_EQ(a->position("orders-projection", in(20s)).value().epoch, before.epoch + 1);
    // The re-snapshot carries the trimmed writes (k2, k9): nothing is lost.
    EXPECT_EQ(rows_of(*store), expected_);
}

INSTANTIATE_TEST_SUITE_P(StopAndResnapshot,
                         RetentionExpiryTest,
                         ::testing::Values(expiry_policy::stop, expiry_policy::resnapshot),
                         [](const auto& info) {
                             return info.param == expiry_policy::stop ? std::string("Stop")
                                                                      : std::string("Resnapshot");
                         });

TEST_F(EventsTest, ExclusiveOwnershipIsFenced) {
    put("k1", "v1");
    auto pol = make_policy();
    pol.owner = ownership::exclusive_fenced;
    auto store = open_store("excl");
    auto a = process("A", pol, store.get());
    ASSERT_TRUE(a);
    result<void> reg;
    auto b = process("B", pol, store.get(), &reg);
    ASSERT_FALSE(reg.has_value());
    EXPECT_EQ(reg.error(), make_error_code(errc::ownership_denied));
    ASSERT_TRUE(a->release("orders-projection", in(20s)).has_value());
    auto c = process("C", pol, store.get(), &reg);
    ASSERT_TRUE(reg.has_value()) << reg.error().message();
    // A still has its registration but was fenced by C's claim.
    auto pg = a->poll("orders-projection", 128, in(5s));
    ASSERT_FALSE(pg.has_value());
    EXPECT_EQ(pg.error(), make_error_code(errc::fenced));
    auto pc = c->poll("orders-projection", 128, in(20s));
    ASSERT_TRUE(pc.has_value()) << pc.error().message();
}

TEST_F(EventsTest, OnlyTheAdmittedFormatDecodes) {
    put("k1", "v1");
    put("k2", "{\"v\":2}", "order/v2");
    put("k3", "raw", "");
    auto store = open_store("format");
    auto a = process("A", make_policy(), store.get());
    auto pg = a->poll("orders-projection", 128, in(20s));
    ASSERT_TRUE(pg.has_value());
    ASSERT_EQ(pg->events.size(), 3U);
    EXPECT_TRUE(pg->events[0].payload().has_value());
    EXPECT_EQ(pg->events[1].payload().error(), make_error_code(errc::unadmitted_format));
    EXPECT_EQ(pg->events[1].format, "order/v2");
    EXPECT_EQ(pg->events[2].payload().error(), make_error_code(errc::unadmitted_format));
    // The projection handler fails the page (typed error), it never skips it silently.
    auto r = run(*a, "orders-projection", projection_handler(*store), until_idle());
    ASSERT_FALSE(r.has_value());
    EXPECT_EQ(r.error(), make_error_code(errc::unadmitted_format));
}

}  // namespace
}  // namespace nereus::events::test

namespace nereus::events::test {
namespace {

TEST_F(EventsTest, PartitionedSourceProjectsEveryPartition) {
    ASSERT_EQ(admin_request("PUT", "/admin/v2/persistent/public/default/porders/partitions", "3"),
              204U);
    client::producer_options po;
    po.topic = "persistent://public/default/porders";
    po.batching = true;  // batches of several keys: cursors distinguish batch indexes
    auto p = client_->create_producer(po, asio::use_future).get();
    ASSERT_TRUE(p.has_value()) << p.error().message();
    std::map<std::string, std::string> expected;
    auto send_all = [&](int from, int to) {
        std::vector<std::future<result<client::message_id>>> fs;
        for (int i = from; i < to; ++i) {
            const auto key = "k" + std::to_string(i % 30);
            const auto value = "v" + std::to_string(i);
            auto m = client::outgoing_message::text(value).with_key(key);
            m.properties.emplace_back(admitted_format::format_property, "order/v1");
            fs.push_back(p->send(std::move(m), asio::use_future));
            expected[key] = value;
        }
        for (auto& f : fs) {
            ASSERT_EQ(f.wait_for(30s), std::future_status::ready);
            ASSERT_TRUE(f.get().has_value());
        }
    };
    send_all(0, 90);
    auto pol = make_policy();
    pol.source_topic = "porders";
    auto store = open_store("partitioned");
    auto a = process("A", pol, store.get());
    ASSERT_TRUE(a);
    auto h = projection_handler(*store);
    ASSERT_TRUE(run(*a, "orders-projection", h, until_idle()).has_value());
    EXPECT_EQ(rows_of(*store), expected);
    send_all(90, 150);
    ASSERT_TRUE(run(*a, "orders-projection", h, until_idle()).has_value());
    EXPECT_EQ(rows_of(*store), expected);
    auto pos = a->position("orders-projection", in(20s));
    ASSERT_TRUE(pos.has_value());
    ASSERT_EQ(pos->committed.size(), 3U);
    for (std::uint32_t i = 0; i < 3; ++i) {
        ASSERT_TRUE(pos->committed[i].has_value());
        auto applied = store->applied(i);
        ASSERT_TRUE(applied.has_value() && applied->has_value());
        EXPECT_EQ(pos->committed[i]->sequence, (*applied)->sequence);
    }
}

}  // namespace
}  // namespace nereus::events::test

#include "support/child_process.h"

namespace nereus::events::test {
namespace {

// A real process SIGKILLed between apply and ack: its replacement gets the same cursors
// again (once the dead holder's lease expired) and apply_once makes them no-ops.
TEST_F(EventsTest, ProcessKilledBetweenApplyAndAckIsAppliedOnceByItsReplacement) {
    for (int i = 0; i < 8; ++i) {
        put("k" + std::to_string(i), "v" + std::to_string(i));
    }
    {
        auto store = open_store("sigkill");
        auto a = process("A", make_policy(), store.get());
        ASSERT_TRUE(
            run(*a, "orders-projection", projection_handler(*store), until_idle()).has_value());
        ASSERT_TRUE(a->release("orders-projection", in(20s)).has_value());
    }
    for (int i = 0; i < 6; ++i) {
        put("k" + std::to_string(i), "after-" + std::to_string(i));
    }
    const auto run_child = nereus::test::run_and_kill(
        {NEREUS_EVENTS_DELIVERY_CHILD, "pulsar://127.0.0.1:" + std::to_string(broker_->port()),
         "http://127.0.0.1:" + std::to_string(admin_->port()), dir_ + "/sigkill.db", "child"},
        std::chrono::milliseconds(50), "APPLIED 6");
    ASSERT_TRUE(nereus::test::killed_by_sigkill(run_child.wait_status)) << run_child.output;
    ASSERT_NE(run_child.output.find("APPLIED 6\n"), std::string::npos) << run_child.output;

    auto store = open_store("sigkill");
    EXPECT_EQ(rows_of(*store), expected_);  // the child's apply is durable
    counting_projection counted(*store);
    auto b = process("B", make_policy(), store.get());
    ASSERT_TRUE(
        run(*b, "orders-projection", projection_handler(counted), until_idle()).has_value());
    EXPECT_EQ(counted.already, 6);  // redelivered, recognised by the full cursor
    EXPECT_EQ(counted.applied_count, 0);
    EXPECT_EQ(rows_of(*store), expected_);
}

}  // namespace
}  // namespace nereus::events::test

namespace nereus::events::test {
namespace {

// Figures only (nothing about speed is asserted): how fast the handler loop drains a backlog
// of EVENTs into the SQLite store, and the cost of one poll+ack round trip. Correctness of the
// drained projection is asserted.
TEST_F(EventsTest, DrainFigures) {
    put("k0", "v0");
    auto store = open_store("figures");
    auto a = process("A", make_policy(), store.get());
    auto h = projection_handler(*store);
    ASSERT_TRUE(run(*a, "orders-projection", h, until_idle()).has_value());
    std::vector<std::future<result<client::message_id>>> fs;
    for (int i = 0; i < 2000; ++i) {
        auto m = client::outgoing_message::text("v" + std::to_string(i))
                     .with_key("k" + std::to_string(i % 500));
        m.properties.emplace_back(admitted_format::format_property, "order/v1");
        expected_["k" + std::to_string(i % 500)] = "v" + std::to_string(i);
        fs.push_back(producer_.send(std::move(m), asio::use_future));
    }
    for (auto& f : fs) {
        ASSERT_EQ(f.wait_for(60s), std::future_status::ready);
        ASSERT_TRUE(f.get().has_value());
    }
    std::chrono::steady_clock::duration in_handler{};
    batch_handler timed = [&](const page& pg) {
        const auto b = std::chrono::steady_clock::now();
        auto f = h(pg);
        f.wait();
        in_handler += std::chrono::steady_clock::now() - b;
        return f;
    };
    const auto t0 = std::chrono::steady_clock::now();
    auto r = run(*a, "orders-projection", timed, until_idle());
    const auto t1 = std::chrono::steady_clock::now();
    ASSERT_TRUE(r.has_value());
    EXPECT_EQ(rows_of(*store), expected_);
    EXPECT_EQ(r->deliveries, 2000U);
    // The idle tail (2 empty polls of 300 ms and a position read) is part of t1 - t0.
    const double s = std::chrono::duration<double>(t1 - t0).count();
    const double hs = std::chrono::duration<double>(in_handler).count();
    std::printf(
        "drain: %llu deliveries in %llu pages, %.2f s incl. ~0.6 s idle tail: %.0f "
        "deliveries/s; %.2f s of it in the handler (SQLite apply_once, one fsynced "
        "transaction per event); poll+ack+tail %.2f s\n",
        static_cast<unsigned long long>(r->deliveries),
        static_cast<unsigned long long>(r->pages_acked), s, static_cast<double>(r->deliveries) / s,
        hs, s - hs);
    // One page of one event: poll + ack round trip.
    put("k1", "one");
    const auto p0 = std::chrono::steady_clock::now();
    auto pg = a->poll("orders-projection", 128, in(20s));
    ASSERT_TRUE(pg.has_value() && pg->events.size() == 1U);
    const auto p1 = std::chrono::steady_clock::now();
    ASSERT_TRUE(a->ack("fig-1", "orders-projection", pg->through, 0ms, in(20s)).has_value());
    const auto p2 = std::chrono::steady_clock::now();
    std::printf("one-event page: poll %.1f ms, ack %.1f ms\n",
                std::chrono::duration<double, std::milli>(p1 - p0).count(),
                std::chrono::duration<double, std::milli>(p2 - p1).count());
}

}  // namespace
}  // namespace nereus::events::test

namespace nereus::events::test {
namespace {

// A process restarted under the same holder id in the middle of a snapshot must not continue
// into a partial image: the snapshot starts over and the projection gets every key.
TEST_F(EventsTest, RestartMidSnapshotUnderTheSameHolderRetakesTheWholeSnapshot) {
    for (int i = 0; i < 10; ++i) {
        put("k" + std::to_string(i), "v" + std::to_string(i));
    }
    auto pol = make_policy();
    pol.pages.max_events = 3;
    auto store = open_store("midsnap");
    {
        auto a = process("same", pol, store.get());
        auto pg = a->poll("orders-projection", 128, in(20s));
        ASSERT_TRUE(pg.has_value());
        ASSERT_EQ(pg->kind, delivery_kind::snapshot);
        ASSERT_EQ(pg->events.size(), 3U);
        ASSERT_TRUE(a->ack("mid-1", "orders-projection", pg->through, 0ms, in(20s)).has_value());
    }
    auto again = process("same", pol, store.get());
    ASSERT_TRUE(
        run(*again, "orders-projection", projection_handler(*store), until_idle()).has_value());
    EXPECT_EQ(rows_of(*store), expected_);
}

}  // namespace
}  // namespace nereus::events::test

namespace nereus::events::test {
namespace {

// SINGLE filter: one handler call per delivery, each returning owned asynchronous work; the
// page is acked only after every delivery's work completed (not when the callbacks returned).
TEST_F(EventsTest, SingleFilterAcksOnlyAfterTheHandlersAsynchronousWorkCompleted) {
    for (int i = 0; i < 5; ++i) {
        put("k" + std::to_string(i), "v" + std::to_string(i));
    }
    auto store = open_store("single");
    auto s = open("A");
    ASSERT_TRUE(s->declare_policy("order-events", make_policy()).has_value());
    ASSERT_TRUE(s->register_subscription({"orders-projection", "order-events", filter_mode::single},
                                         store.get(), in(60s))
                    .has_value());
    EXPECT_EQ(s->find_registration("orders-projection")->filter, filter_mode::single);
    std::atomic<int> started{0};
    std::atomic<int> finished{0};
    std::vector<std::future<void>> workers;
    single_handler h = [&](const delivery&) {
        started++;
        auto p = std::make_shared<std::promise<result<void>>>();
        auto f = p->get_future();
        workers.push_back(std::async(std::launch::async, [p, &finished] {
            std::this_thread::sleep_for(20ms);
            finished++;
            p->set_value({});
        }));
        return f;
    };
    int checked = 0;
    run_options o = until_idle();
    o.before_ack = [&](const page&) {
        EXPECT_EQ(finished.load(), started.load()) << "ack before the work completed";
        ++checked;
    };
    auto r = run(*s, "orders-projection", h, o);
    ASSERT_TRUE(r.has_value()) << r.error().message();
    EXPECT_EQ(started.load(), 5);
    EXPECT_GE(checked, 2);  // the snapshot page and its (empty) final page
    EXPECT_EQ(r->deliveries, 5U);
}

}  // namespace
}  // namespace nereus::events::test
