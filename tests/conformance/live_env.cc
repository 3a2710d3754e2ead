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
#include "support/standalone_process.h"
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <unistd.h>

namespace nereus::runtime::conformance {
namespace {

// One `nereus standalone` for this test process (tests/support/standalone_process.h): free
// ports, a fresh data directory, ready once CONNECT and the admin health route answer; stopped
// by its PID at exit. Three attempts: a port picked free can be taken before the broker binds.
class broker_process {
public:
    broker_process() {
        std::string pattern =
            (std::filesystem::temp_directory_path() / "nereus-conformance-XXXXXX").string();
        if (::mkdtemp(pattern.data()) == nullptr) {
            throw std::runtime_error("mkdtemp failed");
        }
        dir_ = pattern;
        test::standalone_options o;
        o.binary = NEREUS_BINARY;
        o.data_dir = dir_ + "/data";
        o.log = dir_ + "/broker.log";
        proc_.emplace(std::move(o));
        for (int attempt = 0; attempt < 3; ++attempt) {
            if (proc_->start(std::chrono::seconds(60))) {  // a loaded 2-core machine is slow
                return;
            }
            proc_->stop();
            proc_->pick_ports();
        }
        throw std::runtime_error("nereus standalone did not start; see " + dir_ + "/broker.log");
    }
    ~broker_process() {
        proc_->stop();  // by its PID: SIGTERM, then SIGKILL after 15 s
        proc_.reset();
        std::error_code ec;
        std::filesystem::remove_all(dir_, ec);
    }
    broker_process(const broker_process&) = delete;
    broker_process& operator=(const broker_process&) = delete;

    [[nodiscard]] std::string url() const { return proc_->url(); }
    [[nodiscard]] std::uint16_t http_port() const { return proc_->http_port(); }

private:
    std::string dir_;
    std::optional<test::standalone_process> proc_;
};

broker_process& shared_broker() {
    static broker_process b;  // stopped by its destructor at process exit
    return b;
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
        const int status = test::http_request(broker_->http_port(), "PUT", path,
                                              std::to_string(partitions), std::chrono::seconds(30))
                               .status;
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
