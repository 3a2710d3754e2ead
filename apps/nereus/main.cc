// nereus: the command-line entry point.

#include "nereus/admin/admin_server.h"
#include "nereus/broker/config.h"
#include "nereus/broker/standalone.h"

#include "apps/nereus/cursor_bench.h"
#include "apps/nereus/perf/perf.h"
#include "apps/nereus/storage_bench.h"
#include "apps/nereus/storage_verify.h"
#include <CLI/CLI.hpp>
#include <cstdio>
#include <string>

int main(int argc, char** argv) {
    CLI::App app{"Nereus: a streaming broker that speaks the Apache Pulsar protocol"};
    app.require_subcommand(1);
    int status = 0;

    auto* standalone = app.add_subcommand("standalone", "Run a single-node broker");
    // Precedence: defaults, then the --config file, then flags given on the command line.
    nereus::broker::standalone_options standalone_flags;
    std::string standalone_config;
    standalone->add_option("--config", standalone_config,
                           "standalone.conf-style key=value file (see doc/configuration.md)");
    auto* data_dir_flag =
        standalone->add_option("--data-dir", standalone_flags.data_dir, "Data directory")
            ->capture_default_str();
    auto* metadata_flag =
        standalone->add_option("--metadata", standalone_flags.metadata_url,
                               "Metadata store: zk://host:port/root[?session_timeout_ms=N] "
                               "(default: the embedded RocksDB store in the data directory)");
    auto* port_flag =
        standalone->add_option("--port", standalone_flags.port, "Pulsar binary protocol port")
            ->capture_default_str();
    auto* http_port_flag =
        standalone->add_option("--http-port", standalone_flags.http_port, "Admin REST port")
            ->capture_default_str();
    auto* bind_flag =
        standalone->add_option("--bind", standalone_flags.bind_address, "Address to listen on")
            ->capture_default_str();
    standalone->callback([&] {
        nereus::broker::standalone_options o;
        if (!standalone_config.empty()) {
            if (auto r = nereus::broker::load_standalone_config(standalone_config, o); !r) {
                std::fprintf(stderr, "nereus standalone: config %s\n",
                             r.error().to_string().c_str());
                status = 2;
                return;
            }
        }
        if (data_dir_flag->count() > 0) {
            o.data_dir = standalone_flags.data_dir;
        }
        if (metadata_flag->count() > 0) {
            o.metadata_url = standalone_flags.metadata_url;
        }
        if (port_flag->count() > 0) {
            o.port = standalone_flags.port;
        }
        if (http_port_flag->count() > 0) {
            o.http_port = standalone_flags.http_port;
        }
        if (bind_flag->count() > 0) {
            o.bind_address = standalone_flags.bind_address;
        }
        status = nereus::broker::run_standalone(o, nereus::admin::standalone_admin());
    });

    auto* storage = app.add_subcommand("storage", "Inspect and measure the storage layer");
    storage->require_subcommand(1);

    auto* verify = storage->add_subcommand(
        "verify", "Check every segment, metadata record and object of a data directory");
    std::string verify_dir = "./data";
    verify->add_option("--data-dir", verify_dir, "Data directory")->capture_default_str();
    verify->callback([&] { status = nereus::app::run_storage_verify(verify_dir); });

    auto* bench = storage->add_subcommand(
        "bench", "Raw fdatasync ceiling vs Nereus durable appends, and metadata CAS ops/s");
    nereus::app::storage_bench_options bench_options;
    bench
        ->add_option("--data-dir", bench_options.data_dir,
                     "Directory on the file system to measure (a fresh subdirectory is used)")
        ->capture_default_str();
    bench->add_option("--rounds", bench_options.rounds, "Interleaved rounds (at least 3)")
        ->capture_default_str()
        ->check(CLI::Range(1, 100));
    bench->add_option("--seconds", bench_options.seconds_per_run, "Seconds per run")
        ->capture_default_str()
        ->check(CLI::Range(0.1, 60.0));
    bench->callback([&] { status = nereus::app::run_storage_bench(bench_options); });

    auto* cursor = app.add_subcommand("cursor", "Measure the cursor (ack state) engine");
    cursor->require_subcommand(1);

    auto* cursor_bench = cursor->add_subcommand(
        "bench", "Ack throughput, bytes and CPU per ack vs existing holes; recovery time");
    nereus::app::cursor_bench_options cursor_bench_options;
    cursor_bench
        ->add_option("--data-dir", cursor_bench_options.data_dir,
                     "Directory on the file system to measure (a fresh subdirectory is used)")
        ->capture_default_str();
    cursor_bench->add_flag("--quick", cursor_bench_options.quick, "Shorter phases (< 1 min)");
    cursor_bench->callback([&] { status = nereus::app::run_cursor_bench(cursor_bench_options); });

    // `nereus perf produce|consume`: the Pulsar-protocol load generator (doc/perf.md).
    const auto perf_command = nereus::app::perf::add_perf_command(app, status);

    CLI11_PARSE(app, argc, argv);
    return status;
}
