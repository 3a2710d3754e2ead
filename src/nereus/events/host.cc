#include "nereus/events/host.h"

#include "nereus/events/errc.h"
#include "nereus/events/logger.h"

#include <map>
#include <memory>

namespace nereus::events {

namespace {

using clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

// Acks `pg`, repeating the same ack id while the outcome is unknown (a lost reply is then
// confirmed by the repeat, without running the handler again).
result<void> ack_page(event_subscriptions& subs,
                      const std::string& subscription,
                      const page& pg,
                      std::uint64_t n,
                      const run_options& o) {
    const std::string ack_id = subs.holder_id() + "-" + std::to_string(pg.epoch) + "-" +
                               std::to_string(pg.through.partition) + "-" +
                               std::to_string(pg.through.sequence) + "-" + std::to_string(n);
    const auto until = clock::now() + o.ack_timeout;
    while (true) {
        auto a = subs.ack(ack_id, subscription, pg.through, 0ms, until);
        if (a) {
            return {};
        }
        if (a.error() != make_error_code(errc::timeout) || clock::now() >= until) {
            return error(a.error());
        }
        NEREUS_LOG(events_log(), info, "ack {} outcome unknown; repeating it", ack_id);
    }
}

template <class Work>
result<run_report> run_loop(event_subscriptions& subs,
                            const std::string& subscription,
                            const run_options& o,
                            Work work) {
    run_report rep;
    std::uint32_t idle = 0;
    std::uint64_t n = 0;
    while (true) {
        if (o.stop != nullptr && o.stop->load()) {
            return rep;
        }
        if (o.max_pages != 0 && rep.pages_acked >= o.max_pages) {
            return rep;
        }
        auto pg = subs.poll(subscription, o.max_per_poll, clock::now() + o.poll_wait);
        if (!pg) {
            return error(pg.error());
        }
        if (pg->empty()) {
            if (o.idle_polls != 0 && ++idle >= o.idle_polls) {
                auto pos = subs.position(subscription, clock::now() + o.ack_timeout);
                if (!pos) {
                    return error(pos.error());
                }
                if (pos->snapshot_complete && pos->leased_pages == 0) {
                    return rep;
                }
                idle = 0;
            }
            continue;
        }
        idle = 0;
        NEREUS_TRY(work(*pg));
        if (o.before_ack) {
            o.before_ack(*pg);
        }
        NEREUS_TRY(ack_page(subs, subscription, *pg, ++n, o));
        rep.pages_acked++;
        rep.deliveries += pg->events.size();
        if (pg->snapshot_complete) {
            rep.snapshots_completed++;
        }
    }
}

}  // namespace

result<run_report> run(event_subscriptions& subs,
                       const std::string& subscription,
                       const batch_handler& handler,
                       const run_options& o) {
    return run_loop(subs, subscription, o, [&](const page& pg) -> result<void> {
        auto work = handler(pg);
        return work.get();  // the ack follows the work's completion
    });
}

result<run_report> run(event_subscriptions& subs,
                       const std::string& subscription,
                       const single_handler& handler,
                       const run_options& o) {
    return run_loop(subs, subscription, o, [&](const page& pg) -> result<void> {
        for (const auto& d : pg.events) {
            auto work = handler(d);
            NEREUS_TRY(work.get());
        }
        return {};
    });
}

batch_handler projection_handler(projection_repository& repo) {
    struct collected {
        std::uint64_t epoch = 0;
        std::map<std::string, std::string> image;
    };
    auto st = std::make_shared<collected>();
    return [&repo, st](const page& pg) -> std::future<result<void>> {
        if (pg.kind == delivery_kind::snapshot) {
            if (pg.epoch != st->epoch) {
                st->epoch = pg.epoch;
                st->image.clear();
            }
            for (const auto& d : pg.events) {
                auto bytes = d.payload();
                if (!bytes) {
                    return completed(error(bytes.error()));
                }
                if (d.op.what == operation::kind::remove) {
                    st->image.erase(d.op.key);
                } else {
                    st->image[d.op.key] =
                        std::string(reinterpret_cast<const char*>(bytes->data()), bytes->size());
                }
            }
            if (pg.snapshot_complete) {
                std::vector<row> rows;
                rows.reserve(st->image.size());
                for (auto& [k, v] : st->image) {
                    rows.push_back(row{k, v});
                }
                st->image.clear();
                return completed(repo.replace_atomically(pg.barriers, rows));
            }
            return completed({});
        }
        if (!pg.in_order) {
            // lease_order::unordered: an earlier page may still come back after this one, and
            // apply_once would then skip it as already applied. Refused, never applied.
            NEREUS_LOG(events_log(), err,
                       "projection_handler: EVENT page through {}:{} leased out of order "
                       "(policy lease_order::unordered); apply_once needs per_partition",
                       pg.through.partition, pg.through.sequence);
            return completed(error(errc::invalid_argument));
        }
        for (const auto& d : pg.events) {
            auto bytes = d.payload();
            if (!bytes) {
                return completed(error(bytes.error()));
            }
            auto r = repo.apply_once(d.at, d.op, *bytes);
            if (!r) {
                return completed(error(r.error()));
            }
        }
        return completed({});
    };
}

}  // namespace nereus::events
