#include "apps/nereus/perf/perf.h"

#include <fmt/format.h>

#include "apps/nereus/perf/client.h"
#include "apps/nereus/perf/raw_baseline.h"
#include "apps/nereus/perf/stats.h"
#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <csignal>
#include <cstdio>
#include <optional>
#include <random>
#include <thread>

namespace nereus::app::perf {

struct perf_command {
    perf_options produce;
    perf_options consume;
};

std::shared_ptr<perf_command> add_perf_command(CLI::App& app, int& status) {
    auto cmd = std::make_shared<perf_command>();
    auto* perf = app.add_subcommand(
        "perf", "Load generator over the Pulsar protocol (like pulsar-perf): rate, latency");
    perf->require_subcommand(1);
    auto* produce = perf->add_subcommand(
        "produce",
        "Publish (optionally also consume) and report msg/s, MB/s, publish and "
        "end-to-end latency");
    add_perf_options(*produce, cmd->produce, perf_mode::produce);
    produce->callback([&status, cmd] { status = run_perf(cmd->produce); });
    auto* consume =
        perf->add_subcommand("consume", "Consume and report msg/s, MB/s and end-to-end latency");
    add_perf_options(*consume, cmd->consume, perf_mode::consume);
    consume->callback([&status, cmd] { status = run_perf(cmd->consume); });
    return cmd;
}

namespace {

constexpr auto tok = asio::as_tuple(asio::use_awaitable);

double ms(std::uint64_t ns) {
    return static_cast<double>(ns) / 1e6;
}

double seconds_between(steady::time_point a, steady::time_point b) {
    return std::chrono::duration<double>(b - a).count();
}

std::string latency_line(const histogram& h) {
    if (h.count() == 0) {
        return "n=0";
    }
    return fmt::format("p50 {:.3f} p99 {:.3f} p999 {:.3f} max {:.3f} mean {:.3f} ms (n={})",
                       ms(h.percentile(0.5)), ms(h.percentile(0.99)), ms(h.percentile(0.999)),
                       ms(h.max()), h.mean() / 1e6, h.count());
}

std::chrono::nanoseconds to_ns(double seconds) {
    return std::chrono::nanoseconds(static_cast<std::int64_t>(seconds * 1e9));
}

// Threads: the session, the producers and the reporter run on `ioc`'s thread (the caller's).
// `produce --consume` runs the consumers on a second thread of their own (consumer_ioc), as
// a consuming application would be, so that receiving never delays a send or a receipt (the
// peers' load generators in bench/ do the same); `--consumer-thread=false` keeps them on one
// thread. The two threads share only: perf_stats (producers write the producer fields, the
// consumers the consumer fields), the atomics below (hand-offs, release/acquire) and `start`
// (written before `run_started`). Every consumer is touched by its thread alone.
struct run_state {
    explicit run_state(perf_options opts) : o(std::move(opts)) {}

    perf_options o;
    asio::io_context ioc{1};
    std::unique_ptr<asio::io_context> consumer_ioc;  // produce --consume on two threads
    perf_stats stats;
    std::vector<std::unique_ptr<producer>> producers;
    std::vector<std::unique_ptr<consumer>> consumers;
    asio::signal_set signals{ioc, SIGINT, SIGTERM};
    asio::steady_timer report_timer{ioc};
    std::optional<asio::steady_timer> consumer_report_timer;  // on consumer_ioc
    bool producing = false;
    bool consuming = false;
    std::atomic<bool> stop{false};
    std::atomic<bool> finished{false};
    int running_producers = 0;
    steady::time_point start{};
    std::vector<std::string> errors;
    // Two-thread hand-offs: the consumers are subscribed (consumers_failed then tells how), the
    // run has started (`start` is set), the producers are done, the consumers are drained and
    // closed (consumer_errors then holds their errors).
    std::atomic<bool> consumers_ready{false};
    std::atomic<bool> consumers_failed{false};
    std::atomic<bool> run_started{false};
    std::atomic<bool> producers_done{false};
    std::atomic<bool> consumers_done{false};
    std::atomic<bool> consumers_closing{false};  // ends the consumers' reporter
    std::vector<std::string> consumer_errors;

