// Drains a topic's backlog through the C++ client library (nereus::client: the receive path an
// application links) and reports what it cost the client process: msg/s, CPU (utime + stime
// of the whole process) per message and heap allocations per message (a counting global
// operator new), all measured from the first message received to the last ack confirmed.
//
//   client_consume_bench --service-url pulsar://127.0.0.1:6650 --topic T --num-messages N
//                        [--subscription S] [--receiver-queue 1000] [--ack individual|none]
//                        [--max-acks-per-request 1000]
//
// Each message is received with a callback and (by default) acknowledged individually; the
// next receive is issued at once (acks are not awaited: they complete on ACK_RESPONSE). The
// backlog is produced beforehand (e.g. `nereus perf produce --no-batching`), after a run with
// --num-messages 0 (subscribe only) created the subscription. Prints one line:
//   client_consume: messages=N seconds=S msg_per_s=R cpu_us_per_msg=C allocs_per_msg=A
// and exits 0; a failure or a 120 s stall: a line on stderr and 1.
#include <atomic>
#include <boost/asio/use_future.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <memory>
#include <nereus/client/client.h>
#include <new>
#include <string>
#include <string_view>
#include <sys/resource.h>

namespace nc = nereus::client;
namespace asio = boost::asio;

namespace {
std::atomic<std::uint64_t> allocations{0};
}  // namespace

// The replaced global operator new/delete pair below is malloc/free on both sides; g++ 12 sees
// the inlined std::allocator calls and warns about a mismatch that is not there.
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"

void* operator new(std::size_t n) {
    allocations.fetch_add(1, std::memory_order_relaxed);
    if (void* p = std::malloc(n == 0 ? 1 : n)) {
        return p;
    }
    throw std::bad_alloc();
}
void operator delete(void* p) noexcept {
    std::free(p);
}
void operator delete(void* p, std::size_t) noexcept {
    std::free(p);
}

namespace {

double cpu_seconds() {
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
           static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

struct run_state {
    nc::consumer consumer;
    std::uint64_t target = 0;
    bool ack = true;
    std::uint64_t received = 0;
    std::uint64_t acked = 0;
    std::uint64_t failures = 0;
    bool finished = false;
    std::chrono::steady_clock::time_point first_at;
    double cpu_at_first = 0;
    std::uint64_t allocs_at_first = 0;
    std::chrono::steady_clock::time_point end_at;
    double cpu_at_end = 0;
    std::uint64_t allocs_at_end = 0;
    std::promise<void> done;
    std::atomic<std::uint64_t> progress{0};

    // Runs on the client's io thread (the completions' executor).
    void maybe_finish() {
        if (finished || received < target || (ack && acked < target)) {
            return;
        }
        finished = true;
        end_at = std::chrono::steady_clock::now();
        cpu_at_end = cpu_seconds();
        allocs_at_end = allocations.load(std::memory_order_relaxed);
        done.set_value();
    }
};

void receive_next(const std::shared_ptr<run_state>& st) {
    st->consumer.receive([st](nereus::result<nc::message> m) {
        if (!m) {
            ++st->failures;
            if (!st->finished) {
                st->finished = true;
                st->done.set_value();
            }
            return;
        }
        if (st->received == 0) {
            st->first_at = std::chrono::steady_clock::now();
            st->cpu_at_first = cpu_seconds();
            st->allocs_at_first = allocations.load(std::memory_order_relaxed);
        }
        ++st->received;
        st->progress.store(st->received, std::memory_order_relaxed);
        if (st->ack) {
            st->consumer.acknowledge(m->id(), [st](nereus::result<void> r) {
                if (!r) {
                    ++st->failures;
                }
                ++st->acked;
                st->maybe_finish();
            });
        }
        if (st->received < st->target) {
            receive_next(st);
        } else {
            st->maybe_finish();
        }
    });
}

}  // namespace

int main(int argc, char** argv) {
    std::string url = "pulsar://127.0.0.1:6650";
    std::string topic;
    std::string subscription = "client-bench";
    std::uint64_t n = 0;
    std::uint32_t queue = 1000;
    bool ack = true;
    std::uint32_t max_acks = nc::consumer_options{}.max_acks_per_request;
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string_view k = argv[i];
        const char* v = argv[i + 1];
        if (k == "--service-url") {
            url = v;
        } else if (k == "--topic") {
            topic = v;
        } else if (k == "--subscription") {
            subscription = v;
        } else if (k == "--num-messages") {
            n = std::strtoull(v, nullptr, 10);
        } else if (k == "--receiver-queue") {
            queue = static_cast<std::uint32_t>(std::strtoul(v, nullptr, 10));
        } else if (k == "--ack") {
            ack = std::string_view(v) != "none";
        } else if (k == "--max-acks-per-request") {  // 1: every ack its own ACK
            max_acks = static_cast<std::uint32_t>(std::strtoul(v, nullptr, 10));
        } else {
            std::fprintf(stderr, "unknown option %s\n", argv[i]);
            return 2;
        }
    }
    if (topic.empty()) {
        std::fprintf(stderr,
                     "usage: client_consume_bench --topic T --num-messages N [--service-url U] "
                     "[--subscription S] [--receiver-queue Q] [--ack individual|none] "
                     "[--max-acks-per-request M]\n");
        return 2;
    }
    nc::client c({.service_url = url});
    nc::consumer_options o;
    o.topics = {topic};
    o.subscription = subscription;
    o.start = nc::initial_position::earliest;
    o.receiver_queue_size = queue;
    o.max_acks_per_request = max_acks;
    auto sub = c.subscribe(o, asio::use_future);
    if (sub.wait_for(std::chrono::seconds(20)) != std::future_status::ready) {
        std::fprintf(stderr, "subscribe timed out\n");
        return 1;
    }
    auto s = sub.get();
    if (!s) {
        std::fprintf(stderr, "subscribe failed: %s\n", s.error().message().c_str());
        return 1;
    }
    if (n == 0) {  // only create the subscription (before the backlog is produced)
        c.close();
        return 0;
    }
    auto st = std::make_shared<run_state>();
    st->consumer = *s;
    st->target = n;
    st->ack = ack;
    auto done = st->done.get_future();
    receive_next(st);
    std::uint64_t last = 0;
    while (done.wait_for(std::chrono::seconds(120)) != std::future_status::ready) {
        const auto now = st->progress.load(std::memory_order_relaxed);
        if (now == last) {
            std::fprintf(stderr, "stalled at %llu messages\n",
                         static_cast<unsigned long long>(now));
            std::_Exit(1);
        }
        last = now;
    }
    if (st->failures > 0) {
        std::fprintf(stderr, "%llu failures\n", static_cast<unsigned long long>(st->failures));
        std::_Exit(1);
    }
    const double secs = std::chrono::duration<double>(st->end_at - st->first_at).count();
    const double msgs = static_cast<double>(n);
    std::printf(
        "client_consume: messages=%llu seconds=%.3f msg_per_s=%.0f cpu_us_per_msg=%.3f "
        "allocs_per_msg=%.2f\n",
        static_cast<unsigned long long>(n), secs, msgs / secs,
        (st->cpu_at_end - st->cpu_at_first) * 1e6 / msgs,
        static_cast<double>(st->allocs_at_end - st->allocs_at_first) / msgs);
    std::fflush(stdout);
    c.close();
    return 0;
}
