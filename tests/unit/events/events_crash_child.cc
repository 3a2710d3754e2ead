// The process events projection tests SIGKILL: over the SQLite projection at DB (argv[1]) it
// bootstraps (partition 0, epoch 1, sequence 0) unless already bootstrapped, then applies the
// events of support_ops.h from the applied cursor on, printing "A <n>" after each commit.
//   hold  stops inside the transaction of the 6th event, after the change and before COMMIT,
//         printing "HOLD", and waits to be killed;
//   loop  applies up to event 1000000 (the test kills it long before).

#include "nereus/events/sqlite_projection.h"

#include "support_ops.h"
#include <chrono>
#include <cstdio>
#include <cstring>
#include <thread>

using namespace nereus::events;
using namespace nereus::events::test;

int main(int argc, char** argv) {
    if (argc != 3) {
        std::fprintf(stderr, "usage: events_crash_child DB hold|loop\n");
        return 2;
    }
    const bool hold = std::strcmp(argv[2], "hold") == 0;
    auto p = sqlite_projection::open(argv[1]);
    if (!p) {
        return 1;
    }
    auto cur = (*p)->applied(0);
    if (!cur) {
        return 1;
    }
    if (!*cur) {
        const cursor barrier{0, 1, 0};
        const auto image = bootstrap_image();
        if (!(*p)->replace_atomically(std::span(&barrier, 1), image)) {
            return 1;
        }
        cur = std::optional<cursor>(barrier);
    }
    for (std::uint64_t n = (*cur)->sequence + 1; n <= 1000000; ++n) {
        if (hold && n == 6) {
            (*p)->set_before_commit_hook([] {
                std::printf("HOLD\n");
                std::fflush(stdout);
                for (;;) {
                    std::this_thread::sleep_for(std::chrono::seconds(1));
                }
            });
        }
        const auto e = event_at(n);
        auto r = (*p)->apply_once(cursor{0, 1, n}, e.op, bytes_of(e.payload));
        if (!r || *r != apply_outcome::applied) {
            return 1;
        }
        std::printf("A %llu\n", static_cast<unsigned long long>(n));
        std::fflush(stdout);
    }
    return 0;
}
