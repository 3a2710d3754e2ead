// examples/orders: a small service on the subscriber runtime (src/nereus/runtime) over a live
// Pulsar-protocol broker (`make run` starts `nereus standalone` on pulsar://127.0.0.1:6650).
//
//   billing    Shared subscription on <prefix>-orders, lanes by key (4 lanes, the customer is
//              the key: one customer's orders are handled in order, a slow or failing customer
//              blocks only its own lane). Each order is JSON; a valid one is billed and a
//              shipment is published to <prefix>-shipments (the runtime's publisher: one
//              producer per topic), then acknowledged. An order with a negative amount throws:
//              the declared default for exceptions is retry (nack -> the broker redelivers), and
//              the dead-letter policy (max 2 redeliveries) moves it to
//              <prefix>-orders-billing-DLQ after its third delivery.
//   shipping   a batch handler on <prefix>-shipments: the runtime assembles batches of up to 8
//              (waiting up to 200 ms for more) and the batch is acknowledged as a whole.
//   dlq-audit  reads the dead-letter topic and reports what landed there.
//   publisher  after startup, publishes --orders orders (customers c0..c4 as keys) and one
//              poison order, each confirmed by the broker's receipt.
//
// Usage: orders_service [--url pulsar://127.0.0.1:6650] [--orders N] [--prefix NAME]
//                       [--self-check] [--timeout-s S] [--in-process]
//   default      runs until SIGINT/SIGTERM, then drains (5 s) and prints the shutdown report.
//   --self-check unique topic names for this run; stops by itself once every order was billed,
//                every shipment shipped and the poison order dead-lettered (or after
//                --timeout-s), then checks: each order billed exactly once, each shipment
//                shipped exactly once, the poison order dead-lettered once, every delivery
//                accounted for at shutdown. Prints "self-check: ok" and exits 0, or
//                "self-check: FAILED ..." and exits 1.
//   --in-process the runtime's in-process test transport (builds with NEREUS_TESTING, as
//                `make build` has it) on the real clock instead of a broker: the same service,
//                no network. Without the Pulsar binding compiled in, this is the only mode.

#include "nereus/runtime/codec.h"
#include "nereus/runtime/runtime.h"
#if NEREUS_RUNTIME_HAS_CLIENT
#include "nereus/runtime/pulsar/connect.h"
#endif
#if NEREUS_TESTING
#include "nereus/runtime/testing/test_broker.h"
#endif

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/json.hpp>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unistd.h>
#include <vector>

namespace rt = nereus::runtime;
namespace asio = boost::asio;
namespace json = boost::json;
using namespace std::chrono_literals;

// ---- the payloads (JSON through rt::json_codec<T>) ----

struct order {
    std::string id;
    std::string customer;
    std::int64_t cents = 0;
};
struct shipment {
    std::string order_id;
    std::string customer;
};

void tag_invoke(json::value_from_tag, json::value& v, const order& o) {
    v = {{"id", o.id}, {"customer", o.customer}, {"cents", o.cents}};
}
order tag_invoke(json::value_to_tag<order>, const json::value& v) {
    const auto& o = v.as_object();
    return {json::value_to<std::string>(o.at("id")), json::value_to<std::string>(o.at("customer")),
            o.at("cents").to_number<std::int64_t>()};
}
void tag_invoke(json::value_from_tag, json::value& v, const shipment& s) {
    v = {{"order", s.order_id}, {"customer", s.customer}};
}
shipment tag_invoke(json::value_to_tag<shipment>, const json::value& v) {
    const auto& o = v.as_object();
    return {json::value_to<std::string>(o.at("order")),
            json::value_to<std::string>(o.at("customer"))};
}

