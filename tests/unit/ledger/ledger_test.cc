// Unit tests of the ledger facade: open/registry, appends, cursors and every cursor operation,
// reads, retention, admission (with spies on the metadata and storage seams), records.

#include "nereus/cursor/errc.h"
#include "nereus/ledger/records.h"

#include <gtest/gtest.h>

#include "support/harness.h"

namespace nereus::ledger::test {
namespace {

using cursor::ack_status;
using cursor::batch_bits;
using cursor::initial_position;
using cursor::reset_target;

TEST(LedgerOpen, CreatesRegistryAndReopensSameLedger) {
    harness h;
    auto& l = h.open();
    const auto id = l->ledger_id();
    EXPECT_GT(id, 0U);
    h.append_n(5);
    EXPECT_EQ(l->info().end, 5U);
    h.restart();
    EXPECT_EQ(h.ledger()->ledger_id(), id);
    EXPECT_EQ(h.ledger()->info().end, 5U);
    EXPECT_EQ(h.ledger()->info().claim_epoch, 2U);
    // A second topic gets another ledger id.
    auto other = h.try_open("persistent://t/n/b");
    ASSERT_TRUE(other.has_value());
    EXPECT_NE((*other)->ledger_id(), id);
}

TEST(LedgerOpen, TopicNotFoundWithoutCreate) {
    harness h;
    h.options().create_if_missing = false;
    auto l = h.try_open();
    ASSERT_FALSE(l.has_value());
    EXPECT_EQ(l.error(), errc::topic_not_found);
}

TEST(LedgerAppend, CompletesDurablyWithMessageIdAndHeader) {
    harness h;
    auto& l = h.open();
    std::string p = "hello";
    auto r = l->append_sync(std::as_bytes(std::span(p.data(), p.size())),
                            append_options{.publish_time = 42, .batch_size = 3});
    ASSERT_TRUE(r.has_value());
    EXPECT_EQ(r->ledger_id, l->ledger_id());
    EXPECT_EQ(r->entry_id, 0U);
    auto c = l->open_cursor("s", initial_position::earliest());
    ASSERT_TRUE(c.has_value());
    auto rr = (*c)->read(10);
    ASSERT_TRUE(rr.has_value());
    ASSERT_EQ(rr->entries.size(), 1U);
    EXPECT_EQ(rr->entries[0].publish_time, 42);
    EXPECT_EQ(rr->entries[0].batch_size, 3U);
    EXPECT_EQ(std::string(reinterpret_cast<const char*>(rr->entries[0].payload.data()),
                          rr->entries[0].payload.size()),
              "hello");
}

TEST(LedgerCursor, InitialPositionsAndExactBacklog) {
    harness h;
    auto& l = h.open();
    h.append_n(10);
    auto e = *l->open_cursor("e", initial_position::earliest());
    auto la = *l->open_cursor("l", initial_position::latest());
    auto at = *l->open_cursor("a", initial_position::at_offset(4));
    EXPECT_EQ(e->mark_delete(), 0U);
    EXPECT_EQ(la->mark_delete(), 10U);
    EXPECT_EQ(at->mark_delete(), 4U);
    EXPECT_EQ(e->life(), cursor::lifecycle::active);
    EXPECT_EQ(e->backlog(), 10U);
    EXPECT_EQ(la->backlog(), 0U);
    EXPECT_EQ(at->backlog(), 6U);
    EXPECT_EQ(l->open_cursor("e", initial_position::earliest()).error(), errc::cursor_exists);
    EXPECT_EQ(l->open_cursor("x", initial_position::at_offset(11)).error(),
              cursor::errc::offset_beyond_end);
    h.append_n(2);
    EXPECT_EQ(la->backlog(), 2U);
}

TEST(LedgerCursor, ReadSkipsAckedRangesAndHandsPartialBatchesOver) {
    harness h;
    auto& l = h.open();
    h.append_n(10, 1000, 4);
    auto c = *l->open_cursor("s", initial_position::earliest());
    const auto f = c->current_fence();
    EXPECT_EQ(ok(c->ack_sync(f, 2)).status, ack_status::ok);
    EXPECT_EQ(ok(c->ack_sync(f, 3)).status, ack_status::ok);
    auto b = batch_bits::none_set(4);
    b.set(0);
    b.set(2);
    EXPECT_EQ(ok(c->ack_batch_index_sync(f, 5, b)).status, ack_status::ok);
    auto all = batch_bits::none_set(4);
    for (std::uint32_t i = 0; i < 4; ++i) {
        all.set(i);
    }
    EXPECT_EQ(ok(c->ack_batch_index_sync(f, 7, all)).status, ack_status::ok);  // fully acked
    auto got = deliverable(*c);
    std::vector<offset> offs;
    for (auto& [o, bits] : got) {
        offs.push_back(o);
        if (o == 5) {
            EXPECT_EQ(bits, (std::vector<std::uint32_t>{1, 3}));
        } else {
            EXPECT_TRUE(bits.empty());
        }
    }
    EXPECT_EQ(offs, (std::vector<offset>{0, 1, 4, 5, 6, 8, 9}));
    EXPECT_EQ(c->backlog(), 7U);
    // The read position is in memory: reading again continues after the last delivery.
    c->rewind();
    auto r1 = *c->read(2);
    EXPECT_EQ(r1.entries.size(), 2U);
    auto r2 = *c->read(1);
    EXPECT_EQ(r2.entries[0].at, 4U);
}

TEST(LedgerCursor, CumulativeIndividualAndBatchAcksKeepBacklogExact) {
    harness h;
    auto& l = h.open();
    h.append_n(20, 1000, 2);
    auto c = *l->open_cursor("s", initial_position::earliest());
    auto f = c->current_fence();
    std::uint64_t expect = 20;
    for (offset x : {5, 7, 6, 19}) {
        EXPECT_EQ(ok(c->ack_sync(f, x)).status, ack_status::ok);
        EXPECT_EQ(c->backlog(), --expect);
    }
    EXPECT_EQ(ok(c->ack_sync(f, 5)).status, ack_status::already_acked);
    EXPECT_EQ(ok(c->ack_cumulative_sync(f, 3)).status, ack_status::ok);  // 0..3 acked
    expect -= 4;
    EXPECT_EQ(c->backlog(), expect);
    EXPECT_EQ(c->mark_delete(), 4U);
    EXPECT_EQ(ok(c->ack_cumulative_sync(f, 9, 0, 2)).status, ack_status::ok);  // <9 + 9[0]
    EXPECT_EQ(c->mark_delete(), 9U);
    EXPECT_EQ(c->backlog(), 10U);  // 9 (partial), 10..18
    EXPECT_EQ(ok(c->ack_cumulative_sync(f, 2)).status, ack_status::already_acked);
    EXPECT_EQ(c->ack_sync(f, 30).error(), cursor::errc::offset_beyond_end);
}

TEST(LedgerCursor, AckBeyondEndFailsAndChangesNothing) {
    harness h;
    auto& l = h.open();
    h.append_n(3);
    auto c = *l->open_cursor("s", initial_position::earliest());
    auto r = c->ack_sync(c->current_fence(), 3);
    ASSERT_FALSE(r.has_value());
    EXPECT_EQ(r.error(), cursor::errc::offset_beyond_end);
    EXPECT_EQ(c->backlog(), 3U);
}

TEST(LedgerCursor, ResetToOffsetTimeEarliestLatest) {
    harness h;
    auto& l = h.open();
    // Non-monotonic publish times: 100, 50, 200, 150, 300 ...
    const std::vector<std::int64_t> times = {100, 50, 200, 150, 300, 120, 400};
    for (auto t : times) {
        std::string p(kPayload, 'x');
        ASSERT_TRUE(l->append_sync(std::as_bytes(std::span(p.data(), p.size())),
                                   append_options{.publish_time = t})
                        .has_value());
    }
    auto c = *l->open_cursor("s", initial_position::latest());
    const auto e0 = c->current_fence().epoch;
    auto r = ok(c->reset(reset_target::to_time(150)));
    EXPECT_EQ(r.position, 2U);  // first in offset order with time >= 150
    EXPECT_FALSE(r.clamped);
    EXPECT_EQ(c->current_fence().epoch, e0 + 1);
    EXPECT_EQ(c->life(), cursor::lifecycle::active);  // backward reset finalized
    EXPECT_EQ(ok(c->reset(reset_target::to_time(1000))).position, 7U);
    EXPECT_EQ(ok(c->reset(reset_target::to_offset(3))).position, 3U);
    EXPECT_EQ(ok(c->reset(reset_target::earliest())).position, 0U);
    EXPECT_EQ(ok(c->reset(reset_target::latest())).position, 7U);
    // Late ack at an old epoch: typed, changes nothing.
    EXPECT_EQ(ok(c->ack_sync(cursor::fence{1, e0}, 1)).status, ack_status::stale_epoch);
}

TEST(LedgerCursor, ClearBacklogAndSkip) {
    harness h;
    auto& l = h.open();
    h.append_n(10);
    auto c = *l->open_cursor("s", initial_position::earliest());
    ok(c->ack_sync(c->current_fence(), 1));
    auto s = ok(c->skip(3));  // skips 0, 2, 3 (1 is acked)
    EXPECT_EQ(s.mark_delete, 4U);
    EXPECT_EQ(c->backlog(), 6U);
    auto cl = ok(c->clear_backlog());
    EXPECT_EQ(cl.position, 10U);
    EXPECT_EQ(c->backlog(), 0U);
    h.append_n(2);
    EXPECT_EQ(c->backlog(), 2U);
}

TEST(LedgerCursor, PropertiesSurviveRestartAndReservedPrefixRejected) {
    harness h;
    auto& l = h.open();
    h.append_n(3);
    auto c = *l->open_cursor("s", initial_position::earliest());
    ok(c->set_properties({{"a", "1"}}));
    ok(c->put_property("b", "2"));
    ok(c->remove_property("a"));
    auto bad = c->put_property("#nereus.internal.x", "1");
    ASSERT_FALSE(bad.has_value());
    EXPECT_EQ(bad.error(), cursor::errc::reserved_property);
    c.reset();
    h.restart();
    auto c2 = *h.ledger()->find_cursor("s");
    EXPECT_EQ(c2->properties(), (cursor::property_map{{"b", "2"}}));
}

TEST(LedgerCursor, RedeliveryCountsRideTheNextCasAndSurviveRestart) {
    harness h;
    auto& l = h.open();
    h.append_n(6);
    auto c = *l->open_cursor("s", initial_position::earliest());
    // Recording is in memory: no metadata write of its own.
    const auto multis = h.meta_spy().multis.load();
    c->record_redelivery(1);
    c->record_redelivery(1);
    c->record_redelivery(3);
    EXPECT_EQ(h.meta_spy().multis.load(), multis);
    EXPECT_EQ(c->redelivery_count(1), 2U);
    EXPECT_EQ(c->redelivery_count(3), 1U);
    EXPECT_EQ(c->redelivery_count(2), 0U);
    // A crash before any CAS loses them: a count lags, never runs ahead.
    c.reset();
    h.crash_and_open();
    c = *h.ledger()->find_cursor("s");
    EXPECT_EQ(c->redelivery_count(1), 0U);
    // Recorded again, then written by the next ack's CAS.
    c->record_redelivery(1);
    c->record_redelivery(3);
    ok(c->ack_sync(c->current_fence(), 3));  // acked: its count goes
    EXPECT_EQ(c->redelivery_count(3), 0U);
    c->record_redelivery(3);  // ignored for an acked entry
    EXPECT_EQ(c->redelivery_count(3), 0U);
    c.reset();
    h.crash_and_open();
    c = *h.ledger()->find_cursor("s");
    EXPECT_EQ(c->redelivery_count(1), 1U);
    EXPECT_EQ(c->redelivery_count(3), 0U);
    // A clean close flushes recorded counts.
    c->record_redelivery(1);
    c->record_redelivery(4);
    c.reset();
    h.restart();
    c = *h.ledger()->find_cursor("s");
    EXPECT_EQ(c->redelivery_count(1), 2U);
    EXPECT_EQ(c->redelivery_count(4), 1U);
    // Acked through the prefix: gone; a reset clears the rest.
    ok(c->ack_cumulative_sync(c->current_fence(), 1));
    EXPECT_EQ(c->redelivery_count(1), 0U);
    EXPECT_EQ(c->redelivery_count(4), 1U);
    ok(c->reset(reset_target::earliest()));
    EXPECT_EQ(c->redelivery_count(4), 0U);
    // Non-durable cursors count in memory.
    auto nd = *h.ledger()->open_cursor("reader", initial_position::earliest(),
                                       subscription_options{.durable = false});
    nd->record_redelivery(2);
    nd->record_redelivery(2);
    EXPECT_EQ(nd->redelivery_count(2), 2U);
    ok(nd->ack_sync(nd->current_fence(), 2));
    EXPECT_EQ(nd->redelivery_count(2), 0U);
}

TEST(LedgerCursor, DeleteAndRecreateBumpsGenerationAndFencesOldHandle) {
    harness h;
    auto& l = h.open();
    h.append_n(5);
    auto c = *l->open_cursor("s", initial_position::earliest());
    const auto g = c->current_fence().generation;
    ok(c->ack_sync(c->current_fence(), 1));
    ASSERT_TRUE(l->delete_cursor("s").has_value());
    EXPECT_EQ(l->delete_cursor("s").error(), errc::cursor_not_found);
    auto c2 = *l->open_cursor("s", initial_position::earliest());
    EXPECT_EQ(c2->current_fence().generation, g + 1);
    EXPECT_FALSE(c2->is_acked(1));
    auto late = c->ack_sync(cursor::fence{g, 1}, 2);
    EXPECT_FALSE(late.has_value() && late->status == ack_status::ok);
    EXPECT_FALSE(c2->is_acked(2));
}

TEST(LedgerCursor, NonDurableCursorIsInMemoryAndNotProtected) {
    harness h;
    auto& l = h.open();
    h.append_n(40);
    auto nd = *l->open_cursor("reader", initial_position::earliest(),
                              subscription_options{.durable = false});
    EXPECT_FALSE(nd->durable());
    ok(nd->ack_sync(nd->current_fence(), 0));
    EXPECT_EQ(nd->mark_delete(), 1U);
    auto b = batch_bits::none_set(1);
    b.set(0);
    EXPECT_EQ(ok(nd->ack_batch_index_sync(nd->current_fence(), 2, b)).status, ack_status::ok);
    EXPECT_TRUE(nd->is_acked(2));
    // Not part of the floor: a trim passes it (no durable cursor: floor = end).
    auto t = l->trim();
    ASSERT_TRUE(t.has_value());
    EXPECT_EQ(t->start_after, 40U);
    h.append_n(3);
    auto r = nd->read(100);
    ASSERT_TRUE(r.has_value());
    ASSERT_TRUE(r->skipped.has_value());
    EXPECT_EQ(r->skipped->begin, 1U);
    EXPECT_EQ(r->skipped->end, 40U);
    ASSERT_EQ(r->entries.size(), 3U);
    EXPECT_EQ(r->entries[0].at, 40U);
    // Nothing of it was persisted.
    nd.reset();
    h.restart();
    EXPECT_TRUE(h.ledger()->cursor_names().empty());
}

TEST(LedgerRetention, TrimRemovesOnlyWholeSegmentsBelowFloor) {
    harness h;
    auto& l = h.open();
    h.append_n(95);
    auto c = *l->open_cursor("s", initial_position::earliest());
    ok(c->ack_cumulative_sync(c->current_fence(), 54));  // MDO 55
    auto t = l->trim();
    ASSERT_TRUE(t.has_value()) << t.error().message();
    EXPECT_EQ(t->start_after, 55U);
    EXPECT_EQ(t->physical_first, 50U);  // the segment [50, 60) holds 55..59
    EXPECT_EQ(l->info().floor, 55U);
    EXPECT_EQ(c->mark_delete(), 55U);
    EXPECT_EQ(c->backlog(), 40U);
    EXPECT_EQ(deliverable(*c).size(), 40U);
}

TEST(LedgerRetention, TimeAndSizeRetentionOnlyBelowFloor) {
    harness h;
    auto& l = h.open();
    h.append_n(100, 0);  // times 0..99
    auto c = *l->open_cursor("s", initial_position::earliest());
    ok(c->ack_cumulative_sync(c->current_fence(), 79));  // MDO 80
    h.clock = 100 + 50;  // entries with time < 100 are older than 50 ms... keep 50 ms
    ASSERT_TRUE(l->set_retention(retention_policy{.time_ms = 80, .size_bytes = -1}).has_value());
    auto t = *l->trim();
    EXPECT_EQ(t.start_after, 70U);  // times >= 70 are within 80 ms of 150
    ASSERT_TRUE(l->set_retention(retention_policy{.time_ms = -1, .size_bytes = -1}).has_value());
    EXPECT_EQ(l->trim()->start_after, 70U);  // unlimited: nothing more
    ASSERT_TRUE(l->set_retention(retention_policy{.time_ms = 0, .size_bytes = 0}).has_value());
    EXPECT_EQ(l->trim()->start_after, 80U);  // everything consumed, never past the floor
}

TEST(LedgerAdmission, CapabilitiesOffRejectBeforeAnyIo) {
    harness h;
    h.options().caps = capabilities{.reset = false,
                                    .clear_backlog = false,
                                    .skip = false,
                                    .delete_cursor = false,
                                    .property_writes = false,
                                    .non_durable_cursors = false,
                                    .batch_index_ack = false,
                                    .retention_changes = false};
    auto& l = h.open();
    h.append_n(5, 0, 2);
    auto c = *l->open_cursor("s", initial_position::earliest());
    const auto m0 = h.meta_spy().total();
    const auto s0 = h.stream_spy().mutations();
    const auto snap = c->snapshot();
    EXPECT_EQ(c->reset(reset_target::earliest()).error(), errc::not_admitted);
    EXPECT_EQ(c->clear_backlog().error(), errc::not_admitted);
    EXPECT_EQ(c->skip(1).error(), errc::not_admitted);
    EXPECT_EQ(c->put_property("a", "b").error(), errc::not_admitted);
    EXPECT_EQ(c->set_properties({}).error(), errc::not_admitted);
    EXPECT_EQ(c->remove_property("a").error(), errc::not_admitted);
    EXPECT_EQ(l->delete_cursor("s").error(), errc::not_admitted);
    EXPECT_EQ(l->set_retention({}).error(), errc::not_admitted);
    EXPECT_EQ(
        l->open_cursor("r", initial_position::earliest(), subscription_options{.durable = false})
            .error(),
        errc::not_admitted);
    auto b = batch_bits::none_set(2);
    b.set(0);
    EXPECT_EQ(c->ack_batch_index_sync(c->current_fence(), 1, b).error(), errc::not_admitted);
    EXPECT_EQ(c->ack_cumulative_sync(c->current_fence(), 1, 0, 2).error(), errc::not_admitted);
    EXPECT_EQ(c->ack_cumulative_sync(c->current_fence(), 1, {}, 0, {{"k", "v"}}).error(),
              errc::not_admitted);
    EXPECT_EQ(h.meta_spy().total(), m0);
    EXPECT_EQ(h.stream_spy().mutations(), s0);
    const auto after = c->snapshot();
    EXPECT_EQ(after.root_version, snap.root_version);
    EXPECT_EQ(after.mark_delete, snap.mark_delete);
}

TEST(LedgerAdmission, UnsupportedSemanticsFailBeforeAnyMutationOrStorageOp) {
    harness h;
    auto& l = h.open();
    h.append_n(3);
    auto c = *l->open_cursor("s", initial_position::earliest());
    const auto m0 = h.meta_spy().total();
    const auto a0 = h.stream_spy().appends.load();
    const auto r0 = h.stream_spy().reads.load();
    std::string p = "x";
    auto bytes = std::as_bytes(std::span(p.data(), p.size()));
    EXPECT_EQ(l->append_sync(bytes, append_options{.deliver_at = 5}).error(), errc::unsupported);
    EXPECT_EQ(l->append_sync(bytes, append_options{.txn_id = 7}).error(), errc::unsupported);
    EXPECT_EQ(
        l->open_cursor("r", initial_position::earliest(), subscription_options{.replicated = true})
            .error(),
        errc::unsupported);
    EXPECT_EQ(l->open_cursor("t", initial_position::earliest(),
                             subscription_options{.transactional = true})
                  .error(),
              errc::unsupported);
    EXPECT_EQ(l->open_cursor("d", initial_position::earliest(),
                             subscription_options{.delayed_delivery = true})
                  .error(),
              errc::unsupported);
    EXPECT_EQ(c->ack_in_transaction(1, c->current_fence(), 0).error(), errc::unsupported);
    EXPECT_EQ(h.meta_spy().total(), m0);
    EXPECT_EQ(h.stream_spy().appends.load(), a0);
    EXPECT_EQ(h.stream_spy().reads.load(), r0);
    EXPECT_EQ(l->info().end, 3U);
    EXPECT_EQ(l->cursor_names(), (std::vector<std::string>{"s"}));
}

TEST(LedgerAdmission, ClosedAndFencedLedgerAdmitNothing) {
    harness h;
    auto& l = h.open();
    h.append_n(2);
    auto c = *l->open_cursor("s", initial_position::earliest());
    // Lose the owner session: the next CAS fails check_session and fences the ledger.
    ASSERT_TRUE(meta::close_session_sync(h.meta(), h.env().owner).has_value());
    auto r = c->ack_sync(c->current_fence(), 0);
    ASSERT_FALSE(r.has_value());
    EXPECT_EQ(l->state(), ledger_state::fenced);
    const auto m0 = h.meta_spy().total();
    const auto s0 = h.stream_spy().mutations();
    EXPECT_EQ(c->ack_sync(c->current_fence(), 1).error(), errc::owner_fenced);
    EXPECT_EQ(l->append_sync({}, {}).error(), errc::owner_fenced);
    EXPECT_EQ(l->trim().error(), errc::owner_fenced);
    EXPECT_EQ(c->read(10).error(), errc::owner_fenced);
    EXPECT_EQ(h.meta_spy().total(), m0);
    EXPECT_EQ(h.stream_spy().mutations(), s0);
    ASSERT_TRUE(l->close().has_value());
    EXPECT_EQ(l->trim().error(), errc::closed);
}

TEST(LedgerRecords, RoundTripAndEveryByteFlipFailsClosed) {
    format::retention_root r;
    r.owner = 7;
    r.claim_epoch = 3;
    r.start = 10;
    r.floor = 12;
    r.trim = format::pending_trim{20, {eviction{"c", 2, 5, 20, 4}}};
    r.policy = retention_policy{.time_ms = -1, .size_bytes = 100, .backlog_limit_entries = 9};
    r.has_trimmed_time = true;
    r.trimmed_max_time = -5;
    r.history = {eviction{"d", 1, 0, 3, 1}};
    const std::string bytes = format::encode(r);
    auto back = format::decode_retention(bytes);
    ASSERT_TRUE(back.has_value());
    EXPECT_EQ(*back, r);
    for (std::size_t i = 0; i < bytes.size(); ++i) {
        for (int bit = 0; bit < 8; ++bit) {
            std::string m = bytes;
            m[i] = static_cast<char>(m[i] ^ (1 << bit));
            EXPECT_FALSE(format::decode_retention(m).has_value()) << i << ":" << bit;
        }
    }
    for (std::size_t n = 0; n < bytes.size(); ++n) {
        EXPECT_FALSE(format::decode_retention(bytes.substr(0, n)).has_value());
    }
    format::registry_record g{5, 5, format::topic_state::live};
    EXPECT_EQ(*format::decode_registry(format::encode(g)), g);
    format::activity_record a{{{"a", 1}, {"b", -2}}};
    EXPECT_EQ(*format::decode_activity(format::encode(a)), a);
    EXPECT_EQ(format::unescape_name(cursor::escape_name("a/b c")), "a/b c");
}

}  // namespace
}  // namespace nereus::ledger::test
