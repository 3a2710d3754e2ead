// orders_projection — the worked scenario of seed 001 (issue 6): a durable read-model
// projection of an orders source kept through nereus::events (SNAPSHOT at a barrier, then
// EVENTs), into SQLite. Modes (README.md of this directory):
//
//   orders_projection --self-check --url pulsar://HOST:PORT --work-dir DIR [--admin-url URL]
//   orders_projection --dump-projection DIR          # the projection's rows, sorted JSON lines
//   orders_projection --dump-source URL TOPIC        # the source's final state, same format
//   orders_projection --project --url ... --topic T --db FILE   # the projection process

#include <fmt/format.h>

#include "order_projection.h"
#include "projector.h"
#include "self_check.h"
#include "source_dump.h"
#include "state.h"
#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <unistd.h>

namespace {

// http://HOST:8080 for pulsar://HOST:PORT (the admin port `make run` uses).
std::string default_admin_url(const std::string& service_url) {
    std::string host = "127.0.0.1";
    const std::string scheme = "pulsar://";
    if (service_url.rfind(scheme, 0) == 0) {
        const auto rest = service_url.substr(scheme.size());
        host = rest.substr(0, rest.find(':'));
    }
    return "http://" + host + ":8080";
}

std::string self_exe() {
    std::error_code ec;
    auto p = std::filesystem::read_symlink("/proc/self/exe", ec);
    return ec ? std::string("orders_projection") : p.string();
}

void print_lines(const orders::state& s) {
    for (const auto& l : orders::lines(s)) {
        std::fputs(l.c_str(), stdout);
        std::fputc('\n', stdout);
    }
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{
        "orders_projection: a durable read-model projection over nereus::events "
        "(seed 001 worked scenario)"};
    bool self_check = false;
    bool project = false;
    std::string dump_projection;
    std::vector<std::string> dump_source;
    std::string url = "pulsar://127.0.0.1:6650";
    std::string admin_url;
    std::string work_dir;
    orders::self_check_options sc;
    orders::projector_options po;
    std::string restart = "resume";
    bool no_snapshot_restart = false;

    auto* modes = app.add_option_group("mode");
    modes->add_flag("--self-check", self_check,
                    "Run the whole scenario against a running broker; exit 0 only if the "
                    "projection equals the source's final state");
    modes->add_option("--dump-projection", dump_projection,
                      "Print the projection in DIR (DIR/projection.db) as sorted JSON lines");
    modes
        ->add_option("--dump-source", dump_source,
                     "Print the final state of topic TOPIC on broker URL as sorted JSON lines")
        ->expected(2)
        ->type_name("URL TOPIC");
    modes->add_flag("--project", project, "Run the projection process");
    modes->require_option(1);

    app.add_option("--url", url, "Pulsar service URL")->capture_default_str();
    app.add_option("--admin-url", admin_url,
                   "Admin REST URL (default: http://<host of --url>:8080)");
    app.add_option("--work-dir", work_dir, "Self-check: working directory (the projection)");
    app.add_option("--seed", sc.seed, "Self-check: writer PRNG seed")->capture_default_str();
    app.add_flag("--no-snapshot-restart", no_snapshot_restart,
                 "Self-check: skip the final restart with the SNAPSHOT policy");
    app.add_flag("--debug-ack-before-apply", po.debug_ack_before_apply,
                 "Fault injection: ack each page before applying it (the self-check must FAIL)");
    app.add_option("--topic", po.topic, "Projection process: source topic")->capture_default_str();
    app.add_option("--subscription", po.subscription, "Projection process: subscription value")
        ->capture_default_str();
    app.add_option("--metadata-namespace", po.metadata_namespace,
                   "Projection process: namespace of the subscription state on the broker")
        ->capture_default_str();
    app.add_option("--db", po.db_path, "Projection process: SQLite file");
    app.add_option("--restart", restart, "Projection process: resume|snapshot")
        ->check(CLI::IsMember({"resume", "snapshot"}))
        ->capture_default_str();
    app.add_option("--page-size", po.page_size, "Projection process: deliveries per page")
        ->capture_default_str();
    app.add_option("--pause-after-snapshot-pages", po.pause_after_snapshot_pages,
                   "Projection process: pause (until 'continue' on stdin) after N snapshot pages");
    app.add_option("--crash-before-apply-event-pages", po.crash_before_apply_event_pages,
                   "Projection process: wait to be killed after polling the N-th event page, "
                   "before applying it");
    app.add_option("--crash-after-event-pages", po.crash_after_event_pages,
                   "Projection process: wait to be killed after applying the N-th event page, "
                   "before its ack");
    CLI11_PARSE(app, argc, argv);

    if (admin_url.empty()) {
        admin_url = default_admin_url(url);
    }
    if (self_check) {
        if (work_dir.empty()) {
            std::fputs("--self-check needs --work-dir DIR\n", stderr);
            return 2;
        }
        sc.service_url = url;
        sc.admin_url = admin_url;
        sc.work_dir = work_dir;
        sc.self_exe = self_exe();
        sc.snapshot_restart = !no_snapshot_restart;
        sc.debug_ack_before_apply = po.debug_ack_before_apply;
        return orders::run_self_check(sc);
    }
    if (!dump_projection.empty()) {
        const auto db = (std::filesystem::path(dump_projection) / "projection.db").string();
        auto s = orders::order_projection::read_state(db);
        if (!s) {
            std::fprintf(stderr, "cannot read %s: %s\n", db.c_str(), s.error().message().c_str());
            return 1;
        }
        print_lines(*s);
        return 0;
    }
    if (!dump_source.empty()) {
        nereus::client::client_options co;
        co.service_url = dump_source.at(0);
        nereus::client::client c(co);
        auto s = orders::fold_source(c, dump_source.at(1), std::chrono::seconds(60));
        c.close();
        if (!s) {
            std::fprintf(stderr, "cannot read %s: %s\n", dump_source.at(1).c_str(),
                         s.error().message().c_str());
            return 1;
        }
        if (s->undecodable != 0) {
            std::fprintf(stderr, "%zu keys hold values that are not orders/v1 (not printed)\n",
                         s->undecodable);
        }
        print_lines(s->final_state);
        return s->undecodable == 0 ? 0 : 1;
    }
    po.service_url = url;
    po.admin_url = admin_url;
    po.restart = restart == "snapshot" ? nereus::events::restart_policy::snapshot
                                       : nereus::events::restart_policy::resume;
    if (po.db_path.empty()) {
        std::fputs("--project needs --db FILE\n", stderr);
        return 2;
    }
    return orders::run_projector(po);
}