namespace {

struct settings {
    std::string url = "pulsar://127.0.0.1:6650";
    int orders = 20;
    std::string prefix = "example";
    bool self_check = false;
    int timeout_s = 60;
    bool in_process = false;
};

// What the service saw (strand-confined: every handler runs on the one executor).
struct tally {
    std::map<std::string, int> billed;    // order id -> times billed
    std::map<std::string, int> shipped;   // order id -> times shipped
    std::map<std::string, int> dead;      // order id -> times seen on the dead-letter topic
    std::map<std::string, int> attempts;  // order id -> deliveries to billing (incl. failures)
    std::uint64_t batches = 0;
    int published = 0;
    bool publish_failed = false;
    std::string poison_id;
};

settings parse(int argc, char** argv) {
    settings s;
    for (int i = 1; i < argc; ++i) {
        const std::string_view a = argv[i];
        auto next = [&]() -> std::string {
            if (i + 1 >= argc) {
                std::fprintf(stderr, "missing value after %s\n", argv[i]);
                std::exit(2);
            }
            return argv[++i];
        };
        if (a == "--url") {
            s.url = next();
        } else if (a == "--orders") {
            s.orders = std::atoi(next().c_str());
        } else if (a == "--prefix") {
            s.prefix = next();
        } else if (a == "--self-check") {
            s.self_check = true;
        } else if (a == "--timeout-s") {
            s.timeout_s = std::atoi(next().c_str());
        } else if (a == "--in-process") {
            s.in_process = true;
        } else {
            std::fprintf(stderr,
                         "usage: orders_service [--url URL] [--orders N] [--prefix NAME] "
                         "[--self-check] [--timeout-s S] [--in-process]\n");
            std::exit(2);
        }
    }
    return s;
}

const char* money(std::int64_t cents, char* buf, std::size_t n) {
    std::snprintf(buf, n, "%lld.%02lld", static_cast<long long>(cents / 100),
                  static_cast<long long>(cents % 100));
    return buf;
}

// The publisher: `n` orders for customers c0..c4 (the key), then the poison order.
asio::awaitable<void> publish_orders(rt::publisher pub, std::string topic, int n, tally& t) {
    for (int i = 0; i <= n; ++i) {
        order o;
        const bool poison = i == n;
        o.id = poison ? "o-poison" : "o-" + std::to_string(i);
        o.customer = "c" + std::to_string(i % 5);
        o.cents = poison ? -100 : 1000 + 125 * i;
        if (poison) {
            t.poison_id = o.id;
        }
        // Arguments are named locals: g++ 12 can destroy a temporary inside a co_await twice.
        std::optional<std::string> key = o.customer;
        auto id = co_await pub.publish<rt::json_codec<order>>(topic, o, std::move(key));
        if (!id) {
            std::printf("publisher: %s FAILED: %s\n", o.id.c_str(), id.error().message().c_str());
            t.publish_failed = true;
            co_return;
        }
        ++t.published;
        std::printf("publisher: %s for %s -> %s\n", o.id.c_str(), o.customer.c_str(),
                    id->to_string().c_str());
    }
}

bool finished(const tally& t, int n) {
    return t.published == n + 1 && static_cast<int>(t.billed.size()) == n &&
           static_cast<int>(t.shipped.size()) == n && t.dead.size() == 1;
}

// Checks what the self-check promises; prints each failure.
bool check(const tally& t, const rt::shutdown_report& r, int n) {
    bool ok = true;
    auto fail = [&](const std::string& what) {
        std::printf("self-check: FAILED %s\n", what.c_str());
        ok = false;
    };
    if (t.publish_failed || t.published != n + 1) {
        fail("published " + std::to_string(t.published) + " of " + std::to_string(n + 1));
    }
    for (int i = 0; i < n; ++i) {
        const auto id = "o-" + std::to_string(i);
        const auto b = t.billed.contains(id) ? t.billed.at(id) : 0;
        const auto s = t.shipped.contains(id) ? t.shipped.at(id) : 0;
        if (b != 1)
            fail(id + " billed " + std::to_string(b) + " times");
        if (s != 1)
            fail(id + " shipped " + std::to_string(s) + " times");
    }
    if (t.billed.contains(t.poison_id))
        fail("the poison order was billed");
    if (t.dead.size() != 1 || !t.dead.contains(t.poison_id) || t.dead.at(t.poison_id) != 1) {
        fail("the poison order was not dead-lettered exactly once");
    }
    if (!r.drained)
        fail("the drain did not finish");
    if (!r.balanced())
        fail("a subscription did not account for every delivery");
    for (const auto& s : r.subscriptions) {
        if (s.subscription == "billing" && s.dead_lettered != 1) {
            fail("billing dead-lettered " + std::to_string(s.dead_lettered));
        }
        if (s.settle_failed != 0)
            fail(s.subscription + " had unconfirmed settlements");
    }
    return ok;
}

asio::awaitable<int> run(settings s, rt::runtime& r, tally& t, asio::signal_set& signals) {
    const auto ex = co_await asio::this_coro::executor;
    const std::string orders_topic = s.prefix + "-orders";
    const std::string shipments_topic = s.prefix + "-shipments";

    // billing: lanes by customer; exceptions retry; 2 redeliveries, then the dead-letter topic.
    rt::subscriber_spec billing;
    billing.topics = rt::topic_selector::one(orders_topic);
    billing.subscription = "billing";
    billing.type = rt::subscription_type::shared;
    billing.initial = rt::initial_position::earliest;
    billing.dispatch = rt::lanes::by_key(4);
    billing.dead_letter = rt::dead_letter_policy{2, ""};
    billing.on_exception = rt::outcome::retry();
    auto bill = [&t, shipments_topic](const order& o,
                                      rt::context& ctx) -> asio::awaitable<rt::outcome> {
        ++t.attempts[o.id];
        char buf[32];
        if (o.cents < 0) {
            std::printf("billing: %s for %s: negative amount (delivery %u), failing\n",
                        o.id.c_str(), o.customer.c_str(), ctx.msg().redelivery_count + 1);
            throw std::invalid_argument("negative amount");
        }
        // Named locals, not temporaries, inside co_await (the g++ 12 trap).
        const shipment sh{o.id, o.customer};
        std::optional<std::string> key = o.customer;
        auto pub = ctx.publisher_handle();
        auto sent =
            co_await pub.publish<rt::json_codec<shipment>>(shipments_topic, sh, std::move(key));
        if (!sent) {
            std::printf("billing: %s: shipment not published (%s), retrying\n", o.id.c_str(),
                        sent.error().message().c_str());
            co_return rt::outcome::retry();
        }
        ++t.billed[o.id];
        std::printf("billing: %s for %s billed %s\n", o.id.c_str(), o.customer.c_str(),
                    money(o.cents, buf, sizeof buf));
        co_return rt::outcome::ack();
    };
    if (auto ok = r.subscribe<rt::json_codec<order>>(billing, bill); !ok) {
        std::printf("billing: %s\n", ok.error().message().c_str());
        co_return 1;
    }

    // shipping: batches of up to 8, acknowledged as a whole.
    rt::subscriber_spec shipping;
    shipping.topics = rt::topic_selector::one(shipments_topic);
    shipping.subscription = "shipping";
    shipping.type = rt::subscription_type::shared;
    shipping.initial = rt::initial_position::earliest;
    shipping.batch_size = 8;
    shipping.batch_linger = 200ms;
    auto ship = [&t](std::vector<shipment>& batch, rt::context&) {
        ++t.batches;
        std::string ids;
        for (const auto& sh : batch) {
            ++t.shipped[sh.order_id];
            ids += " " + sh.order_id;
        }
        std::printf("shipping: batch of %zu:%s\n", batch.size(), ids.c_str());
        return rt::outcome::ack();
    };
    if (auto ok = r.subscribe_batch<rt::json_codec<shipment>>(shipping, ship); !ok) {
        std::printf("shipping: %s\n", ok.error().message().c_str());
        co_return 1;
    }

    // dlq-audit: what the dead-letter policy moved.
    rt::subscriber_spec audit;
    audit.topics =
        rt::topic_selector::one(rt::dead_letter_topic(billing, rt::full_topic_name(orders_topic)));
    audit.subscription = "dlq-audit";
    audit.initial = rt::initial_position::earliest;
    auto record = [&t](const order& o, rt::context& ctx) {
        ++t.dead[o.id];
        std::printf("dlq-audit: %s for %s dead-lettered (from %s)\n", o.id.c_str(),
                    o.customer.c_str(), ctx.msg().topic.c_str());
        return rt::outcome::ack();
    };
    if (auto ok = r.subscribe<rt::json_codec<order>>(audit, record); !ok) {
        std::printf("dlq-audit: %s\n", ok.error().message().c_str());
        co_return 1;
    }

    auto started = co_await r.start();
    if (!started) {
        std::printf("start: %s\n", started.error().message().c_str());
        co_return 1;
    }
    std::printf("service: started on %s (topics %s, %s)\n",
                s.in_process ? "the in-process test transport" : s.url.c_str(),
                orders_topic.c_str(), shipments_topic.c_str());
    auto pub = publish_orders(r.publisher_handle(), orders_topic, s.orders, t);
    asio::co_spawn(ex, std::move(pub), asio::detached);

    // Wait: the self-check until everything arrived (bounded); otherwise until a signal.
    bool stop = false;
    auto on_signal = [&stop](const boost::system::error_code& ec, int) {
        if (!ec)
            stop = true;
    };
    signals.async_wait(on_signal);
    asio::steady_timer tick(ex);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(s.timeout_s);
    while (!stop) {
        if (s.self_check &&
            (finished(t, s.orders) || std::chrono::steady_clock::now() > deadline)) {
            break;
        }
        tick.expires_after(50ms);
        boost::system::error_code ec;
        co_await tick.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    }
    signals.cancel();
    std::printf("service: shutting down (drain up to 5 s)\n");
    auto report = co_await r.shutdown(5s);
    for (const auto& st : report.subscriptions) {
        std::printf(
            "report: %-9s received %llu acked %llu nacked %llu dead-lettered %llu "
            "unsettled %llu batches %llu\n",
            st.subscription.c_str(), static_cast<unsigned long long>(st.received),
            static_cast<unsigned long long>(st.acked), static_cast<unsigned long long>(st.nacked),
            static_cast<unsigned long long>(st.dead_lettered),
            static_cast<unsigned long long>(st.unsettled),
            static_cast<unsigned long long>(st.batches));
    }
    std::printf("report: drained=%s balanced=%s\n", report.drained ? "yes" : "no",
                report.balanced() ? "yes" : "no");
    if (!s.self_check) {
        co_return 0;
    }
    if (!check(t, report, s.orders)) {
        co_return 1;
    }
    std::printf(
        "self-check: ok (%d orders billed and shipped once in %llu batches, %s "
        "dead-lettered after %d deliveries)\n",
        s.orders, static_cast<unsigned long long>(t.batches), t.poison_id.c_str(),
        t.attempts[t.poison_id]);
    co_return 0;
}

}  // namespace

