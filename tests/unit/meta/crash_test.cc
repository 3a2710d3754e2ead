// Kills a real process that is committing CAS increments, then checks that no confirmed value
// was lost (architecture.md: "Nereus never confirms what is not durable").

#include "nereus/meta/rocksdb_store.h"
#include "nereus/meta/sync.h"
#include "nereus/meta/verify.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "unit/meta/support/temp_dir.h"
#include <array>
#include <chrono>
#include <csignal>
#include <fcntl.h>
#include <map>
#include <poll.h>
#include <random>
#include <spawn.h>
#include <sstream>
#include <string>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

extern char** environ;

namespace nereus::meta::test {
namespace {

constexpr int kills = 5;
constexpr int threads = 4;
constexpr int keys = 3;

struct child_run {
    std::string output;  // everything the child printed before it died
    int wait_status = 0;
};

// Starts the child, lets it run for `run_for`, SIGKILLs it and collects its output.
child_run run_and_kill(const std::string& dir,
                       std::size_t max_group,
                       std::chrono::milliseconds run_for) {
    child_run out;
    std::array<int, 2> fds{};
    EXPECT_EQ(::pipe2(fds.data(), O_CLOEXEC), 0);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);
    const std::string group = std::to_string(max_group);
    const std::string nthreads = std::to_string(threads);
    const std::string nkeys = std::to_string(keys);
    std::vector<char*> argv = {
        const_cast<char*>(NEREUS_META_CRASH_CHILD), const_cast<char*>(dir.c_str()),
        const_cast<char*>(group.c_str()),           const_cast<char*>(nthreads.c_str()),
        const_cast<char*>(nkeys.c_str()),           nullptr};
    pid_t pid = 0;
    const int rc =
        ::posix_spawn(&pid, NEREUS_META_CRASH_CHILD, &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    ::close(fds[1]);
    if (rc != 0) {
        ADD_FAILURE() << "posix_spawn " << NEREUS_META_CRASH_CHILD << ": " << rc;
        ::close(fds[0]);
        return out;
    }

    std::array<char, 4096> buf{};
    const auto deadline = std::chrono::steady_clock::now() + run_for;
    for (;;) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
            deadline - std::chrono::steady_clock::now());
        if (left.count() <= 0) {
            break;
        }
        pollfd p{.fd = fds[0], .events = POLLIN, .revents = 0};
        if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) {
            continue;
        }
        const auto n = ::read(fds[0], buf.data(), buf.size());
        if (n <= 0) {
            break;  // the child died early: its output says why
        }
        out.output.append(buf.data(), static_cast<std::size_t>(n));
    }
    ::kill(pid, SIGKILL);
    EXPECT_EQ(::waitpid(pid, &out.wait_status, 0), pid);
    // Lines already in the pipe were printed after their completion ran: confirmed too.
    for (;;) {
        const auto n = ::read(fds[0], buf.data(), buf.size());
        if (n <= 0) {
            break;
        }
        out.output.append(buf.data(), static_cast<std::size_t>(n));
    }
    ::close(fds[0]);
    return out;
}

class RocksdbStoreCrash : public ::testing::TestWithParam<std::size_t> {};

TEST_P(RocksdbStoreCrash, SigkillNeverLosesAConfirmedValue) {
    temp_dir tmp;
    const std::string dir = tmp.sub("store");
    std::random_device rd;
    const unsigned seed = rd();
    std::mt19937 rng(seed);
    SCOPED_TRACE(fmt::format("seed {}", seed));

    std::map<int, std::uint64_t> stored;  // per key, after the last reopen
    std::size_t total_confirmed = 0;
    for (int round = 0; round < kills; ++round) {
        SCOPED_TRACE(fmt::format("round {}", round));
        const auto run_for = std::chrono::milliseconds(100 + rng() % 401);
        const child_run run = run_and_kill(dir, GetParam(), run_for);
        ASSERT_TRUE(WIFSIGNALED(run.wait_status) && WTERMSIG(run.wait_status) == SIGKILL)
            << "child ended on its own: " << run.output;

        std::map<int, std::uint64_t> confirmed;
        std::istringstream lines(run.output);
        std::string line;
        while (std::getline(lines, line)) {
            ASSERT_FALSE(line.starts_with("e ")) << line;
            if (line.starts_with("c ")) {
                std::istringstream f(line.substr(2));
                int k = 0;
                std::uint64_t v = 0;
                ASSERT_TRUE(f >> k >> v) << line;
                confirmed[k] = std::max(confirmed[k], v);
                ++total_confirmed;
            }
        }

        // The dead process's files verify (its ephemeral key is still there, indexed).
        auto rep = verify_rocksdb_store(dir);
        ASSERT_TRUE(rep.has_value()) << rep.error().message();
        EXPECT_TRUE(rep->ok()) << rep->problems.front().key << ": " << rep->problems.front().reason;

        auto st = rocksdb_store::open(dir);
        ASSERT_TRUE(st.has_value()) << st.error().message();
        std::uint64_t unprinted = 0;
        for (int k = 0; k < keys; ++k) {
            auto r = get_sync(**st, fmt::format("crash/counter/{}", k));
            ASSERT_TRUE(r.has_value()) << r.error().message();
            const std::uint64_t now = *r ? std::stoull((*r)->value) : 0;
            EXPECT_GE(now, confirmed[k]) << "key " << k << " lost a confirmed increment";
            EXPECT_GE(now, stored[k]) << "key " << k << " went backwards across a restart";
            // Each worker has at most one applied-but-unprinted increment when killed.
            unprinted += now - std::max(confirmed[k], stored[k]);
            stored[k] = now;
        }
        EXPECT_LE(unprinted, static_cast<std::uint64_t>(threads)) << "phantom increments";
        // The owner's ephemeral key died with it.
        auto owner = get_sync(**st, "crash/owner");
        ASSERT_TRUE(owner.has_value());
        EXPECT_FALSE(owner->has_value());
    }
    EXPECT_GT(total_confirmed, 0u) << "the child never confirmed anything: the test proved nothing";
    RecordProperty("confirmed", static_cast<int>(total_confirmed));
}

INSTANTIATE_TEST_SUITE_P(meta,
                         RocksdbStoreCrash,
                         ::testing::Values(std::size_t{1}, std::size_t{256}),
                         [](const ::testing::TestParamInfo<std::size_t>& info) {
                             return fmt::format("group{}", info.param);
                         });

}  // namespace
}  // namespace nereus::meta::test
