#include "self_check.h"

#include "nereus/client/client.h"
#include "nereus/events/delivery.h"

#include <fmt/format.h>

#include "child.h"
#include "order_projection.h"
#include "source_dump.h"
#include "source_writer.h"
#include "state.h"
#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <optional>
#include <sys/wait.h>
#include <thread>

namespace orders {

namespace nc = nereus::client;
namespace ev = nereus::events;
namespace fs = std::filesystem;
using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;

namespace {

void say(const std::string& line) {
    std::fputs(line.c_str(), stdout);
    std::fputc('\n', stdout);
    std::fflush(stdout);
}

// The value of `name=` in a child's line ("READY epoch=3 committed=0:3:42 ..."), or "".
std::string field(const std::string& line, const std::string& name) {
    const auto at = line.find(" " + name + "=");
    if (at == std::string::npos) {
        return {};
    }
    const auto start = at + name.size() + 2;
    return line.substr(start, line.find(' ', start) - start);
}

// The sequence of a "p:e:s" cursor, or nullopt ("none").
std::optional<std::uint64_t> sequence_of(const std::string& c) {
    const auto colon = c.rfind(':');
    if (colon == std::string::npos) {
        return std::nullopt;
    }
    return std::stoull(c.substr(colon + 1));
}

// The writer, shared by the background thread and the main thread's burst.
struct shared_writer {
    std::mutex mu;
    std::optional<source_writer> w;         // guarded by mu
    nc::message_id last;                    // guarded by mu: the last receipted id
    std::optional<std::error_code> failed;  // guarded by mu

    bool mutate(std::uint32_t n) {
        std::lock_guard lock(mu);
        if (failed) {
            return false;
        }
        auto r = w->mutate(n);
        if (!r) {
            failed = r.error();
            return false;
        }
        last = *r;
        return true;
    }
};

class scenario {
public:
    explicit scenario(const self_check_options& o)
        : o_(o), deadline_(clock_type::now() + o.budget) {}

    int run() {
        const auto start = clock_type::now();
        const int rc = steps();
        stop_writer();
        if (rc != 0 && client_ && !topic_.empty() && fs::exists(db_)) {
            // Both sides' counts and digests for the FAIL line too (best effort).
            (void)compare("at the failure");
        }
        // Everything stopped before the verdict, so it is the last line printed.
        if (client_) {
            client_->close();
            client_.reset();
        }
        return finish(rc, start);
    }

    ~scenario() {
        stop_writer();
        if (client_) {
            client_->close();
        }
    }

private:
    int steps() {
        std::error_code ec;
        fs::create_directories(o_.work_dir, ec);
        db_ = (fs::path(o_.work_dir) / "projection.db").string();
        for (const char* suffix : {"", "-wal", "-shm"}) {
            fs::remove(db_ + suffix, ec);
        }
        topic_ = fmt::format("orders-selfcheck-{}",
                             std::chrono::duration_cast<std::chrono::milliseconds>(
                                 std::chrono::system_clock::now().time_since_epoch())
                                 .count());
        say(fmt::format("self-check: source topic {} on {} (admin {}), projection {}", topic_,
                        o_.service_url, o_.admin_url, db_));
        nc::client_options co;
        co.service_url = o_.service_url;
        co.operation_timeout = 30s;
        client_.emplace(co);
        if (int rc = seed_source(); rc != 0)
            return rc;
        background_ = std::thread([this] { background_writer(); });
        const int rc = phases();
        stop_writer();
        if (rc != 0)
            return rc;
        if (int cmp = compare("after the SIGKILL and RESUME"); cmp != 0)
            return cmp;
        return o_.snapshot_restart ? snapshot_restart() : 0;
    }

    int seed_source() {
        auto w = source_writer::open(*client_, topic_, o_.seed, o_.initial_orders * 2);
        if (!w) {
            return fail_setup("create producer", w.error());
        }
        writer_.w.emplace(std::move(*w));
        auto first = writer_.w->create_initial(o_.initial_orders);
        if (!first) {
            return fail_setup("create initial orders", first.error());
        }
        writer_.last = *first;
        if (!writer_.mutate(o_.pre_mutations)) {
            return fail_setup("pre-snapshot mutations", *writer_.failed);
        }
        say(fmt::format("self-check: source has {} orders created and {} mutations (receipted)",
                        o_.initial_orders, o_.pre_mutations));
        return 0;
    }

