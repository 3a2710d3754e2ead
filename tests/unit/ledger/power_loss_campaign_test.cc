// The power-loss campaign of the ledger (issue 8): the same campaign as tests/crash/run, at the
// storage layer and in-process. A ledger with cursors runs a mixed load — asynchronous appends
// (single entries and batches of 3), individual and batch-index acks on cursor "ind",
// cumulative acks on cursor "cum", occasional trims — while the file-system seam
// (fault_file_system) is set to crash after a random number of written bytes. Then the
// "machine" restarts: page cache kept (process crash), every unsynced byte and directory entry
// dropped (power loss), or a random part of them kept (torn power loss); the ledger is reopened
// and checked against a model of what was confirmed:
//   - every append whose completion succeeded is present at its offset with its payload; the
//     retained range is dense and holds only payloads that were sent (never garbage);
//   - every ack whose completion succeeded (status ok / already_acked) is still acked, batch
//     indices included; nothing that was never acked is acked; a fresh reader is delivered
//     exactly [MDO, end) minus the acked entries;
//   - a cumulative ack's MDO is between the last confirmed and the last sent;
//   - no cursor is behind the first retained offset (the retention floor).
// The metadata store is RocksDB on the real disk (not behind the seam); the stream log and the
// snapshot objects (cursor spills, forced here with spill threshold 0 on every other seed) are.
//
// NEREUS_LEDGER_POWER_LOSS_SEEDS=N (default 24, each 12 crash rounds) runs more; `make
// power-loss-long` runs 200 seeds. NEREUS_LEDGER_POWER_LOSS_FIRST_SEED replays one.

#include <gtest/gtest.h>

#include "support/harness.h"
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <thread>

