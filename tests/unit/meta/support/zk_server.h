#pragma once

// A real ZooKeeper server for the tests (Debian's `zookeeper` package): one standalone
// QuorumPeerMain per test process, started on first use with a config in a temp dir
// (clientPortAddress=127.0.0.1, a free port, admin.enableServer=false, tickTime=200 and
// minSessionTimeout=1000 so sessions expire in about a second even on a loaded machine,
// forceSync=no), ready once `srvr` reports a Mode, stopped by its PID
// at process exit. The JVM also dies with the test process (PR_SET_PDEATHSIG).
//
// No silent skip: when java or the jars are missing, error() says so and the tests using it
// fail (scripts/install-deps installs them). NEREUS_ZK_CLASSPATH overrides the classpath.
// Ownership: owns the server process and its temp dir. Thread-safety: thread-compatible.

#include <gtest/gtest.h>

#include "unit/meta/support/temp_dir.h"
#include <arpa/inet.h>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <netinet/in.h>
#include <sstream>
#include <string>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace nereus::meta::test {

class zk_server {
public:
    // The process-wide server, started on first call.
    static zk_server& shared() {
        static zk_server server;
        return server;
    }

    zk_server(const zk_server&) = delete;
    zk_server& operator=(const zk_server&) = delete;
    ~zk_server() { stop(); }

    bool ok() const { return error_.empty(); }
    const std::string& error() const { return error_; }
    // "127.0.0.1:PORT".
    std::string hosts() const { return "127.0.0.1:" + std::to_string(port_); }
    pid_t pid() const { return pid_; }

    void stop() {
        if (pid_ > 0) {
            ::kill(pid_, SIGKILL);
            int status = 0;
            ::waitpid(pid_, &status, 0);
            pid_ = -1;
        }
    }

private:
    zk_server() { error_ = start(); }

    static bool on_path(const std::string& exe) {
        const char* path = std::getenv("PATH");
        std::stringstream ss(path != nullptr ? path : "/usr/bin:/bin");
        std::string d;
        while (std::getline(ss, d, ':')) {
            if (::access((d + "/" + exe).c_str(), X_OK) == 0) {
                return true;
            }
        }
        return false;
    }

    static int free_port() {
        const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        a.sin_port = 0;
        socklen_t len = sizeof(a);
        int port = -1;
        if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0 &&
            ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0) {
            port = ntohs(a.sin_port);
        }
        ::close(fd);
        return port;
    }

    // Sends a four-letter word; returns the reply ("" when the server does not answer).
    std::string four_letter(const std::string& word) const {
        const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        a.sin_port = htons(static_cast<std::uint16_t>(port_));
        std::string out;
        timeval tv{.tv_sec = 1, .tv_usec = 0};
        ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
        if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0 &&
            ::write(fd, word.data(), word.size()) == static_cast<ssize_t>(word.size())) {
            char b[512];
            ssize_t n = 0;
            while ((n = ::read(fd, b, sizeof(b))) > 0) {
                out.append(b, static_cast<std::size_t>(n));
            }
        }
        ::close(fd);
        return out;
    }

    std::string log_tail() const {
        std::ifstream in(dir_.sub("zk.log"));
        std::stringstream ss;
        ss << in.rdbuf();
        std::string s = ss.str();
        return s.size() > 2000 ? s.substr(s.size() - 2000) : s;
    }

    std::string start() {
        std::string cp;
        if (const char* env = std::getenv("NEREUS_ZK_CLASSPATH"); env != nullptr && *env) {
            cp = env;
        } else {
            const std::string jar = "/usr/share/java/zookeeper.jar";  // its manifest lists deps
            if (!std::filesystem::exists(jar)) {
                return jar + " is missing: install Debian's `zookeeper` (scripts/install-deps)";
            }
            cp = jar;
            for (const char* extra : {"/etc/zookeeper/conf", "/usr/share/java/log4j-1.2.jar",
                                      "/usr/share/java/slf4j-log4j12.jar"}) {
                if (std::filesystem::exists(extra)) {
                    cp += std::string(":") + extra;
                }
            }
        }
        if (!on_path("java")) {
            return "java is not on PATH: install default-jre-headless (scripts/install-deps)";
        }
        port_ = free_port();
        if (port_ <= 0) {
            return "no free port on 127.0.0.1";
        }
        const std::string cfg = dir_.sub("zoo.cfg");
        {
            std::ofstream out(cfg);
            out << "tickTime=200\ninitLimit=10\nsyncLimit=5\n"
                << "dataDir=" << dir_.sub("data") << "\n"
                << "clientPort=" << port_ << "\nclientPortAddress=127.0.0.1\n"
                << "maxClientCnxns=0\nadmin.enableServer=false\nforceSync=no\n"
                << "minSessionTimeout=1000\nmaxSessionTimeout=20000\n"
                << "4lw.commands.whitelist=srvr,ruok\n";
        }
        std::filesystem::create_directories(dir_.sub("data"));
        std::vector<std::string> args = {"java", "-Xms32m", "-Xmx256m", "-XX:+UseSerialGC",
                                         // a 1 MiB value plus its key and header in one request
                                         "-Djute.maxbuffer=4194304",
                                         "-Dzookeeper.log.dir=" + dir_.path(),
                                         "-Dzookeeper.root.logger=WARN,CONSOLE", "-cp", cp,
                                         "org.apache.zookeeper.server.quorum.QuorumPeerMain", cfg};
        const std::string log = dir_.sub("zk.log");
        std::vector<char*> argv;  // built before fork: the child only calls async-signal-safe code
        for (auto& a : args) {
            argv.push_back(a.data());
        }
        argv.push_back(nullptr);
        const pid_t parent = ::getpid();
        pid_ = ::fork();
        if (pid_ < 0) {
            return "fork failed";
        }
        if (pid_ == 0) {
            ::prctl(PR_SET_PDEATHSIG, SIGKILL);
            if (::getppid() != parent) {
                ::_exit(127);
            }
            const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
            if (fd >= 0) {
                ::dup2(fd, 1);
                ::dup2(fd, 2);
                ::close(fd);
            }
            ::execvp("java", argv.data());
            ::_exit(127);
        }
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
        while (std::chrono::steady_clock::now() < deadline) {
            int status = 0;
            if (::waitpid(pid_, &status, WNOHANG) == pid_) {
                pid_ = -1;
                return "ZooKeeper exited at start-up; its log:\n" + log_tail();
            }
            if (four_letter("srvr").find("Mode:") != std::string::npos) {
                return {};
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
        }
        stop();
        return "ZooKeeper did not report a Mode within 60 s; its log:\n" + log_tail();
    }

    temp_dir dir_;
    int port_ = -1;
    pid_t pid_ = -1;
    std::string error_;
};

}  // namespace nereus::meta::test
