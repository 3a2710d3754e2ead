// Model-based test: random sequences of individual / cumulative / batch-index acks, reset,
// clear, skip, properties, delete + recreate and crashes, against a tiny reference model; the
// whole observable state is compared after every step. A crash step runs one operation with a
// crash injected at one of its persistence steps (meta multi k failed before apply, applied with
// the reply lost, or replied and then the process died; the object store's file system dying
// mid snapshot put or failing its fsync), then restarts by kill or by (torn) power loss of the
// object store and reopens the metadata store. Run on both metadata backends (RocksDB is
// closed and reopened at each crash) at spill threshold 0 and "infinite".

#include "nereus/meta/fault_store.h"

#include <gtest/gtest.h>

#include "unit/cursor/support/harness.h"
#include <array>
#include <cstdio>
#include <rapidcheck.h>
#include <string>
#include <tuple>
#include <vector>

namespace nereus::cursor::test {
namespace {

constexpr offset n_entries = 24;
constexpr std::uint32_t batch = 4;  // every entry is a batch of 4
constexpr std::uint8_t untouched = 0xf;

// A value in [lo, hi) drawn uniformly: rc::gen::inRange scales the range with the test's size,
// which would keep the step kinds of the first half of the cases near 0 (no crashes).
template <class T>
T uniform(T lo, T hi) {
    return *rc::gen::resize(100, rc::gen::inRange<T>(lo, hi));
}

struct model {
    std::vector<std::uint8_t> remaining = std::vector<std::uint8_t>(n_entries, untouched);
    property_map props;
    std::uint64_t generation = 1;
    std::uint64_t epoch = 1;

