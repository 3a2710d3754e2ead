#include "load.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <mutex>
#include <thread>

namespace nereus::bench {

std::uint64_t now_ns() {
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<std::uint64_t>(ts.tv_sec) * 1000000000ULL +
           static_cast<std::uint64_t>(ts.tv_nsec);
}

double latencies::percentile_ms(double q) const {
    if (us_.empty()) {
        return 0;
    }
    std::vector<std::uint32_t> v = us_;
    const auto k =
        std::min(v.size() - 1, static_cast<std::size_t>(q * static_cast<double>(v.size())));
    std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k), v.end());
    return v[k] / 1000.0;
}

namespace {
constexpr std::uint32_t magic = 0x4e425231;  // "NBR1"
}

void fill_payload(char* buf, std::size_t size, std::uint64_t index, std::uint64_t intended) {
    std::memcpy(buf, &magic, 4);
    std::memcpy(buf + 4, &index, 8);
    std::memcpy(buf + 12, &intended, 8);
    (void)size;  // filler bytes are set once by the caller
}

void consumer_stats::on_message(const void* data, std::size_t n, std::uint64_t now) {
    ++consumed;
    if (first_ns == 0) {
        first_ns = now;
    }
    last_ns = now;
    std::uint32_t m = 0;
    std::uint64_t index = 0;
    std::uint64_t sent = 0;
    if (n < 20 || (std::memcpy(&m, data, 4), m != magic)) {
        ++foreign;
        return;
    }
    std::memcpy(&index, static_cast<const char*>(data) + 4, 8);
    std::memcpy(&sent, static_cast<const char*>(data) + 12, 8);
    if (index >= seen.size()) {
        ++foreign;
        return;
    }
    if (seen[index]) {
        ++duplicates;
        return;
    }
    seen[index] = true;
    ++distinct;
    e2e.add_ns(now > sent ? now - sent : 0);
}

namespace {

double secs(std::uint64_t a, std::uint64_t b) {
    return b > a ? static_cast<double>(b - a) / 1e9 : 0;
}

bool parse(int argc, char** argv, plan& p) {
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string k = argv[i];
        const char* v = argv[i + 1];
        if (k == "--mode")
            p.mode = v;
        else if (k == "--count")
            p.count = std::strtoull(v, nullptr, 10);
        else if (k == "--size")
            p.size = std::strtoull(v, nullptr, 10);
        else if (k == "--window")
            p.window = static_cast<std::uint32_t>(std::strtoul(v, nullptr, 10));
        else if (k == "--rate")
            p.rate = std::strtod(v, nullptr);
        else if (k == "--duration")
            p.duration = std::strtod(v, nullptr);
        else if (k == "--timeout")
            p.timeout = std::strtod(v, nullptr);
        else if (k == "--host")
            p.host = v;
        else if (k == "--port")
            p.port = std::atoi(v);
        else if (k == "--name")
            p.name = v;
        else if (k == "--label")
            p.label = v;
        else {
            std::fprintf(stderr, "unknown option %s\n", k.c_str());
            return false;
        }
    }
    if (p.mode == "rate") {
        if (p.rate <= 0 || p.duration <= 0) {
            std::fprintf(stderr, "rate mode needs --rate and --duration\n");
            return false;
        }
        p.count = static_cast<std::uint64_t>(p.rate * p.duration);
    } else {
        p.rate = 0;
    }
    if (p.mode != "seq" && p.mode != "concurrent" && p.mode != "rate") {
        std::fprintf(stderr, "--mode: seq, concurrent or rate\n");
        return false;
    }
    if (p.size < 20 || p.port <= 0 || p.count == 0 || p.window == 0) {
        std::fprintf(stderr, "need --size >= 20, --port, --count > 0, --window > 0\n");
        return false;
    }
    return true;
}

}  // namespace

