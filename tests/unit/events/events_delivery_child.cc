// A child process for events_delivery_tests: a projection process that RESUMEs the
// subscription "orders-projection" on the durable SQLite store `db`, applies the first EVENT
// page it gets, prints "APPLIED <n>" and then hangs before the ack, so that the test SIGKILLs
// it between apply and ack (its lease is then still in the broker, its apply in the store).
//
// Usage: events_delivery_child SERVICE_URL ADMIN_URL DB HOLDER

#include "nereus/events/event_subscriptions.h"
#include "nereus/events/host.h"
#include "nereus/events/sqlite_projection.h"

#include <chrono>
#include <cstdio>
#include <thread>

using namespace nereus::events;
using namespace std::chrono_literals;

int main(int argc, char** argv) {
    if (argc != 5) {
        std::fprintf(stderr, "usage: %s SERVICE_URL ADMIN_URL DB HOLDER\n", argv[0]);
        return 2;
    }
    auto store = sqlite_projection::open(argv[3]);
    if (!store) {
        return 3;
    }
    host_options o;
    o.service_url = argv[1];
    o.admin_url = argv[2];
    o.holder_id = argv[4];
    auto subs = event_subscriptions::open(o);
    if (!subs) {
        return 4;
    }
    policy p;
    p.source_topic = "orders";
    p.format = admitted_format{"order", 1};
    p.lease = 1500ms;
    if (!(*subs)->declare_policy("order-events", p)) {
        return 5;
    }
    const auto deadline = std::chrono::steady_clock::now() + 60s;
    if (auto r = (*subs)->register_subscription({"orders-projection", "order-events"}, store->get(),
                                                deadline);
        !r) {
        std::printf("REGISTER %s\n", r.error().message().c_str());
        return 6;
    }
    run_options ro;
    ro.poll_wait = 300ms;
    ro.before_ack = [](const page& pg) {
        if (pg.kind == delivery_kind::event) {
            std::printf("APPLIED %zu\n", pg.events.size());
            std::fflush(stdout);
            for (int i = 0; i < 1200; ++i) {  // bounded: the test kills us long before
                std::this_thread::sleep_for(100ms);
            }
        }
    };
    auto r = run(**subs, "orders-projection", projection_handler(**store), ro);
    std::printf("RUN %s\n", r ? "ended" : r.error().message().c_str());
    return 7;
}