    bool consumer_thread() const { return consumer_ioc != nullptr; }
    asio::io_context& consumers_context() { return consumer_thread() ? *consumer_ioc : ioc; }
};

// Completion handler of spawned coroutines: nothing should escape them (errors are values), but
// if something does, the run fails with it instead of losing it.
// `errors` is the list of the thread the coroutine runs on.
auto record_exception(std::vector<std::string>& errors, const char* what) {
    return [&errors, what](const std::exception_ptr& e) {
        if (!e) {
            return;
        }
        try {
            std::rethrow_exception(e);
        } catch (const std::exception& ex) {
            errors.push_back(fmt::format("{} failed: {}", what, ex.what()));
        }
    };
}

auto record_exception(run_state& s, const char* what) {
    return record_exception(s.errors, what);
}

void request_stop(run_state& s) {
    s.stop = true;
    for (auto& p : s.producers) {
        p->stop();
    }
}

// On the calling coroutine's own thread (either io_context).
asio::awaitable<void> sleep_for(std::chrono::milliseconds d) {
    asio::steady_timer t(co_await asio::this_coro::executor);
    t.expires_after(d);
    (void)co_await t.async_wait(tok);
}

// Prints one line per --report-interval with the producers' part (`pub`) and/or the
// consumers' part (`cons`), each from its own thread when the consumers have one.
// It ends once `done` is set and its timer cancelled.
asio::awaitable<void> reporter(
    run_state& s, asio::steady_timer& timer, const std::atomic<bool>& done, bool pub, bool cons) {
    auto last = s.start;
    std::uint64_t last_receipted = 0;
    std::uint64_t last_consumed = 0;
    std::uint64_t last_rbytes = 0;
    std::uint64_t last_cbytes = 0;
    while (!done) {
        timer.expires_after(to_ns(s.o.report_interval));
        (void)co_await timer.async_wait(tok);
        if (done) {
            break;
        }
        const auto now = steady::now();
        const double dt = seconds_between(last, now);
        if (dt <= 0) {
            continue;
        }
        auto& st = s.stats;
        std::string line = fmt::format("perf [{:7.1f}s]", seconds_between(s.start, now));
        if (pub) {
            std::uint64_t in_flight = 0;
            for (const auto& p : s.producers) {
                in_flight += p->in_flight();
            }
            line += fmt::format(
                " pub {:9.0f} msg/s {:7.2f} MB/s lat p50 {:.3f} p99 {:.3f} ms in-flight {}",
                static_cast<double>(st.receipted - last_receipted) / dt,
                static_cast<double>(st.receipted_bytes - last_rbytes) / dt / 1e6,
                ms(st.publish_interval.percentile(0.5)), ms(st.publish_interval.percentile(0.99)),
                in_flight);
        }
        if (cons) {
            line += fmt::format(
                "{} cons {:9.0f} msg/s {:7.2f} MB/s e2e p50 {:.3f} p99 {:.3f} ms", pub ? " |" : "",
                static_cast<double>(st.consumed - last_consumed) / dt,
                static_cast<double>(st.consumed_bytes - last_cbytes) / dt / 1e6,
                ms(st.e2e_interval.percentile(0.5)), ms(st.e2e_interval.percentile(0.99)));
        }
        std::printf("%s\n", line.c_str());
        std::fflush(stdout);
        if (pub) {
            st.publish_interval.reset();
        }
        if (cons) {
            st.e2e_interval.reset();
        }
        last = now;
        last_receipted = st.receipted;
        last_consumed = st.consumed;
        last_rbytes = st.receipted_bytes;
        last_cbytes = st.consumed_bytes;
    }
}

void collect_producer_errors(run_state& s) {
    for (const auto& p : s.producers) {
        if (p->failed()) {
            s.errors.push_back(p->error_text());
        }
    }
}

// On the consumers' thread.
void collect_consumer_errors(run_state& s, std::vector<std::string>& errors) {
    for (const auto& c : s.consumers) {
        if (c->failed()) {
            errors.push_back(c->error_text());
        }
    }
}

bool any_consumer_failed(const run_state& s) {
    return std::any_of(s.consumers.begin(), s.consumers.end(),
                       [](const auto& c) { return c->failed(); });
}

// Opens clients (one connection and one SUBSCRIBE or PRODUCER each) at most `open_parallelism`
// at a time, so thousands of topics connect in seconds rather than one round trip after another.
// Stops starting new opens after the first failure or a stop request; returns false on failure.
constexpr std::size_t open_parallelism = 64;

template <class Client>
asio::awaitable<bool> open_parallel(run_state& s, std::vector<std::unique_ptr<Client>>& clients) {
    auto ex = co_await asio::this_coro::executor;
    std::size_t next = 0;
    std::size_t running = 0;
    bool failed = false;
    while (running > 0 || (next < clients.size() && !failed && !s.stop)) {
        while (running < open_parallelism && next < clients.size() && !failed && !s.stop) {
            Client* c = clients[next++].get();
            ++running;
            asio::co_spawn(
                ex,
                [&s, c, &failed, &running]() -> asio::awaitable<void> {
                    try {
                        if (auto r = co_await c->open(s.o.service); !r) {
                            failed = true;
                        }
                    } catch (...) {
                        failed = true;
                    }
                    --running;
                },
                asio::detached);
        }
        co_await sleep_for(std::chrono::milliseconds(1));
    }
    co_return !failed;
}

// Creates and subscribes the consumers (on the consumers' thread), then starts their flow.
asio::awaitable<void> open_consumers(run_state& s) {
    const auto& o = s.o;
    for (std::size_t t = 0; t < o.topic_names.size(); ++t) {
        for (std::uint32_t c = 0; c < o.consumers; ++c) {
            consumer_config cc;
            cc.topic = o.topic_names[t];
            cc.subscription = o.subscription;
            cc.name = fmt::format("perf-consumer-{}-{}", t, c);
            cc.sub_type = o.sub_type;
            cc.initial_position = o.initial_position;
            cc.receiver_queue = o.receiver_queue;
            cc.ack = o.ack_kind;
            cc.ack_group_max = o.ack_group_max;
            cc.ack_group_interval = to_ns(o.ack_group_ms / 1000);
            cc.own_run_only = s.producing;
            cc.defer_flow = o.defer_flow;
            s.consumers.emplace_back(
                std::make_unique<consumer>(s.consumers_context(), s.stats, std::move(cc)));
        }
    }
    const auto open_start = steady::now();
    (void)co_await open_parallel(s, s.consumers);
    if (!any_consumer_failed(s) && !s.stop) {
        std::printf("perf consume: %zu consumers subscribed in %.2f s\n", s.consumers.size(),
                    seconds_between(open_start, steady::now()));
        std::fflush(stdout);
    }
    if (o.defer_flow) {
        for (auto& c : s.consumers) {
            c->start_flow();
        }
    }
}

// After the run (on the consumers' thread): waits for the messages still due (produce --consume:
// every receipted one, bounded by --drain-timeout; consume: the count or --time), sends the last
// acks and waits for their responses. `stop_at` is consume's --time end.
asio::awaitable<void> drain_consumers(run_state& s,
                                      steady::time_point stop_at,
                                      std::vector<std::string>& errors) {
    const auto& o = s.o;
    auto& st = s.stats;
    if (s.producing) {
        // Every receipted message of this run must arrive, bounded by --drain-timeout.
        const auto until = steady::now() + to_ns(o.drain_timeout);
        while (st.distinct < st.receipted && !any_consumer_failed(s) && steady::now() < until) {
            co_await sleep_for(std::chrono::milliseconds(10));
        }
    } else {
        while (!s.stop && !any_consumer_failed(s) && steady::now() < stop_at &&
               (o.num_messages == 0 || st.consumed < o.num_messages)) {
            co_await sleep_for(std::chrono::milliseconds(10));
        }
    }
    for (auto& c : s.consumers) {
        c->flush_acks();
    }
    const auto until = steady::now() + to_ns(std::min(o.drain_timeout, 10.0));
    auto outstanding = [&s] {
        std::uint64_t n = 0;
        for (const auto& c : s.consumers) {
            n += c->failed() ? 0 : c->outstanding_acks();
        }
        return n;
    };
    while (outstanding() > 0 && steady::now() < until) {
        co_await sleep_for(std::chrono::milliseconds(5));
    }
    if (const auto n = outstanding(); n > 0) {
        errors.push_back(fmt::format("{} ACKs without an ACK_RESPONSE", n));
    }
}

// produce --consume on two threads: the consumers' whole life, on consumer_ioc. Hands off to
// the session through run_state's atomics; its errors go to consumer_errors.
asio::awaitable<void> consumer_side(run_state& s) {
    co_await open_consumers(s);
    s.consumers_failed.store(any_consumer_failed(s), std::memory_order_relaxed);
    s.consumers_ready.store(true, std::memory_order_release);
    while (!s.run_started.load(std::memory_order_acquire) &&
           !s.producers_done.load(std::memory_order_acquire)) {
        co_await sleep_for(std::chrono::milliseconds(1));
    }
    const bool ran = s.run_started.load(std::memory_order_acquire);
    auto ex = co_await asio::this_coro::executor;
    if (ran) {
        s.consumer_report_timer.emplace(ex);
        asio::co_spawn(ex, reporter(s, *s.consumer_report_timer, s.consumers_closing, false, true),
                       record_exception(s.consumer_errors, "consumer reporter"));
        for (auto& c : s.consumers) {
            asio::co_spawn(ex, c->ack_loop(), record_exception(s.consumer_errors, "ack loop"));
        }
    }
    while (!s.producers_done.load(std::memory_order_acquire)) {
        co_await sleep_for(std::chrono::milliseconds(10));
    }
    if (ran && !s.stop) {
        co_await drain_consumers(s, steady::time_point::max(), s.consumer_errors);
    }
    collect_consumer_errors(s, s.consumer_errors);
    s.consumers_closing = true;
    if (s.consumer_report_timer) {
        s.consumer_report_timer->cancel();
    }
    for (auto& c : s.consumers) {
        c->close();
    }
    s.consumers_done.store(true, std::memory_order_release);
}

asio::awaitable<void> session(run_state& s) {
    const auto& o = s.o;
    auto& st = s.stats;
    s.signals.async_wait([&s](const boost::system::error_code& ec, int) {
        if (!ec) {
            std::fprintf(stderr, "perf: stopping (signal)\n");
            request_stop(s);
        }
    });
    // On two threads, the consumers' own coroutine owns them; this one waits for its hand-offs.
    auto consumers_finish = [&s]() -> asio::awaitable<void> {
        s.producers_done.store(true, std::memory_order_release);
        while (!s.consumers_done.load(std::memory_order_acquire)) {
            co_await sleep_for(std::chrono::milliseconds(5));
        }
        s.errors.insert(s.errors.end(), s.consumer_errors.begin(), s.consumer_errors.end());
    };

    // Consumers first, so a --consume run sees every message from a Latest position.
    bool consumers_failed = false;
    if (s.consuming && s.consumer_thread()) {
        asio::co_spawn(*s.consumer_ioc, consumer_side(s),
                       record_exception(s.consumer_errors, "consumer side"));
        while (!s.consumers_ready.load(std::memory_order_acquire)) {
            co_await sleep_for(std::chrono::milliseconds(1));
        }
        consumers_failed = s.consumers_failed.load(std::memory_order_relaxed);
    } else if (s.consuming) {
        co_await open_consumers(s);
        consumers_failed = any_consumer_failed(s);
    }
    if (s.producing && !consumers_failed && !s.stop) {
        const auto total = static_cast<std::uint32_t>(o.topic_names.size() * o.producers);
        std::uint32_t index = 0;
        for (std::size_t t = 0; t < o.topic_names.size(); ++t) {
            for (std::uint32_t p = 0; p < o.producers; ++p, ++index) {
                producer_config pc;
                pc.topic = o.topic_names[t];
                pc.index = index;
                pc.messages = o.num_messages / total + (index < o.num_messages % total ? 1 : 0);
                if (o.num_messages > 0 && pc.messages == 0) {
                    continue;  // more producers than messages
                }
                pc.rate = o.rate / total;
                pc.size = o.size;
                pc.max_pending = o.max_pending;
                pc.batch_max = o.batching() ? o.batch_max_messages : 1;
                pc.batch_delay = to_ns(o.batch_delay_ms / 1000);
                pc.batch_max_bytes = o.batch_max_bytes;
                if (st.track) {
                    // Before any producer runs: the consumers read these only for messages of
                    // this run, which are sent after.
                    st.first_index[index] = st.seen.size();
                    st.quota[index] = pc.messages;
                    st.seen.resize(st.seen.size() + pc.messages, 0);
                }
                s.producers.emplace_back(std::make_unique<producer>(s.ioc, st, std::move(pc)));
            }
        }
        (void)co_await open_parallel(s, s.producers);
    }
    collect_producer_errors(s);
    if (!s.consumer_thread()) {
        collect_consumer_errors(s, s.errors);
    }
    if (!s.errors.empty() || s.stop || consumers_failed) {
        s.finished = true;
        for (auto& p : s.producers) {
            p->close();
        }
        if (s.consumer_thread()) {
            co_await consumers_finish();
        } else {
            for (auto& c : s.consumers) {
                c->close();
            }
        }
        s.signals.cancel();
        co_return;
    }

    s.start = steady::now();
    s.run_started.store(true, std::memory_order_release);
    const auto stop_at =
        o.time_seconds > 0 ? s.start + to_ns(o.time_seconds) : steady::time_point::max();
    const bool pub_here = s.producing;
    const bool cons_here = s.consuming && !s.consumer_thread();
    asio::co_spawn(s.ioc, reporter(s, s.report_timer, s.finished, pub_here, cons_here),
                   record_exception(s, "reporter"));
    if (cons_here) {
        for (auto& c : s.consumers) {
            asio::co_spawn(s.ioc, c->ack_loop(), record_exception(s, "ack loop"));
        }
    }
    for (auto& p : s.producers) {
        ++s.running_producers;
        asio::co_spawn(s.ioc, p->run(s.start, stop_at, to_ns(o.drain_timeout)),
                       [&s](const std::exception_ptr& e) {
                           --s.running_producers;
                           record_exception(s, "producer")(e);
                       });
    }
    // Producers end by themselves (quota, --time, a signal, an error; receipts drained).
    while (s.running_producers > 0) {
        co_await sleep_for(std::chrono::milliseconds(10));
    }
    if (s.consuming && s.consumer_thread()) {
        co_await consumers_finish();
    } else if (s.consuming) {
        co_await drain_consumers(s, stop_at, s.errors);
    }
    collect_producer_errors(s);
    if (!s.consumer_thread()) {
        collect_consumer_errors(s, s.errors);
    }
    s.finished = true;
    s.report_timer.cancel();
    for (auto& p : s.producers) {
        p->close();
    }
    if (!s.consumer_thread()) {
        for (auto& c : s.consumers) {
            c->close();
        }
    }
    s.signals.cancel();
}

std::string window_text(const perf_options& o) {
    return o.batching()
               ? fmt::format("batches of <= {} / {} ms", o.batch_max_messages, o.batch_delay_ms)
               : std::string("no batching");
}

void print_raw(const char* when,
               const result<raw_baseline>& r,
               const perf_options& o,
               std::uint32_t group) {
    if (!r) {
        std::printf("raw fdatasync baseline (%s): failed: %s\n", when, r.error().message().c_str());
        return;
    }
    std::printf(
        "raw fdatasync baseline (%s, group %u): %.0f rec/s %.2f MB/s, %u-byte records, "
        "write+fdatasync p50 %.3f p99 %.3f ms, %llu syncs in %.1f s, dir %s\n",
        when, group, r->records_per_s, r->mb_per_s, o.size, r->sync_p50_ms, r->sync_p99_ms,
        static_cast<unsigned long long>(r->syncs), o.raw_seconds, o.raw_baseline_dir.c_str());
    std::fflush(stdout);
}

// The window-sized group (the ceiling for this record size and window), then one record per
// fdatasync (the latency floor of one durable write, what a lightly loaded run pays).
result<raw_baseline> measure_raw(const char* when, const perf_options& o, std::uint32_t group) {
    auto r = measure_raw_baseline(o.raw_baseline_dir, o.size, group, o.raw_seconds);
    print_raw(when, r, o, group);
    if (r && group > 1) {
        print_raw(when, measure_raw_baseline(o.raw_baseline_dir, o.size, 1, o.raw_seconds), o, 1);
    }
    return r;
}

}  // namespace

int run_perf(perf_options o) {
    if (auto e = finalize(o); e) {
        std::fprintf(stderr, "perf: %s\n", e->c_str());
        return 2;
    }
    run_state s(std::move(o));
    const auto& opt = s.o;
    s.producing = opt.mode == perf_mode::produce;
    s.consuming = opt.mode == perf_mode::consume || opt.consume;
    auto& st = s.stats;
    st.run_id = std::random_device{}();
    const auto total_producers = static_cast<std::uint32_t>(opt.topic_names.size() * opt.producers);
    if (s.producing && s.consuming && opt.num_messages > 0 && opt.size >= payload_header_bytes) {
        st.track = true;
        st.first_index.assign(total_producers, 0);
        st.quota.assign(total_producers, 0);
        st.seen.reserve(opt.num_messages);
    }
    if (s.producing && s.consuming && opt.size < payload_header_bytes) {
        std::fprintf(stderr,
                     "perf: --consume needs --size >= %zu (the payload carries the send time and "
                     "message index)\n",
                     payload_header_bytes);
        return 2;
    }
    const std::uint32_t group = total_producers * opt.max_pending;

    if (s.producing) {
        std::printf(
            "perf produce: %s, %zu topic(s) x %u producer(s), %u B, rate %s, window %u per "
            "producer, %s%s\n",
            opt.service_url.c_str(), opt.topic_names.size(), opt.producers, opt.size,
            opt.rate > 0 ? fmt::format("{:.0f} msg/s (paced by schedule)", opt.rate).c_str()
                         : "max",
            opt.max_pending, window_text(opt).c_str(),
            opt.consume ? fmt::format(", consuming ({} {}, {} ack)", opt.subscription,
                                      opt.subscription_type, opt.ack)
                              .c_str()
                        : "");
    } else {
        std::printf(
            "perf consume: %s, %zu topic(s) x %u consumer(s), subscription %s (%s, %s), "
            "%s acks\n",
            opt.service_url.c_str(), opt.topic_names.size(), opt.consumers,
            opt.subscription.c_str(), opt.subscription_type.c_str(),
            opt.subscription_position.c_str(), opt.ack.c_str());
    }
    std::fflush(stdout);

    const bool raw = s.producing && !opt.raw_baseline_dir.empty();
    std::optional<result<raw_baseline>> raw_before;
    std::optional<result<raw_baseline>> raw_after;
    if (raw) {
        raw_before = measure_raw("before", opt, group);
    }

    std::thread consumer_thread;
    std::optional<asio::executor_work_guard<asio::io_context::executor_type>> consumer_work;
    if (s.producing && s.consuming && opt.consumer_thread) {
        s.consumer_ioc = std::make_unique<asio::io_context>(1);
        consumer_work.emplace(s.consumer_ioc->get_executor());
        consumer_thread = std::thread([&s] { s.consumer_ioc->run(); });
    }
    asio::co_spawn(s.ioc, session(s), record_exception(s, "session"));
    s.ioc.run();
    if (consumer_thread.joinable()) {
        // Normally already set (consumers_done came after it); if the session ended some other
        // way (an exception), this lets the consumers' side finish (its drain is bounded),
        // close and end, and its errors are reported here.
        const bool merged = s.producers_done.exchange(true, std::memory_order_acq_rel);
        consumer_work.reset();  // the consumers close (consumers_done): their work ends
        consumer_thread.join();
        if (!merged) {
            s.errors.insert(s.errors.end(), s.consumer_errors.begin(), s.consumer_errors.end());
        }
    }

    if (raw) {
        raw_after = measure_raw("after", opt, group);
    }

    // ---- final report ----
    std::string summary = fmt::format("perf-summary: mode={} topics={}",
                                      s.producing ? "produce" : "consume", opt.topic_names.size());
    if (s.producing) {
        const double secs = st.receipted > 0 ? seconds_between(s.start, st.last_receipt) : 0;
        const double rate = secs > 0 ? static_cast<double>(st.receipted) / secs : 0;
        const double mbs = secs > 0 ? static_cast<double>(st.receipted_bytes) / secs / 1e6 : 0;
        std::printf(
            "perf produce: sent %llu, receipted %llu, send errors %llu in %.2f s: %.0f "
            "msg/s %.2f MB/s\n",
            static_cast<unsigned long long>(st.sent), static_cast<unsigned long long>(st.receipted),
            static_cast<unsigned long long>(st.send_errors), secs, rate, mbs);
        std::printf("perf produce: publish latency (intended send -> receipt) %s\n",
                    latency_line(st.publish_total).c_str());
        std::printf("perf produce:   of which send lag (intended -> SEND encoded) %s\n",
                    latency_line(st.send_lag).c_str());
        std::printf("perf produce:   and SEND encoded -> receipt %s\n",
                    latency_line(st.publish_from_send).c_str());
        summary += fmt::format(
            " size={} rate={:.0f} producers={} batch={} window={} sent={} receipted={} "
            "produce_msg_s={:.0f} "
            "produce_mb_s={:.2f} pub_p50_ms={:.3f} pub_p99_ms={:.3f} pub_p999_ms={:.3f} "
            "pub_max_ms={:.3f} sent_p50_ms={:.3f} sent_p99_ms={:.3f} lag_p50_ms={:.3f} "
            "lag_p99_ms={:.3f}",
            opt.size, opt.rate, total_producers, opt.batching() ? opt.batch_max_messages : 0,
            opt.max_pending, st.sent, st.receipted, rate, mbs, ms(st.publish_total.percentile(0.5)),
            ms(st.publish_total.percentile(0.99)), ms(st.publish_total.percentile(0.999)),
            ms(st.publish_total.max()), ms(st.publish_from_send.percentile(0.5)),
            ms(st.publish_from_send.percentile(0.99)), ms(st.send_lag.percentile(0.5)),
            ms(st.send_lag.percentile(0.99)));
        if (st.sent != st.receipted) {
            s.errors.push_back(
                fmt::format("{} messages sent but not receipted", st.sent - st.receipted));
        }
    }
    if (s.consuming) {
        const auto from = s.producing ? s.start : st.first_message;
        const double secs = st.consumed > 0 ? seconds_between(from, st.last_message) : 0;
        const double rate = secs > 0 ? static_cast<double>(st.consumed) / secs : 0;
        const double mbs = secs > 0 ? static_cast<double>(st.consumed_bytes) / secs / 1e6 : 0;
        std::printf(
            "perf consume: consumed %llu in %.2f s: %.0f msg/s %.2f MB/s; acked %llu, "
            "ack responses %llu/%llu, ack errors %llu, bad messages %llu\n",
            static_cast<unsigned long long>(st.consumed), secs, rate, mbs,
            static_cast<unsigned long long>(st.acked),
            static_cast<unsigned long long>(st.ack_responses),
            static_cast<unsigned long long>(st.ack_requests),
            static_cast<unsigned long long>(st.ack_errors),
            static_cast<unsigned long long>(st.bad_messages));
        if (s.producing) {
            std::printf(
                "perf consume: this run's messages: %llu distinct of %llu receipted, "
                "%llu duplicates, %llu from other runs\n",
                static_cast<unsigned long long>(st.distinct),
                static_cast<unsigned long long>(st.receipted),
                static_cast<unsigned long long>(st.duplicates),
                static_cast<unsigned long long>(st.foreign));
            if (st.distinct < st.receipted) {
                s.errors.push_back(fmt::format("{} receipted messages were not consumed",
                                               st.receipted - st.distinct));
            }
        }
        std::printf("perf consume: end-to-end latency (intended send -> received) %s\n",
                    latency_line(st.e2e_total).c_str());
        summary += fmt::format(" consumers={} consumed={}", s.consumers.size(), st.consumed);
        if (s.producing) {
            summary += fmt::format(" distinct={} duplicates={}", st.distinct, st.duplicates);
        }
        summary += fmt::format(
            " consume_msg_s={:.0f} consume_mb_s={:.2f} e2e_p50_ms={:.3f} e2e_p99_ms={:.3f} "
            "e2e_p999_ms={:.3f} e2e_max_ms={:.3f}",
            rate, mbs, ms(st.e2e_total.percentile(0.5)), ms(st.e2e_total.percentile(0.99)),
            ms(st.e2e_total.percentile(0.999)), ms(st.e2e_total.max()));
        if (st.ack_errors > 0) {
            s.errors.push_back(fmt::format("{} ACK_RESPONSEs with an error", st.ack_errors));
        }
        if (st.bad_messages > 0) {
            s.errors.push_back(fmt::format("{} messages failed to decode", st.bad_messages));
        }
    }
    if (raw_before && *raw_before && raw_after && *raw_after) {
        summary += fmt::format(" raw_before_rec_s={:.0f} raw_after_rec_s={:.0f}",
                               (*raw_before)->records_per_s, (*raw_after)->records_per_s);
    }
    summary += fmt::format(" errors={}", s.errors.size());
    for (const auto& e : s.errors) {
        std::printf("perf: error: %s\n", e.c_str());
    }
    std::printf("%s\n", summary.c_str());
    std::fflush(stdout);
    return s.errors.empty() ? 0 : 1;
}

}  // namespace nereus::app::perf
