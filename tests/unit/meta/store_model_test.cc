// Model-based test: random multis against every backend must give exactly the results and the
// state of a plain std::map model (versions included).

#include "nereus/meta/errc.h"
#include "nereus/meta/sync.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "unit/meta/support/backends.h"
#include <array>
#include <map>
#include <memory>
#include <ostream>
#include <rapidcheck.h>
#include <string>
#include <vector>

namespace nereus::meta::test {
namespace {

using namespace std::chrono_literals;

// One generated op, resolved against the model state when the multi runs.
struct op_spec {
    int kind = 0;    // 0 check, 1 put, 2 erase, 3 check_session
    int key = 0;     // index into a small key space
    int expect = 0;  // 0 absent, 1 any_version, 2 the model's current version, 3 a stale version
    int owner = 0;   // put: 0 persistent, 1 live session, 2 dead session; check_session: 1/2
    int value = 0;
};

// rapidcheck finds this by name to print counterexamples.
void showValue(const op_spec& o, std::ostream& os) {  // NOLINT(readability-identifier-naming)
    static constexpr std::array<const char*, 4> kinds = {"check", "put", "erase", "check_session"};
    os << kinds.at(static_cast<std::size_t>(o.kind)) << "(k" << o.key << " expect=" << o.expect
       << " owner=" << o.owner << " value=" << o.value << ")";
}

// The reference semantics, as plain as possible.
struct model {
    std::map<std::string, record> data;
    version revision = 0;
    session_id live = no_session;
    session_id dead = no_session;

    version current(const std::string& key) const {
        auto it = data.find(key);
        return it == data.end() ? absent : it->second.ver;
    }

    result<multi_result> apply(const std::vector<op>& ops) {
        auto next = data;
        version rev = revision;
        multi_result res;
        res.versions.assign(ops.size(), absent);
        auto found = [&](const std::string& key) {
            auto it = next.find(key);
            return it == next.end() ? absent : it->second.ver;
        };
        auto conflict = [&](std::size_t i, version v) {
            multi_result c;
            c.versions.assign(ops.size(), absent);
            c.failed_op = i;
            c.versions[i] = v;
            return c;
        };
        for (std::size_t i = 0; i < ops.size(); ++i) {
            if (const auto* c = std::get_if<check>(&ops[i])) {
                const version f = found(c->key);
                const bool ok = c->expected == any_version ? f != absent : f == c->expected;
                if (!ok) {
                    return conflict(i, f);
                }
                res.versions[i] = f;
            } else if (const auto* p = std::get_if<put>(&ops[i])) {
                const version f = found(p->key);
                if (p->expected != any_version && f != p->expected) {
                    return conflict(i, f);
                }
                if (p->owner != no_session && p->owner != live) {
                    return nereus::error(errc::session_expired);
                }
                const session_id owner = f != absent ? next[p->key].owner : p->owner;
                next[p->key] = record{.value = p->value, .ver = ++rev, .owner = owner};
                res.versions[i] = rev;
            } else if (const auto* e = std::get_if<erase>(&ops[i])) {
                const version f = found(e->key);
                if (e->expected != any_version && f != e->expected) {
                    return conflict(i, f);
                }
                if (f != absent) {
                    next.erase(e->key);
                    ++rev;
                }
            } else if (const auto* s = std::get_if<check_session>(&ops[i])) {
                if (s->session != live) {
                    return conflict(i, absent);
                }
            }
        }
        data = std::move(next);
        revision = rev;
        res.applied = true;
        return res;
    }