    void background_writer() {
        std::uint32_t sent = 0;
        while (!stop_.load() && sent < o_.background_mutations) {
            if (!writer_.mutate(10)) {
                return;
            }
            sent += 10;
            background_sent_.store(sent);
            // Pacing only (keeps the writer from outrunning a projection that fsyncs per
            // event); nothing waits on this for synchronization.
            std::this_thread::sleep_for(50ms);
        }
    }

    void stop_writer() {
        stop_.store(true);
        if (background_.joinable()) {
            background_.join();
        }
    }

    std::vector<std::string> projector_args(const std::string& restart) const {
        return {o_.self_exe,
                "--project",
                "--url",
                o_.service_url,
                "--admin-url",
                o_.admin_url,
                "--topic",
                topic_,
                "--metadata-namespace",
                topic_,
                "--db",
                db_,
                "--restart",
                restart,
                "--page-size",
                std::to_string(o_.page_size)};
    }

    std::optional<child> start(std::vector<std::string> args, const std::string& name) {
        int err = 0;
        auto c = child::spawn(args, &err);
        if (!c) {
            fail_scenario(fmt::format("cannot start {}: {}", name, std::strerror(err)));
            return std::nullopt;
        }
        say(fmt::format("self-check: started {} (pid {})", name, c->pid()));
        return c;
    }

    // Waits for a line with `prefix` from `c`; on failure says what the child printed.
    std::optional<std::string> expect(child& c,
                                      const std::string& name,
                                      const std::string& prefix,
                                      std::chrono::seconds within) {
        const auto until = std::min(deadline_, clock_type::now() + within);
        for (;;) {
            auto line = c.read_line(until);
            if (!line) {
                break;
            }
            if (line->rfind("ERROR", 0) == 0) {
                fail_scenario(fmt::format("{} failed: {}", name, *line));
                return std::nullopt;
            }
            if (line->rfind(prefix, 0) == 0) {
                return line;
            }
        }
        fail_scenario(fmt::format("{} did not print {} in time", name, prefix));
        say("self-check: its last lines:");
        const auto& t = c.transcript();
        for (std::size_t i = t.size() > 10 ? t.size() - 10 : 0; i < t.size(); ++i) {
            say("  | " + t[i]);
        }
        return std::nullopt;
    }

    void keep_transcript(const child& c, const std::string& name) {
        std::ofstream out(fs::path(o_.work_dir) / (name + ".log"));
        for (const auto& l : c.transcript()) {
            out << l << '\n';
        }
    }