namespace nereus::ledger::test {
namespace {

using cursor::initial_position;

// Outstanding asynchronous operations; wait() is bounded.
class pending_ops {
public:
    void add() {
        std::lock_guard l(mu_);
        ++n_;
    }
    void done() {
        std::lock_guard l(mu_);
        if (--n_ == 0) {
            cv_.notify_all();
        }
    }
    bool wait(std::chrono::seconds limit) {
        std::unique_lock l(mu_);
        return cv_.wait_for(l, limit, [this] { return n_ == 0; });
    }

private:
    std::mutex mu_;
    std::condition_variable cv_;
    int n_ = 0;
};

struct campaign_model {
    std::mutex mu;
    std::map<offset, std::string> appended;     // confirmed appends: offset -> payload
    std::map<std::string, std::uint32_t> sent;  // every payload sent -> its batch size
    // Cursor "ind": confirmed whole-entry acks, confirmed batch-index acks, and acks sent
    // without a confirmation (either outcome is allowed for those entries).
    offset ind_mdo = 0;  // everything below was acked (confirmed)
    std::set<offset> ind_acked;
    std::map<offset, std::set<std::uint32_t>> ind_idx;
    std::set<offset> ind_maybe;
    // Cursor "cum": MDO must end in [cum_confirmed, cum_sent].
    offset cum_confirmed = 0;
    offset cum_sent = 0;
    std::uint64_t confirmed_appends = 0;
    std::uint64_t confirmed_acks = 0;
};

std::string payload_for(std::uint64_t seed, int round, int i, std::uint32_t batch) {
    char buf[96];
    std::snprintf(buf, sizeof buf, "s%llu-r%d-%d-b%u", static_cast<unsigned long long>(seed), round,
                  i, batch);
    return buf;
}

bool confirmed(const result<cursor::op_result>& r) {
    return r &&
           (r->status == cursor::ack_status::ok || r->status == cursor::ack_status::already_acked);
}

// Checks the reopened ledger against the model, then makes the model exact again (acks and
// appends sent without confirmation are resolved by what recovery kept).
void check_and_resolve(harness& h, campaign_model& m, const std::string& where) {
    SCOPED_TRACE(where);
    auto& l = h.ledger();
    ASSERT_TRUE(l);
    const auto info = l->info();
    auto audit = *l->find_cursor("audit");
    auto ind = *l->find_cursor("ind");
    auto cum = *l->find_cursor("cum");

    // No cursor behind the floor.
    for (const auto& c : {audit, ind, cum}) {
        EXPECT_GE(c->mark_delete(), info.start) << c->name() << " behind the retention floor";
        EXPECT_GE(c->mark_delete(), info.physical_first) << c->name();
    }

    // Appends: the audit cursor never acks during the load, so it reads everything since the
    // last check; dense, in order, every payload one that was sent, every confirmed one intact.
    const offset from = audit->mark_delete();
    offset next = from;
    std::map<offset, std::pair<std::string, std::uint32_t>> stored;
    audit->rewind();
    for (int guard = 0; guard < 100000; ++guard) {
        auto r = audit->read(500);
        ASSERT_TRUE(r) << r.error().message();
        if (r->entries.empty()) {
            break;
        }
        for (const auto& e : r->entries) {
            ASSERT_EQ(e.at, next) << "the retained range is not dense";
            ++next;
            const std::string p(reinterpret_cast<const char*>(e.payload.data()), e.payload.size());
            auto s = m.sent.find(p);
            ASSERT_NE(s, m.sent.end()) << "garbage at offset " << e.at << ": '" << p << "'";
            EXPECT_EQ(s->second, e.batch_size) << "batch size changed at " << e.at;
            stored[e.at] = {p, e.batch_size};
        }
    }
    EXPECT_EQ(next, info.end) << "the audit cursor did not read up to the end";
    for (auto it = m.appended.lower_bound(from); it != m.appended.end(); ++it) {
        auto s = stored.find(it->first);
        ASSERT_NE(s, stored.end()) << "confirmed append at " << it->first << " lost";
        EXPECT_EQ(s->second.first, it->second) << "confirmed append at " << it->first << " changed";
    }

    // Cursor "ind".
    const offset ind_mdo = ind->mark_delete();
    EXPECT_GE(ind_mdo, std::min(m.ind_mdo, info.end)) << "ind: MDO went back";
    for (offset x = std::max(m.ind_mdo, info.start); x < info.end; ++x) {
        const bool acked = ind->is_acked(x);
        const bool was_confirmed = m.ind_acked.contains(x);
        const bool maybe = m.ind_maybe.contains(x);
        if (was_confirmed) {
            EXPECT_TRUE(acked) << "ind: confirmed ack of " << x << " lost";
            continue;
        }
        if (acked) {
            EXPECT_TRUE(maybe) << "ind: " << x << " acked but never acked by the load";
            continue;
        }
        auto idx = m.ind_idx.find(x);
        const auto rem = ind->remaining(x);
        if (idx != m.ind_idx.end()) {
            ASSERT_TRUE(rem.has_value()) << "ind: batch-index acks of " << x << " lost";
            const auto left = rem->indices();
            for (auto i : idx->second) {
                EXPECT_EQ(std::count(left.begin(), left.end(), i), 0)
                    << "ind: confirmed batch-index ack " << x << ":" << i << " lost";
            }
        } else if (rem && !maybe) {
            EXPECT_EQ(rem->indices().size(),
                      stored.contains(x) ? stored[x].second : rem->indices().size())
                << "ind: " << x << " partly acked but never acked by the load";
        }
    }
    // A fresh reader of each cursor gets exactly [MDO, end) - acked.
    for (const auto& c : {ind, cum}) {
        std::vector<offset> want;
        for (offset x = c->mark_delete(); x < info.end; ++x) {
            if (!c->is_acked(x)) {
                want.push_back(x);
            }
        }
        std::vector<offset> got;
        for (auto& [o, bits] : deliverable(*c)) {
            got.push_back(o);
        }
        EXPECT_EQ(got, want) << c->name() << ": redelivery set";
        EXPECT_EQ(c->backlog(), want.size()) << c->name();
    }

    // Cursor "cum".
    EXPECT_GE(cum->mark_delete(), std::min(m.cum_confirmed, info.end))
        << "cum: confirmed cumulative ack lost";
    EXPECT_LE(cum->mark_delete(), std::max(std::max(m.cum_sent, m.cum_confirmed), info.start))
        << "cum: MDO beyond every cumulative ack sent";

    // Resolve: recovery decided every unconfirmed operation; the model takes its answer.
    for (const auto& [o, ps] : stored) {
        m.appended[o] = ps.first;
    }
    m.ind_mdo = ind_mdo;
    m.ind_acked.clear();
    m.ind_idx.clear();
    m.ind_maybe.clear();
    for (offset x = ind_mdo; x < info.end; ++x) {
        if (ind->is_acked(x)) {
            m.ind_acked.insert(x);
        } else if (auto rem = ind->remaining(x)) {
            const auto left = rem->indices();
            const auto size = stored.contains(x) ? stored[x].second : 0;
            for (std::uint32_t i = 0; i < size; ++i) {
                if (std::count(left.begin(), left.end(), i) == 0) {
                    m.ind_idx[x].insert(i);
                }
            }
        }
    }
    m.cum_confirmed = cum->mark_delete();
    m.cum_sent = m.cum_confirmed;
}

struct seed_figures {
    std::uint64_t rounds = 0;
    std::uint64_t appends = 0;
    std::uint64_t acks = 0;
};

void run_seed(std::uint64_t seed, int rounds, seed_figures& fig) {
    std::mt19937_64 rng(seed);
    harness h;
    if (seed % 2 == 0) {
        h.options().cursor.spill_threshold_bytes = 0;  // every CAS through snapshot + deltas
    }
    h.open();
    ASSERT_TRUE(h.ledger());
    {
        auto& l = h.ledger();
        ASSERT_TRUE(l->open_cursor("audit", initial_position::earliest()));
        ASSERT_TRUE(l->open_cursor("ind", initial_position::earliest()));
        ASSERT_TRUE(l->open_cursor("cum", initial_position::earliest()));
    }
    campaign_model m;
    for (int round = 0; round < rounds; ++round) {
        const std::string where =
            "seed " + std::to_string(seed) + " round " + std::to_string(round);
        auto& fs = h.fs();
        const auto budget = rng() % 3;
        if (budget != 0) {
            fs.crash_after_bytes(rng() % 30000);
        }
        pending_ops pending;
        {
            auto l = h.ledger();
            auto ind = *l->find_cursor("ind");
            auto cum = *l->find_cursor("cum");
            const int ops = 40 + static_cast<int>(rng() % 200);
            for (int i = 0; i < ops && !fs.crashed(); ++i) {
                const auto dice = rng() % 100;
                if (dice < 55) {
                    const std::uint32_t batch = rng() % 3 == 0 ? 3 : 1;
                    const auto p = payload_for(seed, round, i, batch);
                    {
                        std::lock_guard g(m.mu);
                        m.sent[p] = batch;
                    }
                    pending.add();
                    l->append(std::as_bytes(std::span(p.data(), p.size())),
                              append_options{.publish_time = 1000 + i, .batch_size = batch},
                              [&m, &pending, p](result<message_id> r) {
                                  if (r) {
                                      std::lock_guard g(m.mu);
                                      m.appended[r->entry_id] = p;
                                      ++m.confirmed_appends;
                                  }
                                  pending.done();
                              });
                } else if (dice < 85) {
                    auto r = ind->read(4);
                    if (!r || r->entries.empty()) {
                        ind->rewind();
                        continue;
                    }
                    for (const auto& e : r->entries) {
                        if (rng() % 4 == 0) {
                            continue;  // left unacked
                        }
                        const offset at = e.at;
                        if (e.batch_size > 1 && rng() % 2 == 0) {
                            const std::uint32_t idx =
                                static_cast<std::uint32_t>(rng() % e.batch_size);
                            auto bits = cursor::batch_bits::none_set(e.batch_size);
                            bits.set(idx);
                            {
                                std::lock_guard g(m.mu);
                                m.ind_maybe.insert(at);
                            }
                            pending.add();
                            ind->ack_batch_index(
                                e.fence, at, bits,
                                [&m, &pending, at, idx](result<cursor::op_result> a) {
                                    if (confirmed(a)) {
                                        std::lock_guard g(m.mu);
                                        m.ind_idx[at].insert(idx);
                                        ++m.confirmed_acks;
                                    }
                                    pending.done();
                                });
                        } else {
                            {
                                std::lock_guard g(m.mu);
                                m.ind_maybe.insert(at);
                            }
                            pending.add();
                            ind->ack(e.fence, at, [&m, &pending, at](result<cursor::op_result> a) {
                                if (confirmed(a)) {
                                    std::lock_guard g(m.mu);
                                    m.ind_acked.insert(at);
                                    ++m.confirmed_acks;
                                }
                                pending.done();
                            });
                        }
                    }
                } else if (dice < 97) {
                    auto r = cum->read(1 + rng() % 8);
                    if (!r || r->entries.empty()) {
                        cum->rewind();
                        continue;
                    }
                    const auto& e = r->entries.back();
                    const offset at = e.at;
                    {
                        std::lock_guard g(m.mu);
                        m.cum_sent = std::max(m.cum_sent, at + 1);
                    }
                    pending.add();
                    cum->ack_cumulative(e.fence, at, std::nullopt, e.batch_size, {},
                                        [&m, &pending, at](result<cursor::op_result> a) {
                                            if (confirmed(a)) {
                                                std::lock_guard g(m.mu);
                                                m.cum_confirmed = std::max(m.cum_confirmed, at + 1);
                                                ++m.confirmed_acks;
                                            }
                                            pending.done();
                                        });
                } else {
                    (void)l->trim();  // may fail once the file system crashed
                }
            }
            if (!fs.crashed()) {
                fs.crash_now();
            }
            ASSERT_TRUE(pending.wait(std::chrono::seconds(60)))
                << where << ": operations still pending a minute after the crash";
        }
        const auto kind = rng() % 3;
        h.crash(kind == 0   ? harness::crash_kind::process
                : kind == 1 ? harness::crash_kind::power_loss
                            : harness::crash_kind::power_loss_torn,
                rng());
        h.open();
        ASSERT_TRUE(h.ledger()) << where << ": the ledger did not reopen";
        check_and_resolve(h, m, where);
        if (::testing::Test::HasFatalFailure() || ::testing::Test::HasNonfatalFailure()) {
            return;
        }
        ++fig.rounds;
        // The audit acks everything checked, so the floor can move and trims happen.
        auto audit = *h.ledger()->find_cursor("audit");
        const auto end = h.ledger()->info().end;
        if (end > 0) {
            auto a = audit->ack_cumulative_sync(audit->current_fence(), end - 1, std::nullopt, 1);
            ASSERT_TRUE(a) << a.error().message();
        }
    }
    fig.appends += m.confirmed_appends;
    fig.acks += m.confirmed_acks;
}

TEST(LedgerPowerLoss, ConfirmedAppendsAndAcksSurviveRandomCrashPoints) {
    const char* n = std::getenv("NEREUS_LEDGER_POWER_LOSS_SEEDS");
    const char* f = std::getenv("NEREUS_LEDGER_POWER_LOSS_FIRST_SEED");
    const std::uint64_t seeds = n != nullptr ? std::strtoull(n, nullptr, 10) : 24;
    const std::uint64_t first = f != nullptr ? std::strtoull(f, nullptr, 10) : 1;
    seed_figures fig;
    const auto t0 = std::chrono::steady_clock::now();
    for (std::uint64_t seed = first; seed < first + seeds; ++seed) {
        run_seed(seed, 12, fig);
        if (HasFailure()) {
            return;
        }
    }
    const double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf(
        "ledger power-loss campaign: seeds=%llu crashes=%llu confirmed appends=%llu "
        "confirmed acks=%llu violations=0 seconds=%.1f\n",
        static_cast<unsigned long long>(seeds), static_cast<unsigned long long>(fig.rounds),
        static_cast<unsigned long long>(fig.appends), static_cast<unsigned long long>(fig.acks),
        secs);
}

}  // namespace
}  // namespace nereus::ledger::test
