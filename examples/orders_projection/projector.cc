#include "projector.h"

#include "nereus/events/errc.h"
#include "nereus/events/event_subscriptions.h"

#include <fmt/format.h>

#include "order_projection.h"
#include <array>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <map>
#include <optional>
#include <poll.h>
#include <thread>
#include <unistd.h>

namespace orders {

namespace ev = nereus::events;
using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;

namespace {

std::string show(const ev::cursor& c) {
    return fmt::format("{}:{}:{}", c.partition, c.epoch, c.sequence);
}

void say(const std::string& line) {
    std::fputs(line.c_str(), stdout);
    std::fputc('\n', stdout);
    std::fflush(stdout);
}

// Lines from the parent on stdin, read without blocking the poll loop.
class control {
public:
    // The next complete line, waiting at most `wait` (0: just look). nullopt: none yet, or
    // stdin is closed (closed() then says so).
    std::optional<std::string> next(std::chrono::milliseconds wait) {
        const auto until = clock_type::now() + wait;
        for (;;) {
            if (const auto nl = buffer_.find('\n'); nl != std::string::npos) {
                std::string line = buffer_.substr(0, nl);
                buffer_.erase(0, nl + 1);
                return line;
            }
            if (closed_) {
                return std::nullopt;
            }
            const auto left =
                std::chrono::duration_cast<std::chrono::milliseconds>(until - clock_type::now());
            pollfd p{STDIN_FILENO, POLLIN, 0};
            const int n = ::poll(&p, 1, static_cast<int>(std::max<long>(0, left.count())));
            if (n < 0 && errno == EINTR) {
                continue;
            }
            if (n <= 0) {
                return std::nullopt;
            }
            std::array<char, 256> chunk{};
            const ssize_t got = ::read(STDIN_FILENO, chunk.data(), chunk.size());
            if (got < 0 && errno == EINTR) {
                continue;
            }
            if (got <= 0) {
                closed_ = true;
                continue;
            }
            buffer_.append(chunk.data(), static_cast<std::size_t>(got));
        }
    }
    [[nodiscard]] bool closed() const { return closed_; }

private:
    std::string buffer_;
    bool closed_ = false;
};

class projector {
public:
    explicit projector(const projector_options& o) : o_(o) {}

