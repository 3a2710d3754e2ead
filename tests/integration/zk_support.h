#pragma once

// Support for the ZooKeeper integration tests: a `nereus standalone` process with arbitrary
// flags (stopped by its PID; SIGKILL / SIGSTOP / SIGCONT on demand), free ports, and the
// wire-level steps the tests repeat (lookup, producer, subscribe, send, ack) on the test
// driver `wire_client`. The ZooKeeper server itself is tests/unit/meta/support/zk_server.h
// (Debian's zookeeper, tickTime=200, a free port, stopped by PID).
// Ownership: broker_proc owns its child (SIGKILLed and reaped on destruction).
// Thread-safety: thread-compatible (one test thread).

#include "support/wire_client.h"
#include <arpa/inet.h>
#include <chrono>
#include <fcntl.h>
#include <netinet/in.h>
#include <optional>
#include <signal.h>
#include <string>
#include <sys/socket.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace nereus::broker::test {

inline std::uint16_t free_tcp_port() {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
    socklen_t len = sizeof a;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
    ::close(fd);
    return ntohs(a.sin_port);
}

class broker_proc {
public:
    // `args` follow `nereus standalone`; --port and --http-port are added (free ports).
    broker_proc(std::vector<std::string> args, std::string log)
        : args_(std::move(args)), log_(std::move(log)), port_(free_tcp_port()),
          http_port_(free_tcp_port()) {}
    ~broker_proc() { kill(SIGKILL); }
    broker_proc(const broker_proc&) = delete;
    broker_proc& operator=(const broker_proc&) = delete;

    std::uint16_t port() const { return port_; }
    std::uint16_t http_port() const { return http_port_; }
    std::string url() const { return "pulsar://127.0.0.1:" + std::to_string(port_); }
    pid_t pid() const { return pid_; }

    // Starts and waits (bounded) until it answers CONNECT.
    bool start() {
        std::vector<std::string> argv = {NEREUS_BINARY, "standalone"};
        argv.insert(argv.end(), args_.begin(), args_.end());
        argv.insert(argv.end(), {"--port", std::to_string(port_), "--http-port",
                                 std::to_string(http_port_)});
        std::vector<char*> cargv;
        for (auto& a : argv) {
            cargv.push_back(a.data());
        }
        cargv.push_back(nullptr);
        pid_ = ::fork();
        if (pid_ == 0) {
            const int fd = ::open(log_.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
            ::dup2(fd, 1);
            ::dup2(fd, 2);
            ::execv(NEREUS_BINARY, cargv.data());
            ::_exit(127);
        }
        for (int i = 0; i < 400; ++i) {
            if (auto c = wire_client::open(port_); c && c->handshake()) {
                return true;
            }
            int st = 0;
            if (::waitpid(pid_, &st, WNOHANG) == pid_) {
                pid_ = -1;
                return false;
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(25));
        }
        return false;
    }

    void signal(int sig) const {
        if (pid_ > 0) {
            ::kill(pid_, sig);
        }
    }

    // Sends `sig` and waits (bounded) for the exit; the exit status, 128+signal, or -1.
    int kill(int sig, std::chrono::seconds timeout = std::chrono::seconds(15)) {
        if (pid_ <= 0) {
            return -1;
        }
        ::kill(pid_, sig);
        if (sig != SIGKILL) {
            ::kill(pid_, SIGCONT);  // a stopped process must run to handle SIGTERM
        }
        const auto until = std::chrono::steady_clock::now() + timeout;
        int st = 0;
        while (std::chrono::steady_clock::now() < until) {
            if (::waitpid(pid_, &st, WNOHANG) == pid_) {
                pid_ = -1;
                return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
        ::kill(pid_, SIGKILL);
        ::waitpid(pid_, &st, 0);
        pid_ = -1;
        return -1;
    }

private:
    std::vector<std::string> args_;
    std::string log_;
    std::uint16_t port_;
    std::uint16_t http_port_;
    pid_t pid_ = -1;
};

// A bounded plain HTTP/1.1 GET on 127.0.0.1:port (Connection: close); the body, or "" on failure.
inline std::string http_get(std::uint16_t port, const std::string& path) {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(port);
    timeval tv{.tv_sec = 5, .tv_usec = 0};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    std::string out;
    const std::string req =
        "GET " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
    if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
        ::write(fd, req.data(), req.size()) == static_cast<ssize_t>(req.size())) {
        char b[4096];
        ssize_t n = 0;
        while ((n = ::read(fd, b, sizeof b)) > 0) {
            out.append(b, static_cast<std::size_t>(n));
        }
    }
    ::close(fd);
    const auto body = out.find("\r\n\r\n");
    return body == std::string::npos ? std::string() : out.substr(body + 4);
}

// ---- wire steps ----

struct lookup_answer {
    bool connect = false;   // Connect (this broker serves it)
    bool redirect = false;  // Redirect to broker_url
    std::string broker_url;
};

inline std::optional<lookup_answer> lookup(wire_client& c, std::string_view topic,
                                           std::uint64_t req) {
    c.send([&](proto::frame_buffer& b) { return c.writer().lookup(b, topic, req).has_value(); });
    auto r = c.expect(proto::command_type::lookup_response);
    if (!r) {
        return std::nullopt;
    }
    const auto& l = r->cmd.lookuptopicresponse();
    lookup_answer a;
    a.connect = l.response() == proto::pb::CommandLookupTopicResponse::Connect;
    a.redirect = l.response() == proto::pb::CommandLookupTopicResponse::Redirect;
    a.broker_url = l.brokerserviceurl();
    return a;
}

// PRODUCER → true on PRODUCER_SUCCESS; `error` gets the server error of an ERROR answer.
inline bool create_producer(wire_client& c, std::string_view topic, std::uint64_t producer_id,
                            std::uint64_t req, int* error = nullptr) {
    proto::producer_args p;
    p.topic = topic;
    p.producer_id = producer_id;
    p.request_id = req;
    c.send([&](proto::frame_buffer& b) { return c.writer().producer(b, p).has_value(); });
    for (;;) {
        auto r = c.next(std::chrono::seconds(10));
        if (!r) {
            return false;
        }
        if (r->type == proto::command_type::producer_success) {
            return true;
        }
        if (r->type == proto::command_type::error) {
            if (error != nullptr) {
                *error = r->cmd.error().error();
            }
            return false;
        }
    }
}

// SUBSCRIBE (Shared, earliest) → true on SUCCESS; `error` as above.
inline bool subscribe_shared(wire_client& c, std::string_view topic, std::string_view sub,
                             std::uint64_t consumer_id, std::uint64_t req, int* error = nullptr) {
    proto::subscribe_args a;
    a.topic = topic;
    a.subscription = sub;
    a.sub_type = 1;  // Shared
    a.consumer_id = consumer_id;
    a.request_id = req;
    a.initial_position = 1;  // Earliest
    c.send([&](proto::frame_buffer& b) { return c.writer().subscribe(b, a).has_value(); });
    for (;;) {
        auto r = c.next(std::chrono::seconds(10));
        if (!r) {
            return false;
        }
        if (r->type == proto::command_type::success) {
            return true;
        }
        if (r->type == proto::command_type::error) {
            if (error != nullptr) {
                *error = r->cmd.error().error();
            }
            return false;
        }
    }
}

}  // namespace nereus::broker::test