    // Closing the live session deletes its keys in key order.
    void close_live() {
        for (auto it = data.begin(); it != data.end();) {
            if (it->second.owner == live) {
                it = data.erase(it);
                ++revision;
            } else {
                ++it;
            }
        }
    }
};

op resolve(const op_spec& o, const std::string& prefix, const model& m) {
    const std::string key = fmt::format("{}k{}", prefix, o.key);
    const version cur = m.current(key);
    version expected = absent;
    switch (o.expect) {
        case 1:
            expected = any_version;
            break;
        case 2:
            expected = cur;
            break;
        case 3:
            expected = m.revision + 1000;  // never a real version
            break;
        default:
            break;
    }
    const session_id owner = o.owner == 1 ? m.live : o.owner == 2 ? m.dead : no_session;
    switch (o.kind) {
        case 0:
            return check{.key = key, .expected = expected};
        case 1:
            return put{.key = key,
                       .value = fmt::format("v{}", o.value),
                       .expected = expected,
                       .owner = owner};
        case 2:
            return erase{.key = key, .expected = expected};
        default:
            return check_session{.session = o.owner == 1 ? m.live : m.dead};
    }
}

void expect_same_state(store& s, const std::string& prefix, const model& m) {
    auto listed = list_sync(s, prefix + "k");
    RC_ASSERT(listed.has_value());
    std::vector<keyed_record> want;
    for (const auto& [key, rec] : m.data) {
        want.push_back(keyed_record{.key = key, .rec = rec});
    }
    RC_ASSERT(*listed == want);
}

class StoreModel : public ::testing::TestWithParam<backend_kind> {};

TEST_P(StoreModel, RandomMultisMatchAMapModel) {
    // The rocksdb store is shared by all cases (each in its own key prefix) to keep fsyncs few.
    store_holder shared(GetParam());
    int case_no = 0;
    const auto property = [&] {
        std::unique_ptr<store_holder> own;
        store* s = &shared.get();
        if (GetParam() == backend_kind::memory) {
            own = std::make_unique<store_holder>(backend_kind::memory);
            s = &own->get();
        }
        const std::string prefix = fmt::format("case{}/", case_no++);

        model m;
        auto live = open_session_sync(*s, 60s);
        auto dead = open_session_sync(*s, 60s);
        RC_ASSERT(live && dead);
        RC_ASSERT(close_session_sync(*s, *dead).has_value());
        m.live = *live;
        m.dead = *dead;
        // Learn the store revision: the model then predicts every version exactly.
        auto base = cas_sync(*s, prefix + "base", any_version, "");
        RC_ASSERT(base && base->applied);
        m.revision = base->current;

        const auto gen_op = rc::gen::construct<op_spec>(
            rc::gen::inRange(0, 4), rc::gen::inRange(0, 3), rc::gen::inRange(0, 4),
            rc::gen::inRange(0, 3), rc::gen::inRange(0, 100));
        const int multis = *rc::gen::inRange(1, 12);
        for (int i = 0; i < multis; ++i) {
            const int n = *rc::gen::inRange(1, 5);
            const auto specs =
                *rc::gen::container<std::vector<op_spec>>(static_cast<std::size_t>(n), gen_op);
            std::vector<op> ops;
            ops.reserve(specs.size());
            for (const auto& spec : specs) {
                ops.push_back(resolve(spec, prefix, m));
            }
            const auto want = m.apply(ops);
            const auto got = multi_sync(*s, ops);
            RC_ASSERT(got.has_value() == want.has_value());
            if (!want) {
                RC_ASSERT(got.error() == want.error());
                continue;
            }
            RC_ASSERT(got->applied == want->applied);
            RC_ASSERT(got->failed_op == want->failed_op);
            RC_ASSERT(got->versions == want->versions);
        }
        expect_same_state(*s, prefix, m);

        RC_ASSERT(close_session_sync(*s, m.live).has_value());
        m.close_live();
        expect_same_state(*s, prefix, m);
        // The next write continues the revision sequence the model predicts.
        auto after = cas_sync(*s, prefix + "base", any_version, "end");
        RC_ASSERT(after && after->applied);
        RC_ASSERT(after->current == m.revision + 1);
    };

    auto params = rc::detail::configuration().testParams;
    params.maxSuccess = GetParam() == backend_kind::memory ? 200 : 25;
    rc::detail::TestMetadata metadata;
    metadata.id = metadata.description = "meta multi-op model";
    const auto res = rc::detail::checkTestable(property, metadata, params);
    rc::detail::printResultMessage(res, std::cerr);
    std::cerr << "\n";
    EXPECT_TRUE(res.template is<rc::detail::SuccessResult>());
}

INSTANTIATE_TEST_SUITE_P(meta,
                         StoreModel,
                         ::testing::Values(backend_kind::memory, backend_kind::rocksdb),
                         backend_name);

}  // namespace
}  // namespace nereus::meta::test
