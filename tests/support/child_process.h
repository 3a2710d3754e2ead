#pragma once

// child_process — the crash tests' harness for a real child process: start an executable with
// its stdout on a pipe, read what it prints for a while, SIGKILL it, reap it, and collect what
// it printed before it died (the lines already in the pipe were written before the kill, so a
// child that prints a line after a durable completion has them all confirmed).
//
// Used by tests/crash/{storage,cursor}_crash_test.cc, tests/unit/meta/crash_test.cc,
// tests/unit/ledger/process_crash_test.cc and (spawn_logged, wait_exit) standalone_process.h.
// Header-only.
//
// Ownership: owns the child (killed and reaped on destruction if still running) and the pipe.
// Thread-safety: thread-compatible.

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <fcntl.h>
#include <functional>
#include <optional>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <string>
#include <string_view>
#include <sys/wait.h>
#include <unistd.h>
#include <utility>
#include <vector>

extern char** environ;

namespace nereus::test {

class child_process {
public:
    using clock = std::chrono::steady_clock;
    // Receives each chunk the child wrote to its stdout (not split at lines).
    using sink = std::function<void(std::string_view)>;

    // Starts argv[0] (a path) with the given arguments, stdout on a pipe. nullopt when the pipe
    // or the spawn failed (`error` says which, errno-style).
    static std::optional<child_process> spawn(const std::vector<std::string>& argv,
                                              int* error = nullptr) {
        std::array<int, 2> fds{};
        if (::pipe2(fds.data(), O_CLOEXEC) != 0) {
            if (error != nullptr) {
                *error = errno;
            }
            return std::nullopt;
        }
        posix_spawn_file_actions_t actions;
        posix_spawn_file_actions_init(&actions);
        posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);
        const pid_t pid = spawn_with(argv, actions, error);
        ::close(fds[1]);
        if (pid <= 0) {
            ::close(fds[0]);
            return std::nullopt;
        }
        return child_process(pid, fds[0]);
    }

    // Starts argv[0] with stdout and stderr appended to the file `log` (created 0644), and no
    // pipe: for a long-running child such as `nereus standalone` whose output only a failing
    // test reads. nullopt when the spawn failed (`error` as above).
    static std::optional<child_process> spawn_logged(const std::vector<std::string>& argv,
                                                     const std::string& log,
                                                     int* error = nullptr) {
        posix_spawn_file_actions_t actions;
        posix_spawn_file_actions_init(&actions);
        posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log.c_str(),
                                         O_WRONLY | O_CREAT | O_APPEND, 0644);
        posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
        const pid_t pid = spawn_with(argv, actions, error);
        if (pid <= 0) {
            return std::nullopt;
        }
        return child_process(pid, -1);
    }

    child_process(const child_process&) = delete;
    child_process& operator=(const child_process&) = delete;
    child_process(child_process&& o) noexcept
        : pid_(std::exchange(o.pid_, -1)), fd_(std::exchange(o.fd_, -1)) {}
    child_process& operator=(child_process&& o) noexcept {
        if (this != &o) {
            reset();
            pid_ = std::exchange(o.pid_, -1);
            fd_ = std::exchange(o.fd_, -1);
        }
        return *this;
    }
    ~child_process() { reset(); }

    // -1 once the child has been reaped.
    [[nodiscard]] pid_t pid() const { return pid_; }

    // Sends `sig` to the child (nothing once it has been reaped).
    void signal(int sig) const {
        if (pid_ > 0) {
            ::kill(pid_, sig);
        }
    }

    // Reaps the child if it has exited; its wait status then, nullopt while it runs (or when
    // it was reaped before).
    std::optional<int> try_reap() {
        int status = 0;
        if (pid_ > 0 && ::waitpid(pid_, &status, WNOHANG) == pid_) {
            pid_ = -1;
            return status;
        }
        return std::nullopt;
    }

    // Waits (polling, at most `timeout`) for the child to exit and reaps it; its wait status,
    // or nullopt on timeout (the child is left running).
    std::optional<int> wait_exit(clock::duration timeout) {
        const auto until = clock::now() + timeout;
        for (;;) {
            if (auto st = try_reap()) {
                return st;
            }
            if (pid_ <= 0 || clock::now() >= until) {
                return std::nullopt;
            }
            ::usleep(10'000);
        }
    }

    // Passes what the child prints to `out` until `deadline`. Returns false when the pipe
    // reached end of file first (the child died on its own, or closed its stdout).
    bool read_until(clock::time_point deadline, const sink& out) {
        std::array<char, 65536> buf{};
        for (;;) {
            const auto left =
                std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock::now());
            if (left.count() <= 0) {
                return true;
            }
            pollfd p{.fd = fd_, .events = POLLIN, .revents = 0};
            if (::poll(&p, 1, static_cast<int>(std::max<long>(1, left.count()))) <= 0) {
                continue;
            }
            const ssize_t n = ::read(fd_, buf.data(), buf.size());
            if (n <= 0) {
                return false;
            }
            out(std::string_view(buf.data(), static_cast<std::size_t>(n)));
        }
    }

    // SIGKILLs the child, reaps it, then passes what is left in the pipe to `out` (written
    // before the kill). Returns the wait status (check WIFSIGNALED / WTERMSIG), or -1 when the
    // child could not be reaped.
    int kill_and_drain(const sink& out) {
        int status = -1;
        if (pid_ > 0) {
            ::kill(pid_, SIGKILL);
            if (::waitpid(pid_, &status, 0) != pid_) {
                status = -1;
            }
            pid_ = -1;
        }
        if (fd_ >= 0) {
            std::array<char, 65536> buf{};
            for (ssize_t n; (n = ::read(fd_, buf.data(), buf.size())) > 0;) {
                out(std::string_view(buf.data(), static_cast<std::size_t>(n)));
            }
            ::close(fd_);
            fd_ = -1;
        }
        return status;
    }