int main(int argc, char** argv) {
    auto s = parse(argc, argv);
    if (s.self_check) {
        // Fresh topics (and so fresh subscriptions) for this run.
        s.prefix += "-" + std::to_string(::getpid()) + "-" +
                    std::to_string(std::chrono::duration_cast<std::chrono::seconds>(
                                       std::chrono::system_clock::now().time_since_epoch())
                                       .count());
    }
    std::setvbuf(stdout, nullptr, _IOLBF, 0);
    asio::io_context io;
    auto clk = rt::clock::real(io.get_executor());
    std::optional<rt::transport> t;
    if (s.in_process) {
#if NEREUS_TESTING
        auto broker = std::make_shared<rt::testing::test_broker>(clk);
        t.emplace(std::make_shared<rt::testing::test_connection>(broker));
#else
        std::printf("--in-process needs a build with NEREUS_TESTING\n");
        return 2;
#endif
    } else {
#if NEREUS_RUNTIME_HAS_CLIENT
        rt::pulsar::options po;
        po.service_url = s.url;
        auto c = rt::pulsar::connect(io.get_executor(), po);
        if (!c) {
            std::printf("connect %s: %s\n", s.url.c_str(), c.error().message().c_str());
            return 1;
        }
        t.emplace(std::move(*c));
#else
        std::printf(
            "this build has no Pulsar binding (src/nereus/runtime/pulsar/): use "
            "--in-process\n");
        return 2;
#endif
    }
    rt::runtime r(io.get_executor(), std::move(*t), clk);
    tally seen;
    asio::signal_set signals(io, SIGINT, SIGTERM);
    int rc = 1;
    auto main_task = run(s, r, seen, signals);
    auto done = [&rc](std::exception_ptr e, int v) {
        if (e) {
            try {
                std::rethrow_exception(e);
            } catch (const std::exception& x) {
                std::printf("service: %s\n", x.what());
            }
            return;
        }
        rc = v;
    };
    asio::co_spawn(io, std::move(main_task), done);
    io.run();
    return rc;
}
