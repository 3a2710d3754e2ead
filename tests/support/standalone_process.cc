#include "support/standalone_process.h"

#include "support/wire_client.h"
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>

namespace nereus::test {

using clock_type = std::chrono::steady_clock;

std::uint16_t free_tcp_port() {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        return 0;
    }
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    std::uint16_t port = 0;
    if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0) {
        port = ntohs(a.sin_port);
    }
    ::close(fd);
    return port;
}

http_reply http_get(std::uint16_t port,
                    const std::string& path,
                    std::chrono::milliseconds timeout) {
    return http_request(port, "GET", path, {}, timeout);
}

http_reply http_request(std::uint16_t port,
                        const std::string& method,
                        const std::string& path,
                        const std::string& body,
                        std::chrono::milliseconds timeout) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        return {};
    }
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(port);
    std::string req = method + " " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\n";
    if (!body.empty() || method != "GET") {
        req += "Content-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) +
               "\r\n";
    }
    req += "Connection: close\r\n\r\n" + body;
    std::string resp;
    bool complete = false;
    if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
        ::send(fd, req.data(), req.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(req.size())) {
        const auto until = clock_type::now() + timeout;
        char b[4096];
        for (;;) {
            const auto left =
                std::chrono::duration_cast<std::chrono::milliseconds>(until - clock_type::now());
            pollfd p{.fd = fd, .events = POLLIN, .revents = 0};
            if (left.count() <= 0 || ::poll(&p, 1, static_cast<int>(left.count())) <= 0) {
                break;
            }
            const ssize_t n = ::read(fd, b, sizeof b);
            if (n <= 0) {
                complete = n == 0;
                break;
            }
            resp.append(b, static_cast<std::size_t>(n));
        }
    }
    ::close(fd);
    http_reply r;
    const auto head_end = resp.find("\r\n\r\n");
    // "HTTP/1.1 200 OK"
    if (!complete || head_end == std::string::npos || resp.size() < 12 ||
        resp.compare(0, 5, "HTTP/") != 0) {
        return r;
    }
    const auto sp = resp.find(' ');
    r.status = std::atoi(resp.c_str() + sp + 1);
    r.body = resp.substr(head_end + 4);
    return r;
}

standalone_process::standalone_process(standalone_options o) : opts_(std::move(o)) {
    if (opts_.log.empty()) {
        opts_.log = opts_.data_dir + ".log";
    }
    pick_ports();
}

void standalone_process::pick_ports() {
    port_ = free_tcp_port();
    do {
        http_port_ = free_tcp_port();
    } while (http_port_ == port_ && port_ != 0);
}

std::string standalone_process::url() const {
    return "pulsar://127.0.0.1:" + std::to_string(port_);
}

bool standalone_process::start(std::chrono::milliseconds timeout) {
    return spawn() && wait_ready(timeout);
}

bool standalone_process::spawn() {
    if (pid() > 0 || port_ == 0 || http_port_ == 0) {
        return false;
    }
    std::vector<std::string> argv = {opts_.binary, "standalone"};
    if (!opts_.data_dir.empty()) {
        argv.insert(argv.end(), {"--data-dir", opts_.data_dir});
    }
    argv.insert(argv.end(), opts_.args.begin(), opts_.args.end());
    argv.insert(argv.end(), {"--bind", "127.0.0.1", "--port", std::to_string(port_), "--http-port",
                             std::to_string(http_port_)});
    child_ = child_process::spawn_logged(argv, opts_.log);
    return child_.has_value();
}

bool standalone_process::ready() const {
    auto c = broker::test::wire_client::open(port_);
    if (!c || !c->handshake()) {
        return false;
    }
    return !opts_.wait_http || http_get(http_port_, "/admin/v2/brokers/health").status == 200;
}

bool standalone_process::wait_ready(std::chrono::milliseconds timeout) {
    const auto give_up = clock_type::now() + timeout;
    while (child_ && child_->pid() > 0) {
        if (child_->try_reap()) {
            return false;  // it exited (the log says why)
        }
        if (ready()) {
            return true;
        }
        if (clock_type::now() >= give_up) {
            return false;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(25));  // polling, bounded above
    }
    return false;
}

void standalone_process::signal(int sig) const {
    if (child_) {
        child_->signal(sig);
    }
}

int standalone_process::stop(int sig, std::chrono::milliseconds timeout) {
    if (pid() <= 0) {
        return -1;
    }
    child_->signal(sig);
    if (sig != SIGKILL) {
        child_->signal(SIGCONT);  // a stopped process must run to handle SIGTERM
    }
    auto st = child_->wait_exit(timeout);
    if (!st) {
        child_->signal(SIGKILL);
        child_->wait_exit(std::chrono::seconds(60));
        return -1;
    }
    return WIFEXITED(*st) ? WEXITSTATUS(*st) : 128 + WTERMSIG(*st);
}

}  // namespace nereus::test