    int phases() {
        // ---- projection process #1: snapshot with writes during it, SIGKILL before an ack
        auto args = projector_args("resume");
        args.insert(args.end(), {"--pause-after-snapshot-pages", "1", "--crash-after-event-pages",
                                 std::to_string(o_.crash_after_event_pages)});
        if (o_.debug_ack_before_apply) {
            args.emplace_back("--debug-ack-before-apply");
        }
        auto p1 = start(args, "projection #1");
        if (!p1)
            return 1;
        if (!expect(*p1, "projection #1", "READY", 180s))
            return 1;
        auto paused = expect(*p1, "projection #1", "PAUSED", 180s);
        if (!paused)
            return 1;
        const std::string first_page = p1->transcript().at(p1->transcript().size() - 2);
        if (field(first_page, "complete") != "false") {
            return fail_scenario("the snapshot fit in one page: no write could land inside it");
        }
        if (!writer_.mutate(o_.burst_mutations)) {
            return fail_setup("burst during the snapshot", *writer_.failed);
        }
        say(
            fmt::format("self-check: {} mutations committed while projection #1 is inside the "
                        "snapshot ({})",
                        o_.burst_mutations, first_page));
        p1->send_line("continue");
        if (!expect(*p1, "projection #1", "SNAPSHOT-APPLIED", 180s))
            return 1;
        auto crash = expect(*p1, "projection #1", "CRASH-POINT", 180s);
        if (!crash)
            return 1;
        const pid_t pid1 = p1->pid();
        p1->kill_hard();
        const auto status = p1->wait(clock_type::now() + 30s);
        keep_transcript(*p1, "projection-1");
        if (!status || !WIFSIGNALED(*status) || WTERMSIG(*status) != SIGKILL) {
            return fail_scenario("projection #1 was not killed by SIGKILL");
        }
        say(fmt::format("self-check: projection #1 (pid {}) SIGKILLed at {}", pid1, *crash));

        // What the kill left: the projection's applied cursor (SQLite) ...
        std::optional<std::uint64_t> applied;
        {
            auto proj = order_projection::open(db_);
            if (!proj)
                return fail_setup("open the projection after the kill", proj.error());
            auto a = proj->applied(0);
            if (!a)
                return fail_setup("read the applied cursor", a.error());
            if (*a)
                applied = (*a)->sequence;
        }

        // ---- projection process #2: RESUME after the acknowledged cursor; SIGKILLed again,
        // this time after polling an EVENT page and before applying it
        auto args2 = projector_args("resume");
        args2.insert(args2.end(), {"--crash-before-apply-event-pages", "2"});
        auto p2 = start(args2, "projection #2");
        if (!p2)
            return 1;
        auto ready = expect(*p2, "projection #2", "READY", 180s);
        if (!ready)
            return 1;
        const auto committed = sequence_of(field(*ready, "committed"));
        say(
            fmt::format("self-check: after the kill: applied through {} (projection), "
                        "acknowledged through {} (broker)",
                        applied ? std::to_string(*applied) : "none",
                        committed ? std::to_string(*committed) : "none"));
        crash_between_apply_and_ack_ = applied && committed && *applied > *committed;
        if (!o_.debug_ack_before_apply && !crash_between_apply_and_ack_) {
            return fail_scenario("the kill did not fall between apply and ack");
        }
        auto crash2 = expect(*p2, "projection #2", "CRASH-POINT", 180s);
        if (!crash2)
            return 1;
        const pid_t pid2 = p2->pid();
        p2->kill_hard();
        const auto status2 = p2->wait(clock_type::now() + 30s);
        keep_transcript(*p2, "projection-2");
        if (!status2 || !WIFSIGNALED(*status2) || WTERMSIG(*status2) != SIGKILL) {
            return fail_scenario("projection #2 was not killed by SIGKILL");
        }
        for (const auto& line : p2->transcript()) {
            if (line.rfind("EVENT-PAGE", 0) == 0) {
                redelivered_recognized_ += std::stoull(field(line, "already_applied"));
            }
        }
        say(fmt::format("self-check: projection #2 (pid {}) SIGKILLed at {}", pid2, *crash2));

        // ---- projection process #3: RESUME; both killed pages come back after their leases
        auto p3 = start(projector_args("resume"), "projection #3");
        if (!p3)
            return 1;
        if (!expect(*p3, "projection #3", "READY", 180s))
            return 1;
        // Entries after the page #2 holds leased: the events library leases pages of a
        // partition in order (lease_order::per_partition), so #3 gets nothing of them before
        // #2's page comes back after its lease (apply_once would otherwise take it as applied).
        if (!writer_.mutate(100)) {
            return fail_setup("mutations after the second kill", *writer_.failed);
        }
        stop_writer();
        nc::message_id last;
        {
            std::lock_guard lock(writer_.mu);
            if (writer_.failed)
                return fail_setup("background writer", *writer_.failed);
            // End on a tombstone: the SNAPSHOT restart (#4) then takes a snapshot whose barrier
            // entry is dropped by compaction, and must still complete on the idle topic.
            auto final_delete = writer_.w->delete_one();
            if (!final_delete)
                return fail_setup("final delete", final_delete.error());
            writer_.last = *final_delete;
            last = writer_.last;
            counts_ = writer_.w->counts();
            writer_.w->close();
        }
        const std::uint64_t target =
            ev::sequence_of(static_cast<std::uint64_t>(last.entry),
                            static_cast<std::uint32_t>(std::max(last.batch_index, 0)));
        say(
            fmt::format("self-check: writer stopped: {} creates, {} updates, {} deletes "
                        "({} in the background), last receipted {} -> drain through {}",
                        counts_.creates, counts_.updates, counts_.deletes, background_sent_.load(),
                        last.to_string(), target));
        p3->send_line(fmt::format("drain {}", target));
        auto caught = expect(*p3, "projection #3", "CAUGHT-UP", 180s);
        if (!caught)
            return 1;
        const auto st = p3->wait(clock_type::now() + 30s);
        keep_transcript(*p3, "projection-3");
        if (!st || !WIFEXITED(*st) || WEXITSTATUS(*st) != 0) {
            return fail_scenario("projection #3 did not exit 0 after the drain");
        }
        redelivered_recognized_ += std::stoull(field(*caught, "events_already_applied"));
        say("self-check: projection #3 " + *caught);
        if (!o_.debug_ack_before_apply && redelivered_recognized_ == 0) {
            return fail_scenario("no redelivered event after the kill (apply_once never tested)");
        }
        drain_target_ = target;
        return 0;
    }