int run_main(int argc, char** argv, const system_hooks& hooks) {
    plan p;
    if (!parse(argc, argv, p)) {
        return 2;
    }
    if (auto e = hooks.setup(p); !e.empty()) {
        std::fprintf(stderr, "setup: %s\n", e.c_str());
        return 1;
    }
    producer_stats ps(p.count);
    consumer_stats cs(p.count);
    std::string perr;
    std::string cerr;
    double e2e_secs = 0;
    if (p.mode == "seq") {
        auto prod = hooks.make_producer(p);
        perr = prod->run(p, ps);
        prod.reset();
        auto cons = hooks.make_consumer(p);
        cs.start_ns = now_ns();
        cerr = cons->run(p, cs, [] {});
        e2e_secs = secs(ps.start_ns, ps.last_ack_ns) + secs(cs.start_ns, cs.last_ns);
    } else {
        std::mutex mu;
        std::condition_variable cv;
        bool ready = false;
        auto cons = hooks.make_consumer(p);
        std::thread ct([&] {
            cerr = cons->run(p, cs, [&] {
                std::lock_guard lk(mu);
                ready = true;
                cv.notify_all();
            });
            std::lock_guard lk(mu);
            ready = true;
            cv.notify_all();
        });
        {
            std::unique_lock lk(mu);
            cv.wait(lk, [&] { return ready; });
        }
        auto prod = hooks.make_producer(p);
        perr = prod->run(p, ps);
        ct.join();
        e2e_secs = std::max(secs(ps.start_ns, ps.last_ack_ns), secs(ps.start_ns, cs.last_ns));
    }
    const double psecs = secs(ps.start_ns, ps.last_ack_ns);
    const std::uint64_t cfrom =
        p.mode == "seq" ? cs.start_ns : (cs.first_ns ? cs.first_ns : cs.start_ns);
    const double csecs = secs(cfrom, cs.last_ns);
    std::uint64_t errors = ps.errors + cs.errors + (perr.empty() ? 0 : 1) + (cerr.empty() ? 0 : 1);
    if (!perr.empty())
        std::fprintf(stderr, "producer: %s\n", perr.c_str());
    if (!cerr.empty())
        std::fprintf(stderr, "consumer: %s\n", cerr.c_str());
    if (ps.acked != p.count || cs.distinct != p.count) {
        std::fprintf(stderr, "incomplete: acked %llu distinct %llu of %llu\n",
                     static_cast<unsigned long long>(ps.acked),
                     static_cast<unsigned long long>(cs.distinct),
                     static_cast<unsigned long long>(p.count));
        ++errors;
    }
    std::printf(
        "result: system=%s mode=%s size=%zu count=%llu window=%u rate=%.0f produce_msg_s=%.0f "
        "pub_p50_ms=%.3f pub_p99_ms=%.3f pub_p999_ms=%.3f consume_msg_s=%.0f e2e_msg_s=%.0f "
        "e2e_p50_ms=%.3f e2e_p99_ms=%.3f e2e_p999_ms=%.3f acked=%llu consumed=%llu distinct=%llu "
        "duplicates=%llu errors=%llu\n",
        p.label.c_str(), p.mode.c_str(), p.size, static_cast<unsigned long long>(p.count), p.window,
        p.rate, psecs > 0 ? static_cast<double>(ps.acked) / psecs : 0,
        ps.publish.percentile_ms(0.5), ps.publish.percentile_ms(0.99),
        ps.publish.percentile_ms(0.999), csecs > 0 ? static_cast<double>(cs.consumed) / csecs : 0,
        e2e_secs > 0 ? static_cast<double>(cs.distinct) / e2e_secs : 0, cs.e2e.percentile_ms(0.5),
        cs.e2e.percentile_ms(0.99), cs.e2e.percentile_ms(0.999),
        static_cast<unsigned long long>(ps.acked), static_cast<unsigned long long>(cs.consumed),
        static_cast<unsigned long long>(cs.distinct),
        static_cast<unsigned long long>(cs.duplicates), static_cast<unsigned long long>(errors));
    std::fflush(stdout);
    return errors == 0 ? 0 : 1;
}

}  // namespace nereus::bench