    offset mdo() const {
        offset m = 0;
        while (m < n_entries && remaining[m] == 0) {
            ++m;
        }
        return m;
    }
    void ack_prefix(offset e) {  // everything below e
        for (offset x = 0; x < e; ++x) {
            remaining[x] = 0;
        }
    }
    void reset_to(offset m) {
        for (offset x = 0; x < n_entries; ++x) {
            remaining[x] = x < m ? 0 : untouched;
        }
        ++epoch;
    }
};

// True when the cursor's whole observable state equals the model's.
bool matches(const cursor& c, const model& m) {
    const auto s = c.snapshot();
    if (s.generation != m.generation || s.epoch != m.epoch || s.mark_delete != m.mdo() ||
        s.properties != m.props) {
        return false;
    }
    std::uint64_t backlog = 0;
    for (offset x = 0; x < n_entries; ++x) {
        const std::uint8_t want = m.remaining[x];
        if (c.is_acked(x) != (want == 0)) {
            return false;
        }
        auto rem = c.remaining(x);
        if (want == 0 || want == untouched) {
            if (rem.has_value()) {
                return false;
            }
        } else if (!rem.has_value() || rem->words().size() != 1U ||
                   rem->words()[0] != std::uint64_t{want}) {
            return false;
        }
        backlog += want != 0 ? 1 : 0;
    }
    return c.backlog() == backlog;
}

void compare(const cursor& c, const model& m) {
    RC_ASSERT(matches(c, m));
}

// One operation with its generated arguments.
struct step {
    int kind = 0;  // 0..11 as in run_op
    offset x = 0;
    std::uint32_t mask = 1;
    std::uint32_t idx = 0;
    offset to = 0;
    std::uint64_t n = 0;
    bool put = true;
    int serial = 0;
};

step gen_step(int kind, int serial) {
    step s;
    s.kind = kind;
    s.serial = serial;
    s.x = uniform<offset>(0, n_entries);
    switch (kind) {
        case 2:
        case 3:
            s.mask = uniform<std::uint32_t>(1, 16);
            break;
        case 5:
            s.idx = uniform<std::uint32_t>(0, batch);
            break;
        case 6:
            s.to = uniform<offset>(0, n_entries + 1);
            break;
        case 8:
            s.n = uniform<std::uint64_t>(0, 6);
            break;
        case 9:
            s.put = uniform(0, 2) == 0;
            break;
        default:
            break;
    }
    return s;
}

// The model after `s` succeeded.
model expect(model m, const step& s, const fence& f) {
    switch (s.kind) {
        case 0:
        case 1:
            m.remaining[s.x] = 0;
            break;
        case 2:
        case 3:
            if (s.x >= m.mdo()) {
                m.remaining[s.x] &= static_cast<std::uint8_t>(~s.mask & 0xfU);
            }
            break;
        case 4:
            m.ack_prefix(s.x + 1);
            break;
        case 5:
            if (s.x >= m.mdo()) {
                m.ack_prefix(s.x);
                m.remaining[s.x] &= static_cast<std::uint8_t>(~((2U << s.idx) - 1) & 0xfU);
            }
            break;
        case 6:
            m.reset_to(s.to);
            break;
        case 7:
            m.reset_to(n_entries);
            break;
        case 8: {
            offset pos = m.mdo();
            std::uint64_t left = s.n;
            while (pos < n_entries && left > 0) {
                if (m.remaining[pos] != 0) {
                    --left;
                }
                ++pos;
            }
            m.ack_prefix(pos);
            ++m.epoch;
            break;
        }
        case 9: {
            const std::string key = "k" + std::to_string(s.x % 3);
            if (s.put) {
                m.props[key] = std::to_string(s.serial);
            } else {
                m.props.erase(key);
            }
            break;
        }
        case 11:
            m.remaining.assign(n_entries, untouched);
            m.props.clear();
            m.generation += 1;
            m.epoch = 1;
            break;
        default:  // 10: a late ack changes nothing
            (void)f;
            break;
    }
    return m;
}

// Runs `s` on `c` (delete + recreate replaces `c`). True when the cursor confirmed it (every
// request of the step completed ok); false when a request failed (injected faults).
bool run_op(harness& h,
            std::shared_ptr<cursor>& c,
            const step& s,
            const fence& f,
            const std::string& name) {
    auto okay = [](const result<op_result>& r) {
        return r.has_value();
    };
    switch (s.kind) {
        case 0:
        case 1:
            return okay(ack_sync(*c, f, s.x));
        case 2:
        case 3: {
            auto bits = batch_bits::none_set(batch);
            for (std::uint32_t b = 0; b < batch; ++b) {
                if ((s.mask >> b) & 1U) {
                    bits.set(b);
                }
            }
            return okay(ack_batch_index_sync(*c, f, s.x, bits));
        }
        case 4:
            return okay(ack_cumulative_sync(*c, f, s.x));
        case 5:
            return okay(ack_cumulative_sync(*c, f, s.x, s.idx, batch));
        case 6:
            return okay(reset_sync(*c, f, reset_target::to_offset(s.to)));
        case 7:
            return okay(clear_backlog_sync(*c, f));
        case 8:
            return okay(skip_sync(*c, f, s.n));
        case 9: {
            const std::string key = "k" + std::to_string(s.x % 3);
            return okay(s.put ? put_property_sync(*c, f, key, std::to_string(s.serial))
                              : remove_property_sync(*c, f, key));
        }
        case 10: {  // a late ack from an older epoch changes nothing
            if (f.epoch > 1) {
                auto r = ack_sync(*c, fence{f.generation, f.epoch - 1}, s.x);
                RC_ASSERT(r.has_value());
                RC_ASSERT(r->status == ack_status::stale_epoch);
            }
            return true;
        }
        case 11: {  // delete + recreate (Earliest)
            if (!okay(remove_sync(*c, f))) {
                return false;
            }
            auto n =
                create_sync(h.env(), harness::id(name), initial_position::earliest(), h.options());
            if (!n) {
                return false;
            }
            c = *n;
            return true;
        }
        default:
            return true;
    }
}

// Where the process dies during an operation (a crash point), and how it restarts.
enum class crash_point : int {
    meta_before,  // the k-th meta multi of the op is never applied
    meta_after,   // the k-th multi is applied (durable), its reply never arrives
    meta_reply,   // the k-th multi's reply arrives, then the process dies (object GC fails)
    object_torn,  // the object store's file system dies after n more bytes (mid snapshot put)
    object_sync,  // an object fsync fails (the snapshot put fails), then the process dies
    none,         // the op completes, then the process dies
};
constexpr int crash_point_count = 6;

enum class restart : int { kill, power_loss, torn_power_loss };

// Crash steps run, per crash point and outcome (confirmed / failed, not applied / failed,
// applied), over one test's cases: printed, and checked to include failures.
using crash_stats = std::array<std::array<int, 3>, crash_point_count>;

// One injected crash: where, which multi of the op (k), how the process restarts.
struct crash_case {
    crash_point point = crash_point::none;
    std::uint64_t k = 0;
    restart how = restart::kill;
    std::uint64_t seed = 0;        // torn power loss
    std::uint64_t torn_bytes = 0;  // object_torn: bytes written before the file system dies
};

struct crash_result {
    std::string error;   // empty = the checks held
    bool fired = false;  // the crash point was reached (else nothing was restarted)
    int outcome = 0;     // 0 confirmed, 1 failed and not applied, 2 failed and applied
};

// Runs `s` with the crash `cc` injected at one persistence step. When it fired: kills the
// process (drops the handle, restarts the object store's file system as `cc.how` says, reopens
// the metadata store), reopens the cursor and checks that a confirmed op survived and an
// unconfirmed one is either wholly applied or not at all (nothing unconfirmed reported beyond
// the op in flight, no rewind behind the confirmed state). When it did not fire the op ran
// normally and must have been confirmed. Updates `m` to what survived.
crash_result crash_and_check(harness& h,
                             std::shared_ptr<cursor>& c,
                             model& m,
                             const step& s,
                             const std::string& name,
                             const crash_case& cc) {
    crash_result res;
    const fence f = c->current_fence();
    const model after = expect(m, s, f);
    fault_file_system& fs = h.fs();
    const auto fired_before = h.faults().fired();
    switch (cc.point) {
        case crash_point::meta_before:
            h.faults().add(meta::fault_rule{.calls = meta::call_kind::multi,
                                            .skip = cc.k,
                                            .action = meta::fault_action::fail_before,
                                            .ec = make_error_code(meta::errc::unavailable),
                                            .then_crash = true});
            break;
        case crash_point::meta_after:
            h.faults().add(meta::fault_rule{.calls = meta::call_kind::multi,
                                            .skip = cc.k,
                                            .action = meta::fault_action::fail_after,
                                            .then_crash = true});
            break;
        case crash_point::meta_reply:
            h.faults().add(meta::fault_rule{.calls = meta::call_kind::multi,
                                            .skip = cc.k,
                                            .action = meta::fault_action::pass,
                                            .then_crash = true,
                                            .on_fire = [&fs] {
                                                fs.crash_now();
                                            }});
            break;
        case crash_point::object_torn:
            fs.crash_after_bytes(cc.torn_bytes);
            break;
        case crash_point::object_sync:
            fs.fail_syncs("", 1);
            break;
        case crash_point::none:
            break;
    }
    const bool confirmed = run_op(h, c, s, f, name);
    // none: a plain crash after the op. A failed object fsync always fails the op.
    res.fired = cc.point == crash_point::none || h.faults().fired() != fired_before ||
                fs.crashed() || !confirmed;
    if (!res.fired) {
        // Never reached: the op ran normally. Disarm the faults (a restart of the in-memory file
        // system that keeps everything clears them) and go on without reopening.
        h.faults().clear();
        c.reset();
        h.process_crash_objects();
        auto r = h.open(name);
        if (!r) {
            res.error = "reopen after a crash point not reached: " + r.error().message();
            return res;
        }
        c = *r;
        if (!matches(*c, after)) {
            res.error = "an op that ran without a fault does not match the model";
        }
        m = after;
        return res;
    }
    c.reset();
    switch (cc.how) {
        case restart::kill:
            h.process_crash_objects();
            break;
        case restart::power_loss:
            h.power_loss_objects();
            break;
        case restart::torn_power_loss:
            h.torn_power_loss_objects(cc.seed);
            break;
    }
    h.crash_meta();
    auto r = h.open(name);
    if (!r && r.error() == errc::cursor_deleted && s.kind == 11) {
        // The delete of delete + recreate survived, the recreate did not run: recreate now.
        r = create_sync(h.env(), harness::id(name), initial_position::earliest(), h.options());
    }
    if (!r) {
        res.error = "recovery failed: " + r.error().message();
        return res;
    }
    c = *r;
    if (confirmed) {
        if (!matches(*c, after)) {
            res.error = "a confirmed op was lost";
        }
        m = after;
    } else if (matches(*c, m)) {
        res.outcome = 1;
    } else if (matches(*c, after)) {
        m = after;
        res.outcome = 2;
    } else {
        res.error = "recovered state is neither the confirmed state nor that plus the op";
    }
    return res;
}

// The random crash step of the model test.
void crash_during(harness& h,
                  std::shared_ptr<cursor>& c,
                  model& m,
                  const step& s,
                  const std::string& name,
                  crash_stats& stats) {
    crash_case cc;
    cc.point = static_cast<crash_point>(uniform(0, crash_point_count));
    // Which multi of the op: most ops write one; delete + recreate and retries write two.
    cc.k = uniform(0, 4) < 3 ? 0 : 1;
    cc.how = static_cast<restart>(uniform(0, 3));
    cc.seed = uniform<std::uint64_t>(0, 1U << 20);
    cc.torn_bytes = uniform<std::uint64_t>(0, 600);
    const crash_result res = crash_and_check(h, c, m, s, name, cc);
    RC_ASSERT(res.error.empty());
    ++stats[static_cast<int>(cc.point)][res.outcome];
}

void run_model(meta_kind kind, std::size_t spill) {
    // One store for every case (each case has its own cursor), so that the cases pay for
    // RocksDB reopens at crashes only, not for creating a store each.
    harness h(kind);
    h.options().spill_threshold_bytes = spill;
    h.stream().append_n(n_entries);
    int cases = 0;
    crash_stats stats{};
    const auto prop = [&h, &cases, &stats] {
        std::string name = "m";  // (not "m" + to_string: g++ 12 -Wrestrict false positive)
        name += std::to_string(cases++);
        auto c = h.create(name);
        RC_ASSERT(c != nullptr);
        model m;
        const int steps = *rc::gen::inRange(1, 30);
        for (int i = 0; i < steps; ++i) {
            const int kind_of_step = uniform(0, 14);
            if (kind_of_step >= 12) {  // an op with a crash injected at one of its steps
                static constexpr int ops[] = {0, 2, 4, 5, 6, 7, 8, 9, 11};
                const int op = ops[uniform<std::size_t>(0, std::size(ops))];
                crash_during(h, c, m, gen_step(op, i), name, stats);
            } else {
                const step s = gen_step(kind_of_step, i);
                const fence f = c->current_fence();
                RC_ASSERT(run_op(h, c, s, f, name));
                m = expect(m, s, f);
            }
            compare(*c, m);
        }
    };
    ASSERT_TRUE(rc::check(prop));
    static constexpr const char* point_names[] = {"meta_before", "meta_after",  "meta_reply",
                                                  "object_torn", "object_sync", "none"};
    int failed = 0;
    for (int p = 0; p < crash_point_count; ++p) {
        std::printf(
            "crash point %-12s confirmed %4d  failed, not applied %4d  failed, applied %4d\n",
            point_names[p], stats[p][0], stats[p][1], stats[p][2]);
        failed += stats[p][1] + stats[p][2];
    }
    // The injected crashes did interrupt operations (hundreds of crash steps run per test).
    EXPECT_GT(failed, 0);
}

class CursorModel : public ::testing::TestWithParam<std::tuple<meta_kind, std::size_t>> {};

TEST_P(CursorModel, RandomOperationsMatchReferenceModel) {
    run_model(std::get<0>(GetParam()), std::get<1>(GetParam()));
}

// Deterministic sweep on RocksDB: every crash-injected op kind, with the crash at every
// persistence step it reaches — meta multi 0 and 1, each failed before apply, applied with the
// reply lost, and replied then killed; the object store's file system dying after 0, 1, 40 and
// 400 bytes of a snapshot put; a failed object fsync — rotating kill, power loss and torn power
// loss. A crash point the op never reaches costs no restart.
class CursorCrashSweep : public ::testing::TestWithParam<std::size_t> {};

TEST_P(CursorCrashSweep, EveryPersistenceStepOfEveryOp) {
    harness h(meta_kind::rocksdb);
    h.options().spill_threshold_bytes = GetParam();
    h.stream().append_n(n_entries);
    const std::string name = "sweep";
    auto c = h.create(name);
    ASSERT_TRUE(c != nullptr);
    model m;
    std::vector<crash_case> cases;
    for (auto point :
         {crash_point::meta_before, crash_point::meta_after, crash_point::meta_reply}) {
        for (std::uint64_t k : {0, 1}) {
            cases.push_back(crash_case{.point = point, .k = k});
        }
    }
    for (std::uint64_t bytes : {0, 1, 40, 400}) {
        cases.push_back(crash_case{.point = crash_point::object_torn, .torn_bytes = bytes});
    }
    cases.push_back(crash_case{.point = crash_point::object_sync});
    int serial = 0;
    int fired = 0;
    int failed = 0;
    for (int op : {0, 2, 4, 5, 6, 7, 8, 9, 11}) {
        for (auto cc : cases) {
            ++serial;
            cc.how = static_cast<restart>(serial % 3);
            cc.seed = static_cast<std::uint64_t>(serial);
            // Arguments that make each op change the state most of the time: acks spread over
            // the stream, resets alternating between the start and the middle.
            step s;
            s.kind = op;
            s.serial = serial;
            s.x = static_cast<offset>((serial * 7) % n_entries);
            s.mask = 1U + static_cast<std::uint32_t>(serial % 15);
            s.idx = static_cast<std::uint32_t>(serial % batch);
            s.to = serial % 2 == 0 ? 0 : n_entries / 2;
            s.n = 1 + static_cast<std::uint64_t>(serial % 3);
            s.put = serial % 3 != 0;
            const crash_result r = crash_and_check(h, c, m, s, name, cc);
            ASSERT_TRUE(r.error.empty())
                << "op " << op << " crash point " << static_cast<int>(cc.point) << " k " << cc.k
                << " bytes " << cc.torn_bytes << ": " << r.error;
            ASSERT_TRUE(matches(*c, m));
            fired += r.fired ? 1 : 0;
            failed += r.outcome != 0 ? 1 : 0;
        }
    }
    std::printf("crash sweep spill %zu: %d cases, %d reached their crash point, %d interrupted\n",
                GetParam(), serial, fired, failed);
    EXPECT_GT(failed, 0);
}

INSTANTIATE_TEST_SUITE_P(Cursor,
                         CursorCrashSweep,
                         ::testing::Values(std::size_t{0}, ~std::size_t{0}),
                         [](const auto& info) {
                             return std::string(info.param == 0 ? "Spill0" : "SpillInfinite");
                         });

INSTANTIATE_TEST_SUITE_P(
    Cursor,
    CursorModel,
    ::testing::Combine(::testing::Values(meta_kind::memory, meta_kind::rocksdb),
                       ::testing::Values(std::size_t{0}, ~std::size_t{0})),
    [](const auto& info) {
        return std::string(std::get<0>(info.param) == meta_kind::memory ? "Memory" : "RocksDB") +
               (std::get<1>(info.param) == 0 ? "Spill0" : "SpillInfinite");
    });

}  // namespace
}  // namespace nereus::cursor::test
