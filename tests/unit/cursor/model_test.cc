// Model-based test: random sequences of individual / cumulative / batch-index acks, reset,
// clear, skip, properties, delete + recreate, crash (drop + reopen) and power loss of the
// object store, against a tiny reference model; the whole observable state is compared after
// every step. Run on both metadata backends at spill threshold 0 and "infinite".

#include <gtest/gtest.h>

#include "unit/cursor/support/harness.h"
#include <rapidcheck.h>
#include <tuple>
#include <vector>

namespace nereus::cursor::test {
namespace {

constexpr offset n_entries = 24;
constexpr std::uint32_t batch = 4;  // every entry is a batch of 4
constexpr std::uint8_t untouched = 0xf;

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

void compare(const cursor& c, const model& m) {
    const auto s = c.snapshot();
    RC_ASSERT(s.generation == m.generation);
    RC_ASSERT(s.epoch == m.epoch);
    RC_ASSERT(s.mark_delete == m.mdo());
    RC_ASSERT(s.properties == m.props);
    std::uint64_t backlog = 0;
    for (offset x = 0; x < n_entries; ++x) {
        const std::uint8_t want = m.remaining[x];
        RC_ASSERT(c.is_acked(x) == (want == 0));
        auto rem = c.remaining(x);
        if (want == 0 || want == untouched) {
            RC_ASSERT(!rem.has_value());
        } else {
            RC_ASSERT(rem.has_value());
            RC_ASSERT(rem->words().size() == 1U);
            RC_ASSERT(rem->words()[0] == std::uint64_t{want});
        }
        backlog += want != 0 ? 1 : 0;
    }
    RC_ASSERT(c.backlog() == backlog);
}

void run_model(meta_kind kind, std::size_t spill) {
    const auto prop = [kind, spill] {
        harness h(kind);
        h.options().spill_threshold_bytes = spill;
        h.stream().append_n(n_entries);
        auto c = h.create("m");
        RC_ASSERT(c != nullptr);
        model m;
        const int steps = *rc::gen::inRange(1, 30);
        for (int i = 0; i < steps; ++i) {
            const int kind_of_step = *rc::gen::inRange(0, 13);
            const offset x = *rc::gen::inRange<offset>(0, n_entries);
            const fence f = c->current_fence();
            switch (kind_of_step) {
                case 0:
                case 1: {  // individual ack
                    auto r = ack_sync(*c, f, x);
                    RC_ASSERT(r.has_value());
                    m.remaining[x] = 0;
                    break;
                }
                case 2:
                case 3: {  // batch-index ack
                    const auto mask = *rc::gen::inRange<std::uint32_t>(1, 16);
                    auto bits = batch_bits::none_set(batch);
                    for (std::uint32_t b = 0; b < batch; ++b) {
                        if ((mask >> b) & 1U) {
                            bits.set(b);
                        }
                    }
                    RC_ASSERT(ack_batch_index_sync(*c, f, x, bits).has_value());
                    if (x >= m.mdo()) {
                        m.remaining[x] &= static_cast<std::uint8_t>(~mask & 0xfU);
                    }
                    break;
                }
                case 4: {  // cumulative ack (whole entry)
                    RC_ASSERT(ack_cumulative_sync(*c, f, x).has_value());
                    m.ack_prefix(x + 1);
                    break;
                }
                case 5: {  // cumulative ack into a batch
                    const auto idx = *rc::gen::inRange<std::uint32_t>(0, batch);
                    RC_ASSERT(ack_cumulative_sync(*c, f, x, idx, batch).has_value());
                    if (x >= m.mdo()) {
                        m.ack_prefix(x);
                        m.remaining[x] &= static_cast<std::uint8_t>(~((2U << idx) - 1) & 0xfU);
                    }
                    break;
                }
                case 6: {  // reset to an offset (0..end)
                    const offset to = *rc::gen::inRange<offset>(0, n_entries + 1);
                    RC_ASSERT(reset_sync(*c, f, reset_target::to_offset(to)).has_value());
                    m.reset_to(to);
                    break;
                }
                case 7: {  // clear backlog
                    RC_ASSERT(clear_backlog_sync(*c, f).has_value());
                    m.reset_to(n_entries);
                    break;
                }
                case 8: {  // skip n unacked entries
                    const auto n = *rc::gen::inRange<std::uint64_t>(0, 6);
                    RC_ASSERT(skip_sync(*c, f, n).has_value());
                    offset pos = m.mdo();
                    std::uint64_t left = n;
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
                case 9: {  // properties
                    const std::string key = "k" + std::to_string(x % 3);
                    if (*rc::gen::inRange(0, 2) == 0) {
                        RC_ASSERT(put_property_sync(*c, f, key, std::to_string(i)).has_value());
                        m.props[key] = std::to_string(i);
                    } else {
                        RC_ASSERT(remove_property_sync(*c, f, key).has_value());
                        m.props.erase(key);
                    }
                    break;
                }
                case 10: {  // a late ack from an older epoch changes nothing
                    if (f.epoch > 1) {
                        auto r = ack_sync(*c, fence{f.generation, f.epoch - 1}, x);
                        RC_ASSERT(r.has_value());
                        RC_ASSERT(r->status == ack_status::stale_epoch);
                    }
                    break;
                }
                case 11: {  // delete + recreate (Earliest)
                    RC_ASSERT(remove_sync(*c, f).has_value());
                    c = h.create("m");
                    RC_ASSERT(c != nullptr);
                    m.remaining.assign(n_entries, untouched);
                    m.props.clear();
                    m.generation += 1;
                    m.epoch = 1;
                    break;
                }
                case 12: {  // crash: drop without close, and sometimes lose power on objects
                    c.reset();
                    if (*rc::gen::inRange(0, 2) == 0) {
                        h.power_loss_objects();
                    }
                    h.crash_meta();
                    auto r = h.open("m");
                    RC_ASSERT(r.has_value());
                    c = *r;
                    break;
                }
                default:
                    break;
            }
            compare(*c, m);
        }
    };
    ASSERT_TRUE(rc::check(prop));
}

class CursorModel : public ::testing::TestWithParam<std::tuple<meta_kind, std::size_t>> {};

TEST_P(CursorModel, RandomOperationsMatchReferenceModel) {
    run_model(std::get<0>(GetParam()), std::get<1>(GetParam()));
}

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