    int snapshot_restart() {
        auto p4 = start(projector_args("snapshot"), "projection #4 (restart SNAPSHOT)");
        if (!p4)
            return 1;
        if (!expect(*p4, "projection #4", "READY", 180s))
            return 1;
        p4->send_line(fmt::format("drain {}", drain_target_));
        auto applied = expect(*p4, "projection #4", "SNAPSHOT-APPLIED", 180s);
        if (!applied)
            return 1;
        if (!expect(*p4, "projection #4", "CAUGHT-UP", 180s))
            return 1;
        const auto st = p4->wait(clock_type::now() + 30s);
        keep_transcript(*p4, "projection-4");
        if (!st || !WIFEXITED(*st) || WEXITSTATUS(*st) != 0) {
            return fail_scenario("projection #4 did not exit 0 after the drain");
        }
        rebuilt_epoch_ = field(*applied, "epoch");
        return compare("after the SNAPSHOT restart (epoch " + rebuilt_epoch_ + ")");
    }

    int compare(const std::string& when) {
        auto proj = order_projection::read_state(db_);
        if (!proj)
            return fail_setup("read the projection", proj.error());
        auto src = fold_source(*client_, topic_, 60s);
        if (!src)
            return fail_setup("read the source back", src.error());
        projection_ = std::move(*proj);
        source_ = std::move(src->final_state);
        say(
            fmt::format("self-check: {}: projection {} orders digest {}; source {} orders digest "
                        "{} ({} messages read back, {} tombstones, {} undecodable)",
                        when, projection_.size(), digest(projection_), source_.size(),
                        digest(source_), src->messages, src->tombstones, src->undecodable));
        if (src->undecodable != 0) {
            if (verdict_.empty())
                verdict_ = "the source holds values that are not orders/v1";
            return 1;
        }
        if (projection_ != source_) {
            for (const auto& d : differences(projection_, source_, 10)) {
                say("  " + d);
            }
            if (verdict_.empty())
                verdict_ = "the projection differs from the source " + when;
            return 1;
        }
        return 0;
    }

    int finish(int rc, clock_type::time_point start) {
        const auto secs = std::chrono::duration<double>(clock_type::now() - start).count();
        const std::string details =
            rc == 0 ? fmt::format(
                          "no lost and no doubly applied update: {} mutations, {} while "
                          "the snapshot was processed, 2 SIGKILLs ({}; between poll and "
                          "apply), "
                          "{} redelivered events recognized by apply_once{}; {:.1f} s",
                          counts_.total(), o_.burst_mutations,
                          o_.debug_ack_before_apply ? "between ack and apply (fault run)"
                                                    : "between apply and ack",
                          redelivered_recognized_,
                          o_.snapshot_restart
                              ? ", SNAPSHOT restart at epoch " + rebuilt_epoch_ + " equal"
                              : "",
                          secs)
                    : fmt::format("{}; {:.1f} s", verdict_, secs);
        say(
            fmt::format("orders_projection self-check: {} projection {} orders digest {}, source "
                        "{} orders digest {} ({})",
                        rc == 0 ? "PASS" : "FAIL", projection_.size(), digest(projection_),
                        source_.size(), digest(source_), details));
        return rc == 0 ? 0 : 1;
    }

    int fail_setup(const std::string& what, const std::error_code& ec) {
        return fail_scenario(fmt::format("{}: {}", what, ec.message()));
    }
    int fail_scenario(const std::string& why) {
        if (verdict_.empty())
            verdict_ = why;  // the first failure is the verdict
        say("self-check: " + why);
        return 1;
    }

    const self_check_options& o_;
    const clock_type::time_point deadline_;
    std::string db_;
    std::string topic_;
    std::optional<nc::client> client_;
    shared_writer writer_;
    std::thread background_;
    std::atomic<bool> stop_{false};
    std::atomic<std::uint32_t> background_sent_{0};
    writer_counts counts_;
    bool crash_between_apply_and_ack_ = false;
    std::uint64_t redelivered_recognized_ = 0;
    std::uint64_t drain_target_ = 0;
    std::string rebuilt_epoch_;
    std::string verdict_;
    state projection_;
    state source_;
};

}  // namespace

int run_self_check(const self_check_options& o) {
    scenario s(o);
    const int rc = s.run();
    return rc;
}

}  // namespace orders
