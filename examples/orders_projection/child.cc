#include "child.h"

#include <array>
#include <cerrno>
#include <csignal>
#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <utility>

extern char** environ;

namespace orders {

std::optional<child> child::spawn(const std::vector<std::string>& argv, int* error) {
    std::array<int, 2> in{-1, -1};
    std::array<int, 2> out{-1, -1};
    if (::pipe2(in.data(), O_CLOEXEC) != 0 || ::pipe2(out.data(), O_CLOEXEC) != 0) {
        *error = errno;
        for (int fd : {in[0], in[1], out[0], out[1]}) {
            if (fd >= 0)
                ::close(fd);
        }
        return std::nullopt;
    }
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, in[0], STDIN_FILENO);
    posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
    std::vector<char*> args;
    args.reserve(argv.size() + 1);
    for (const auto& a : argv) {
        args.push_back(const_cast<char*>(a.c_str()));
    }
    args.push_back(nullptr);
    pid_t pid = 0;
    const int rc = ::posix_spawn(&pid, argv.at(0).c_str(), &actions, nullptr, args.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    ::close(in[0]);
    ::close(out[1]);
    if (rc != 0) {
        ::close(in[1]);
        ::close(out[0]);
        *error = rc;
        return std::nullopt;
    }
    // A write to a child that died must not kill the parent with SIGPIPE.
    std::signal(SIGPIPE, SIG_IGN);
    return child(pid, in[1], out[0]);
}

child::child(child&& o) noexcept
    : pid_(std::exchange(o.pid_, -1)),
      in_(std::exchange(o.in_, -1)),
      out_(std::exchange(o.out_, -1)),
      buffer_(std::move(o.buffer_)),
      transcript_(std::move(o.transcript_)) {}

child::~child() {
    if (pid_ > 0) {
        ::kill(pid_, SIGKILL);
        int status = 0;
        ::waitpid(pid_, &status, 0);
    }
    if (in_ >= 0)
        ::close(in_);
    if (out_ >= 0)
        ::close(out_);
}

std::optional<std::string> child::read_line(clock::time_point deadline) {
    for (;;) {
        if (const auto nl = buffer_.find('\n'); nl != std::string::npos) {
            std::string line = buffer_.substr(0, nl);
            buffer_.erase(0, nl + 1);
            transcript_.push_back(line);
            return line;
        }
        if (out_ < 0) {
            return std::nullopt;
        }
        const auto left =
            std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock::now());
        if (left.count() <= 0) {
            return std::nullopt;
        }
        pollfd p{out_, POLLIN, 0};
        const int n = ::poll(&p, 1, static_cast<int>(std::min<long>(left.count(), 1000)));
        if (n < 0 && errno != EINTR) {
            return std::nullopt;
        }
        if (n <= 0) {
            continue;
        }
        std::array<char, 4096> chunk{};
        const ssize_t got = ::read(out_, chunk.data(), chunk.size());
        if (got < 0 && errno == EINTR) {
            continue;
        }
        if (got <= 0) {  // EOF: the child closed its stdout
            ::close(out_);
            out_ = -1;
            if (!buffer_.empty()) {
                buffer_.push_back('\n');
                continue;
            }
            return std::nullopt;
        }
        buffer_.append(chunk.data(), static_cast<std::size_t>(got));
    }
}

std::optional<std::string> child::wait_for_line(const std::string& prefix,
                                                clock::time_point deadline) {
    while (auto line = read_line(deadline)) {
        if (line->rfind(prefix, 0) == 0) {
            return line;
        }
    }
    return std::nullopt;
}

bool child::send_line(const std::string& line) {
    if (in_ < 0) {
        return false;
    }
    const std::string data = line + "\n";
    std::size_t done = 0;
    while (done < data.size()) {
        const ssize_t n = ::write(in_, data.data() + done, data.size() - done);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            return false;
        }
        done += static_cast<std::size_t>(n);
    }
    return true;
}

void child::kill_hard() {
    if (pid_ > 0) {
        ::kill(pid_, SIGKILL);
    }
}

std::optional<int> child::wait(clock::time_point deadline) {
    if (pid_ <= 0) {
        return std::nullopt;
    }
    for (;;) {
        int status = 0;
        const pid_t r = ::waitpid(pid_, &status, WNOHANG);
        if (r == pid_) {
            pid_ = -1;
            return status;
        }
        if (r < 0 && errno != EINTR) {
            return std::nullopt;
        }
        if (clock::now() >= deadline) {
            return std::nullopt;
        }
        // Reaping has no notification to wait on here; a short bounded poll of waitpid.
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
}

}  // namespace orders
