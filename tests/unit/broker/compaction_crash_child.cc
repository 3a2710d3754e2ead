// The process compaction_ledger_test kills: over the ledger backend in DIR (argv[1]) it
// appends 10 keyed entries to a topic, compacts them (prints "FIRST <end>"), appends 5 more and
// compacts again, stopping between the snapshot object put and the record CAS: it prints
// "PUT" there and waits to be SIGKILLed.

#include "nereus/broker/ledger_backend.h"
#include "nereus/broker/topic_compaction.h"

#include "unit/broker/support/compaction_support.h"
#include <chrono>
#include <cstdio>
#include <future>
#include <thread>

using namespace nereus::broker;

namespace {

// "<prefix><n>" (without operator+(const char*, std::string&&): GCC bug 105329's -Wrestrict).
template <class N>
std::string cat(const char* prefix, N n) {
    std::string s(prefix);
    s.append(std::to_string(n));
    return s;
}

bool append(topic_store& s, const std::string& key, const std::string& value) {
    std::promise<bool> p;
    s.append(*nereus::broker::test::single({key, value}), append_info{},
             [&](nereus::result<position> r) { p.set_value(r.has_value()); });
    return p.get_future().get();
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 3) {
        std::fprintf(stderr, "usage: compaction_crash_child DIR TOPIC\n");
        return 2;
    }
    ledger_backend_options o;
    o.data_dir = argv[1];
    auto b = ledger_backend::open(o);
    if (!b) {
        std::fprintf(stderr, "open: %s\n", b.error().message().c_str());
        return 1;
    }
    auto s = (*b)->open_topic(argv[2], true);
    if (!s) {
        return 1;
    }
    auto c = std::make_shared<topic_compaction>(argv[2], *s, **b, nullptr);
    for (int i = 0; i < 10; ++i) {
        if (!append(**s, cat("k", i % 4), cat("a", i))) {
            return 1;
        }
    }
    if (!c->run()) {
        return 1;
    }
    std::printf("FIRST %llu\n", static_cast<unsigned long long>(c->info().end));
    std::fflush(stdout);
    for (int i = 0; i < 5; ++i) {
        if (!append(**s, cat("k", i % 4), cat("b", i))) {
            return 1;
        }
    }
    c->set_before_publish_hook([]() -> nereus::result<void> {
        std::printf("PUT\n");
        std::fflush(stdout);
        for (;;) {
            std::this_thread::sleep_for(std::chrono::seconds(1));
        }
    });
    (void)c->run();
    return 1;  // not reached
}
