// Helper process for the crash test (crash_test.cc): opens a rocksdb_store and runs concurrent
// CAS increments until it is SIGKILLed.
//
// usage: meta_crash_child <dir> <max_group> <threads> <keys>
// stdout, one line per event, each written with a single write(2) (atomic on a pipe):
//   "ready"        the store is open and the owner's ephemeral key exists
//   "c <k> <v>"    key k was set to v, and the write's completion has run (it is CONFIRMED)
//   "e <message>"  an unexpected error; the process exits with status 3
// It exits by itself after 20 s, in case the parent is gone.

#include "nereus/meta/rocksdb_store.h"
#include "nereus/meta/sync.h"

#include <fmt/format.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <random>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

namespace {

void emit(const std::string& line) {
    const std::string out = line + "\n";
    // One write per line: a pipe never interleaves writes shorter than PIPE_BUF.
    [[maybe_unused]] const auto n = ::write(STDOUT_FILENO, out.data(), out.size());
}

[[noreturn]] void die(const std::string& what) {
    emit(fmt::format("e {}", what));
    std::_Exit(3);
}

}  // namespace

int main(int argc, char** argv) {
    using namespace nereus::meta;
    if (argc != 5) {
        die("usage: meta_crash_child <dir> <max_group> <threads> <keys>");
    }
    const std::string dir = argv[1];
    const auto max_group = static_cast<std::size_t>(std::stoul(argv[2]));
    const int threads = std::stoi(argv[3]);
    const int keys = std::stoi(argv[4]);

    auto opened = rocksdb_store::open(dir, rocksdb_store_options{.max_group = max_group});
    if (!opened) {
        die("open: " + opened.error().message());
    }
    store& s = **opened;
    auto sid = open_session_sync(s, std::chrono::seconds(30));
    if (!sid) {
        die("open_session: " + sid.error().message());
    }
    auto owner = create_sync(s, "crash/owner", "child", *sid);
    if (!owner || !owner->applied) {
        die("owner key exists or failed: an earlier process's ephemeral key was not purged");
    }
    emit("ready");

    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    std::vector<std::thread> workers;
    workers.reserve(static_cast<std::size_t>(threads));
    for (int t = 0; t < threads; ++t) {
        workers.emplace_back([&, t] {
            std::mt19937 rng(static_cast<unsigned>(t * 7919 + ::getpid()));
            while (std::chrono::steady_clock::now() < deadline) {
                const int k = static_cast<int>(rng() % static_cast<unsigned>(keys));
                const std::string key = fmt::format("crash/counter/{}", k);
                auto cur = get_sync(s, key);
                if (!cur) {
                    die("get: " + cur.error().message());
                }
                const std::uint64_t value = *cur ? std::stoull((*cur)->value) : 0;
                const version expected = *cur ? (*cur)->ver : absent;
                auto r = cas_sync(s, key, expected, std::to_string(value + 1));
                if (!r) {
                    die("cas: " + r.error().message());
                }
                if (r->applied) {
                    emit(fmt::format("c {} {}", k, value + 1));
                }
            }
        });
    }
    for (auto& w : workers) {
        w.join();
    }
    return 0;
}