    int run() {
        auto proj = order_projection::open(o_.db_path);
        if (!proj) {
            return fail("open projection " + o_.db_path, proj.error());
        }
        proj_.emplace(std::move(*proj));
        ev::host_options h;
        h.service_url = o_.service_url;
        h.admin_url = o_.admin_url;
        h.holder_id = fmt::format("orders-projection-{}", ::getpid());
        auto subs = ev::event_subscriptions::open(h);
        if (!subs) {
            return fail("connect", subs.error());
        }
        subs_ = std::move(*subs);
        ev::policy p;
        p.source_topic = o_.topic;
        p.metadata_namespace = o_.metadata_namespace;
        p.format.name = "orders";
        p.format.version = 1;
        p.pages.max_events = o_.page_size;
        p.lease = o_.lease;
        p.restart = o_.restart;
        p.expiry = ev::expiry_policy::stop;
        if (auto r = subs_->declare_policy("order-events", p); !r) {
            return fail("declare_policy", r.error());
        }
        const ev::registration reg{o_.subscription, "order-events", ev::filter_mode::batch};
        if (auto r =
                subs_->register_subscription(reg, &proj_->repository(), clock_type::now() + 180s);
            !r) {
            return fail("register_subscription", r.error());
        }
        auto pos = subs_->position(o_.subscription, clock_type::now() + 60s);
        if (!pos) {
            return fail("position", pos.error());
        }
        auto applied = proj_->applied(0);
        if (!applied) {
            return fail("applied cursor", applied.error());
        }
        if (*applied) {
            applied_through_ = (*applied)->sequence;
        }
        std::string committed = "none";
        if (!pos->committed.empty() && pos->committed[0]) {
            committed = show(*pos->committed[0]);
        }
        say(fmt::format("READY epoch={} snapshot_complete={} committed={} applied={} rows={}",
                        pos->epoch, pos->snapshot_complete, committed,
                        *applied ? show(**applied) : std::string("none"), proj_->rows().size()));
        return loop();
    }

private:
    int loop() {
        for (;;) {
            // Parent commands that may arrive at any time.
            while (auto line = control_.next(0ms)) {
                command(*line);
            }
            if (drain_target_ && snapshot_applied() && applied_through_ &&
                *applied_through_ >= *drain_target_) {
                // Applied through the target; done once it is also acknowledged (a page another
                // process leased and never acked comes back after its lease: wait for it).
                auto pos = subs_->position(o_.subscription, clock_type::now() + 30s);
                if (!pos && pos.error() != ev::errc::timeout) {
                    return fail("position", pos.error());
                }
                if (pos && !pos->committed.empty() && pos->committed[0] &&
                    pos->committed[0]->sequence >= *drain_target_) {
                    (void)subs_->release(o_.subscription, clock_type::now() + 10s);
                    say(
                        fmt::format("CAUGHT-UP through={} committed={} rows={} events_applied={} "
                                    "events_already_applied={}",
                                    *applied_through_, show(*pos->committed[0]),
                                    proj_->rows().size(), applied_, already_));
                    return 0;
                }
            }
            if (control_.closed() && !drain_target_) {
                return 0;  // run by hand: the operator closed stdin
            }
            auto pg = subs_->poll(o_.subscription, o_.page_size, clock_type::now() + 1s);
            if (!pg) {
                if (pg.error() == ev::errc::timeout) {
                    continue;  // outcome unknown, nothing changed: poll again
                }
                return fail("poll", pg.error());
            }
            if (pg->empty()) {
                continue;
            }
            if (pg->kind == ev::delivery_kind::event && !continues_applied(*pg)) {
                // If the broker already holds an acknowledgement past what this store applied,
                // the missing entries will never come again: they were acked without being
                // applied (an ack before apply). Say so instead of waiting forever.
                auto pos = subs_->position(o_.subscription, clock_type::now() + 30s);
                if (pos && !pos->committed.empty() && pos->committed[0] &&
                    pos->committed[0]->sequence > *applied_through_) {
                    say(
                        fmt::format("ERROR lost: the broker has acknowledged through {} but this "
                                    "projection applied only through {}; the entries between "
                                    "were acked without being applied",
                                    show(*pos->committed[0]), *applied_through_));
                    return 1;
                }
                // The events library leases the pages of a partition in order
                // (lease_order::per_partition): a page that skips entries this store has not
                // applied is a library bug. Stop rather than apply past the gap.
                say(
                    fmt::format("ERROR out of order: a page from {} while this projection applied "
                                "only through {}",
                                show(pg->events.front().at), *applied_through_));
                return 1;
            }
            const bool event_page = pg->kind == ev::delivery_kind::event && !pg->events.empty();
            const std::uint32_t nth = event_page ? ++event_pages_ : 0;
            const bool crash_here = event_page && nth == o_.crash_after_event_pages;
            if (event_page && nth == o_.crash_before_apply_event_pages) {
                return crash_point(*pg, "polled, not applied");
            }
            if (o_.debug_ack_before_apply) {
                // The bug the seed warns of: acked, then killed before applying.
                if (int rc = ack(*pg); rc != 0)
                    return rc;
                if (crash_here)
                    return crash_point(*pg, "acked, not applied");
            }
            const int rc =
                pg->kind == ev::delivery_kind::snapshot ? on_snapshot(*pg) : on_events(*pg);
            if (rc != 0) {
                return rc;
            }
            if (!o_.debug_ack_before_apply) {
                // Applied (durably: apply_once committed) and not acked.
                if (crash_here)
                    return crash_point(*pg, "applied, not acked");
                if (int r = ack(*pg); r != 0)
                    return r;
            }
            if (pg->kind == ev::delivery_kind::snapshot &&
                ++snapshot_pages_ == o_.pause_after_snapshot_pages) {
                say("PAUSED");
                for (;;) {
                    auto line = control_.next(300s);
                    if (!line) {
                        say("ERROR no 'continue' from the parent");
                        return 1;
                    }
                    if (*line == "continue")
                        break;
                    command(*line);
                }
            }
        }
    }

    // Says where it stopped and waits for the parent's SIGKILL (bounded).
    int crash_point(const ev::page& pg, const char* state) {
        say(fmt::format("CRASH-POINT through={} state=\"{}\"", show(pg.through), state));
        (void)control_.next(300s);
        return 3;
    }

    void command(const std::string& line) {
        if (line.rfind("drain ", 0) == 0) {
            drain_target_ = std::stoull(line.substr(6));
        }
    }

    // No snapshot is half-staged (a RESUME may retake the snapshot at a new epoch).
    bool snapshot_applied() const { return !snapshot_in_progress_; }

