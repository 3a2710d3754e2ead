#include "nereus/broker/standalone.h"

#include "nereus/broker/ledger_backend.h"
#include "nereus/broker/logger.h"
#include "nereus/broker/server.h"

#include <cstdio>
#include <pthread.h>
#include <signal.h>

namespace nereus::broker {

int run_standalone(const standalone_options& o, standalone_service_factory extra) {
    // Block the stop signals in every thread (the ones started below inherit the mask) and
    // take them synchronously here, so no handler runs inside the io or storage threads.
    sigset_t stop_signals;
    sigemptyset(&stop_signals);
    sigaddset(&stop_signals, SIGINT);
    sigaddset(&stop_signals, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

    ledger_backend_options lo;
    lo.data_dir = o.data_dir;
    lo.metadata_url = o.metadata_url;
    lo.retention_time_ms = o.retention_time_minutes < 0 ? -1 : o.retention_time_minutes * 60'000;
    lo.retention_size_bytes = o.retention_size_mb < 0 ? -1 : o.retention_size_mb << 20;
    lo.retention_interval = std::chrono::seconds(o.retention_check_interval_s);
    lo.segment_max_entries = o.max_entries_per_ledger;
    lo.segment_min_age = std::chrono::minutes(o.min_ledger_rollover_minutes);
    lo.leader_commits = o.leader_commits;
    lo.pipelined_apply = o.pipelined_apply;
    lo.min_sync_interval = std::chrono::microseconds(o.min_sync_interval_us);
    lo.prepare_journal_files = o.prepared_journal_files;
    lo.prepare_max_bytes_per_s = std::uint64_t{o.prepare_max_mib_s} << 20;
    auto backend = ledger_backend::open(lo);
    if (!backend) {
        std::fprintf(stderr, "nereus standalone: cannot open data directory %s%s%s: %s\n",
                     o.data_dir.c_str(), o.metadata_url.empty() ? "" : " with metadata ",
                     o.metadata_url.c_str(), backend.error().message().c_str());
        return 1;
    }
    broker_options bo;
    bo.bind_address = o.bind_address;
    bo.port = o.port;
    bo.io_threads = o.io_threads;
    bo.blocking_threads = o.blocking_threads;
    bo.advertised_host = o.advertised_address;
    bo.max_message_size = o.max_message_size;
    bo.auto_create_topics = o.auto_create_topics;
    bo.max_unacked_per_consumer = o.max_unacked_per_consumer;
    bo.keepalive_interval = std::chrono::seconds(o.keepalive_interval_s);
    bo.stop_timeout = std::chrono::milliseconds(o.stop_timeout_ms);
    bo.dispatch_batch = o.dispatch_batch;
    bo.inline_reads = o.inline_reads;
    server srv(bo, **backend);
    if (auto r = srv.start(); !r) {
        std::fprintf(stderr, "nereus standalone: cannot listen on %s:%u: %s\n",
                     o.bind_address.c_str(), static_cast<unsigned>(o.port),
                     r.error().message().c_str());
        (void)(*backend)->close();
        return 1;
    }
    {
        const std::string host =
            o.advertised_address.empty() ? o.bind_address : o.advertised_address;
        (*backend)->set_advertised(srv.service_url(),
                                   "http://" + host + ":" + std::to_string(o.http_port));
    }
    std::unique_ptr<standalone_service> service;
    if (extra) {
        auto made = extra(srv, **backend, o);
        result<void> started = made ? (*made)->start() : result<void>(nereus::error(made.error()));
        if (!started) {
            // Fatal, as in Pulsar: a broker whose admin API is silently missing would mislead
            // every tool and health check pointed at it.
            std::fprintf(stderr,
                         "nereus standalone: cannot serve the admin REST API on %s:%u: %s\n",
                         o.bind_address.c_str(), static_cast<unsigned>(o.http_port),
                         started.error().message().c_str());
            srv.stop();
            (void)(*backend)->close();
            return 1;
        }
        service = std::move(*made);
    }
    NEREUS_LOG(broker_log(), info,
               "nereus standalone serving pulsar://{}:{} data-dir={} metadata={}", o.bind_address,
               srv.port(), o.data_dir,
               o.metadata_url.empty() ? std::string("rocksdb (embedded)") : o.metadata_url);
    int sig = 0;
    while (sigwait(&stop_signals, &sig) != 0) {
    }
    NEREUS_LOG(broker_log(), info, "signal {} received: stopping", sig);
    if (service) {
        service->stop();
    }
    srv.stop();
    if (auto r = (*backend)->close(); !r) {
        NEREUS_LOG(broker_log(), err, "closing the data directory failed: {}", r.error().message());
        return 1;
    }
    return 0;
}

}  // namespace nereus::broker
