// The conformance env over a live `nereus standalone`, through the Pulsar binding
// (runtime/pulsar). Each test process starts its own broker on free ports (--port and
// --http-port) with a fresh data directory the first time a live env is made, shares it between
// the envs of that process, and stops it by its PID at exit (SIGTERM, then SIGKILL after 15 s).
// Topic names are unique per test (env::topic), so nothing leaks between behaviours.
//
// Pattern subscriptions list their namespace again every 300 ms here (pulsar::options::
// pattern_auto_discovery_period; production default 1 minute).
// Time is real here: wait_for() runs the event loop until the condition holds (bounded by 60 s,
// generous for a loaded CI machine), advance(d) runs it for d, settle() for 300 ms.

#include "nereus/runtime/pulsar/connect.h"

#include "harness.h"
#include <arpa/inet.h>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <csignal>
#include <cstdlib>
#include <fcntl.h>
#include <filesystem>
#include <netinet/in.h>
#include <stdexcept>
#include <sys/socket.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

namespace nereus::runtime::conformance {
namespace {

std::uint16_t free_port() {
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

int connect_local(std::uint16_t port) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(port);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
        ::close(fd);
        return -1;
    }
    return fd;
}

// One `nereus standalone` for this test process.
class broker_process {
public:
    broker_process() {
        std::string pattern =
            (std::filesystem::temp_directory_path() / "nereus-conformance-XXXXXX").string();
        if (::mkdtemp(pattern.data()) == nullptr)
            throw std::runtime_error("mkdtemp failed");
        dir_ = pattern;
        for (int attempt = 0; attempt < 3 && pid_ <= 0; ++attempt) {
            port_ = free_port();
            http_port_ = free_port();
            if (!start())
                stop();
        }
        if (pid_ <= 0)
            throw std::runtime_error("nereus standalone did not start; see " + dir_ +
                                     "/broker.log");
    }
    ~broker_process() {
        stop();
        std::error_code ec;
        std::filesystem::remove_all(dir_, ec);
    }
    broker_process(const broker_process&) = delete;
    broker_process& operator=(const broker_process&) = delete;

