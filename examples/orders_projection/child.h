#pragma once

// A child process of the self-check (the projection process): started with posix_spawn, its
// stdin and stdout on pipes, so the parent can wait for a line it prints (bounded by a
// deadline), send it a line, SIGKILL it by its pid and reap it.
//
// Ownership: owns the child: the destructor SIGKILLs and reaps it if it is still running, and
// closes both pipes. Thread-safety: thread-compatible.

#include <chrono>
#include <optional>
#include <string>
#include <sys/types.h>
#include <vector>

namespace orders {

class child {
public:
    using clock = std::chrono::steady_clock;

    // Starts argv[0] (a path). nullopt when a pipe or the spawn failed (errno in `error`).
    static std::optional<child> spawn(const std::vector<std::string>& argv, int* error);

    child(child&& o) noexcept;
    child& operator=(child&&) = delete;
    child(const child&) = delete;
    ~child();

    [[nodiscard]] pid_t pid() const { return pid_; }

    // The next line the child printed (without '\n'); every line read is also appended to
    // `transcript`. nullopt at the deadline or when the child closed its stdout (exited).
    std::optional<std::string> read_line(clock::time_point deadline);
    // Reads lines until one starts with `prefix` (returned) or the deadline / end of output.
    std::optional<std::string> wait_for_line(const std::string& prefix, clock::time_point deadline);
    // Writes `line` + '\n' to the child's stdin. False when the child is gone.
    bool send_line(const std::string& line);

    void kill_hard();  // SIGKILL by pid (no-op once reaped)
    // Waits for the child to exit (polling waitpid, bounded); its exit status as waitpid
    // reports it, or nullopt at the deadline (the child is still running).
    std::optional<int> wait(clock::time_point deadline);

    const std::vector<std::string>& transcript() const { return transcript_; }

private:
    child(pid_t pid, int in, int out) : pid_(pid), in_(in), out_(out) {}

    pid_t pid_ = -1;
    int in_ = -1;   // the child's stdin (we write)
    int out_ = -1;  // the child's stdout (we read)
    std::string buffer_;
    std::vector<std::string> transcript_;
};

}  // namespace orders