private:
    child_process(pid_t pid, int fd) : pid_(pid), fd_(fd) {}

    // posix_spawn of argv with `actions` (destroyed here): the PID, or -1 (`error` set).
    static pid_t spawn_with(const std::vector<std::string>& argv,
                            posix_spawn_file_actions_t& actions,
                            int* error) {
        std::vector<char*> args;
        args.reserve(argv.size() + 1);
        for (const auto& a : argv) {
            args.push_back(const_cast<char*>(a.c_str()));
        }
        args.push_back(nullptr);
        pid_t pid = 0;
        const int rc =
            ::posix_spawn(&pid, argv.at(0).c_str(), &actions, nullptr, args.data(), environ);
        posix_spawn_file_actions_destroy(&actions);
        if (rc != 0) {
            if (error != nullptr) {
                *error = rc;
            }
            return -1;
        }
        return pid;
    }

    void reset() {
        if (pid_ > 0) {
            ::kill(pid_, SIGKILL);
            int status = 0;
            ::waitpid(pid_, &status, 0);
            pid_ = -1;
        }
        if (fd_ >= 0) {
            ::close(fd_);
            fd_ = -1;
        }
    }

    pid_t pid_ = -1;
    int fd_ = -1;
};

// Runs the child for `run_for`, SIGKILLs it and returns {everything it printed, wait status}.
// The wait status is -1 when it could not be started.
struct child_run {
    std::string output;
    int wait_status = -1;
    bool died_early = false;  // its stdout ended before the kill
};

// When `ready_line` is not empty, `run_for` starts only once the child has printed that line
// (waiting at most `ready_timeout`), so a slow start (a sanitizer build, a loaded machine) does
// not turn into a kill before the child has set up what the test then checks.
inline child_run run_and_kill(const std::vector<std::string>& argv,
                              std::chrono::milliseconds run_for,
                              std::string_view ready_line = {},
                              std::chrono::milliseconds ready_timeout = std::chrono::seconds(60)) {
    child_run r;
    auto child = child_process::spawn(argv);
    if (!child) {
        return r;
    }
    const auto append = [&r](std::string_view s) {
        r.output.append(s);
    };
    if (!ready_line.empty()) {
        const std::string marker = std::string(ready_line) + "\n";
        const auto give_up = child_process::clock::now() + ready_timeout;
        while (r.output.find(marker) == std::string::npos &&
               child_process::clock::now() < give_up) {
            if (!child->read_until(child_process::clock::now() + std::chrono::milliseconds(10),
                                   append)) {
                r.died_early = true;
                r.wait_status = child->kill_and_drain(append);
                return r;
            }
        }
    }
    r.died_early = !child->read_until(child_process::clock::now() + run_for, append);
    r.wait_status = child->kill_and_drain(append);
    return r;
}

// True when `wait_status` says the child was ended by SIGKILL (and not by itself).
inline bool killed_by_sigkill(int wait_status) {
    return wait_status != -1 && WIFSIGNALED(wait_status) && WTERMSIG(wait_status) == SIGKILL;
}

}  // namespace nereus::test