    [[nodiscard]] std::string url() const { return "pulsar://127.0.0.1:" + std::to_string(port_); }
    [[nodiscard]] std::uint16_t http_port() const { return http_port_; }

private:
    bool start() {
        const std::string data = dir_ + "/data";
        const std::string log = dir_ + "/broker.log";
        const std::string port = std::to_string(port_);
        const std::string http = std::to_string(http_port_);
        pid_ = ::fork();
        if (pid_ == 0) {
            const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
            ::dup2(fd, 1);
            ::dup2(fd, 2);
            ::execl(NEREUS_BINARY, NEREUS_BINARY, "standalone", "--data-dir", data.c_str(),
                    "--bind", "127.0.0.1", "--port", port.c_str(), "--http-port", http.c_str(),
                    static_cast<char*>(nullptr));
            ::_exit(127);
        }
        // Bounded: up to 60 s until both ports accept (a loaded 2-core machine is slow).
        for (int i = 0; i < 2400; ++i) {
            int st = 0;
            if (::waitpid(pid_, &st, WNOHANG) == pid_) {
                pid_ = -1;
                return false;
            }
            const int a = connect_local(port_);
            const int b = a >= 0 ? connect_local(http_port_) : -1;
            if (a >= 0)
                ::close(a);
            if (b >= 0)
                ::close(b);
            if (a >= 0 && b >= 0)
                return true;
            std::this_thread::sleep_for(std::chrono::milliseconds(25));
        }
        return false;
    }
    void stop() {
        if (pid_ <= 0)
            return;
        ::kill(pid_, SIGTERM);
        int st = 0;
        for (int i = 0; i < 1500; ++i) {
            if (::waitpid(pid_, &st, WNOHANG) == pid_) {
                pid_ = -1;
                return;
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
        ::kill(pid_, SIGKILL);
        ::waitpid(pid_, &st, 0);
        pid_ = -1;
    }

    std::string dir_;
    std::uint16_t port_ = 0;
    std::uint16_t http_port_ = 0;
    pid_t pid_ = -1;
};

broker_process& shared_broker() {
    static broker_process b;  // stopped by its destructor at process exit
    return b;
}

// A bounded HTTP/1.1 request on 127.0.0.1:port; the status code, or 0 on failure.
int http_request(std::uint16_t port,
                 const std::string& method,
                 const std::string& path,
                 const std::string& body) {
    const int fd = connect_local(port);
    if (fd < 0)
        return 0;
    timeval tv{.tv_sec = 30, .tv_usec = 0};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    const std::string req =
        method + " " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\n" +
        "Content-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) +
        "\r\nConnection: close\r\n\r\n" + body;
    if (::send(fd, req.data(), req.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(req.size())) {
        ::close(fd);
        return 0;
    }
    std::string resp;
    char buf[4096];
    for (ssize_t n; (n = ::recv(fd, buf, sizeof buf, 0)) > 0;)
        resp.append(buf, static_cast<std::size_t>(n));
    ::close(fd);
    if (resp.size() < 12 || !resp.starts_with("HTTP/1.1 "))
        return 0;
    return std::atoi(resp.substr(9, 3).c_str());
}

class live_env final : public env {
public:
    live_env()
        : broker_(&shared_broker()),
          work_(io_.get_executor()),
          clock_(clock_type::real(io_.get_executor())) {}
    ~live_env() override {
        // Let closes in flight (e.g. of a runtime that never started) finish.
        run_for(std::chrono::milliseconds(50));
    }

    [[nodiscard]] std::string name() const override { return "live"; }
    [[nodiscard]] asio::any_io_executor executor() override { return io_.get_executor(); }
    [[nodiscard]] clock_type& clock() override { return clock_; }
    [[nodiscard]] transport connect() override {
        pulsar::options o;
        o.service_url = broker_->url();
        o.client.operation_timeout = std::chrono::milliseconds(20'000);
        // Pattern subscriptions join topics created later within a fraction of a second here
        // (production: 1 minute).
        o.pattern_auto_discovery_period = std::chrono::milliseconds(300);
        auto t = pulsar::connect(io_.get_executor(), std::move(o));
        if (!t)
            throw std::runtime_error("connect: " + t.error().message());
        return std::move(*t);
    }
    bool wait_for(const std::function<bool()>& done) override {
        const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
        while (!done()) {
            if (std::chrono::steady_clock::now() >= until)
                return false;
            io_.run_one_for(std::chrono::milliseconds(20));
        }
        return true;
    }
    void settle() override { run_for(std::chrono::milliseconds(300)); }
    void advance(clock_type::duration d) override { run_for(d); }
    [[nodiscard]] bool has(feature f) const override { return f == feature::live_server; }
    bool create_partitioned_topic(const std::string& topic, int partitions) override {
        constexpr std::string_view scheme = "persistent://";
        if (!topic.starts_with(scheme))
            return false;
        const std::string path =
            "/admin/v2/persistent/" + topic.substr(scheme.size()) + "/partitions";
        const int status =
            http_request(broker_->http_port(), "PUT", path, std::to_string(partitions));
        return status >= 200 && status < 300;
    }

private:
    void run_for(std::chrono::steady_clock::duration d) {
        const auto until = std::chrono::steady_clock::now() + d;
        while (std::chrono::steady_clock::now() < until) {
            io_.run_one_until(until);
        }
    }

    broker_process* broker_;
    asio::io_context io_;
    asio::executor_work_guard<asio::io_context::executor_type> work_;
    clock_type clock_;
};

}  // namespace

std::unique_ptr<env> make_live_env() {
    return std::make_unique<live_env>();
}

}  // namespace nereus::runtime::conformance