    int on_snapshot(const ev::page& pg) {
        if (staging_epoch_ != pg.epoch) {  // a (re)snapshot at a new epoch starts afresh
            staging_.clear();
            staging_epoch_ = pg.epoch;
        }
        snapshot_in_progress_ = true;
        for (const auto& d : pg.events) {
            if (d.op.what == ev::operation::kind::remove) {
                staging_.erase(d.op.key);
                continue;
            }
            auto payload = d.payload();
            if (!payload) {
                return fail("snapshot delivery " + show(d.at), payload.error());
            }
            staging_[d.op.key] =
                std::string(reinterpret_cast<const char*>(payload->data()), payload->size());
        }
        say(fmt::format("SNAPSHOT-PAGE epoch={} deliveries={} through={} complete={} resnapshot={}",
                        pg.epoch, pg.events.size(), show(pg.through), pg.snapshot_complete,
                        pg.resnapshot));
        if (!pg.snapshot_complete) {
            return 0;
        }
        // The barriers the events API reports with the last SNAPSHOT page: every partition's
        // compaction horizon (so an empty partition, or a trailing tombstone, is covered too).
        const std::vector<ev::cursor>& barriers = pg.barriers;
        if (barriers.empty()) {
            say("ERROR the last SNAPSHOT page carries no barriers");
            return 1;
        }
        std::vector<std::pair<std::string, std::string>> image(staging_.begin(), staging_.end());
        if (auto r = proj_->replace_snapshot(barriers, image); !r) {
            return fail("replace_atomically", r.error());
        }
        for (const auto& c : barriers) {
            applied_through_ = std::max(applied_through_.value_or(0), c.sequence);
        }
        snapshot_in_progress_ = false;
        staging_.clear();
        say(fmt::format("SNAPSHOT-APPLIED epoch={} rows={}", pg.epoch, proj_->rows().size()));
        return 0;
    }

    // EVENT pages of a partition must be applied in order: apply_once takes any cursor at or
    // below the applied one as already applied, so applying a later page before an earlier
    // one would make the earlier one look applied. The events library guarantees it (the
    // policy's default lease_order::per_partition: a later page is leased only after the
    // earlier one was acked); this check (entry ids are contiguous in a partition and a page
    // ends at an entry boundary) only verifies it, and tells a lost ack from a library bug.
    bool continues_applied(const ev::page& pg) const {
        if (!applied_through_ || pg.events.empty()) {
            return true;
        }
        return ev::entry_of(pg.events.front().at.sequence) <= ev::entry_of(*applied_through_) + 1;
    }

    int on_events(const ev::page& pg) {
        std::uint64_t applied = 0;
        std::uint64_t already = 0;
        for (const auto& d : pg.events) {
            std::span<const std::byte> bytes;
            if (d.op.what == ev::operation::kind::upsert) {
                auto payload = d.payload();
                if (!payload) {
                    return fail("event " + show(d.at), payload.error());
                }
                bytes = *payload;
            }
            auto r = proj_->apply(d.at, d.op, bytes);
            if (!r) {
                return fail("apply_once " + show(d.at), r.error());
            }
            (*r == ev::apply_outcome::applied ? applied : already) += 1;
            applied_through_ = std::max(applied_through_.value_or(0), d.at.sequence);
        }
        applied_ += applied;
        already_ += already;
        say(fmt::format("EVENT-PAGE deliveries={} applied={} already_applied={} through={}",
                        pg.events.size(), applied, already, show(pg.through)));
        return 0;
    }

    int ack(const ev::page& pg) {
        const std::string id = fmt::format("ack-{}-{}-{}", pg.through.epoch, pg.through.partition,
                                           pg.through.sequence);
        // A timeout leaves the outcome unknown: repeat with the same ack id (idempotent).
        for (int attempt = 0; attempt < 5; ++attempt) {
            auto r = subs_->ack(id, o_.subscription, pg.through, o_.lease, clock_type::now() + 30s);
            if (r) {
                return 0;
            }
            if (r.error() != ev::errc::timeout) {
                return fail("ack " + id, r.error());
            }
        }
        say("ERROR ack " + id + ": timed out 5 times");
        return 1;
    }

    int fail(const std::string& what, const std::error_code& ec) {
        say(fmt::format("ERROR {}: {} ({}:{})", what, ec.message(), ec.category().name(),
                        ec.value()));
        return 1;
    }

    const projector_options& o_;
    std::optional<order_projection> proj_;
    std::unique_ptr<ev::event_subscriptions> subs_;
    control control_;
    std::optional<std::uint64_t> drain_target_;
    std::optional<std::uint64_t> applied_through_;
    std::uint64_t staging_epoch_ = UINT64_MAX;
    std::map<std::string, std::string> staging_;
    bool snapshot_in_progress_ = false;
    std::uint32_t snapshot_pages_ = 0;
    std::uint32_t event_pages_ = 0;
    std::uint64_t applied_ = 0;
    std::uint64_t already_ = 0;
};

}  // namespace

int run_projector(const projector_options& o) {
    projector p(o);
    return p.run();
}

}  // namespace orders
