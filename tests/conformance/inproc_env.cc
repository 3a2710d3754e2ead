// The conformance env over the in-process test transport (NEREUS_TESTING).

#include "nereus/runtime/testing/test_env.h"

#include "harness.h"

namespace nereus::runtime::conformance {
namespace {

class inproc_env final : public env {
public:
    [[nodiscard]] std::string name() const override { return "inproc"; }
    [[nodiscard]] asio::any_io_executor executor() override { return te_.executor(); }
    [[nodiscard]] clock_type& clock() override { return te_.clock(); }
    [[nodiscard]] transport connect() override { return te_.connect(); }
    bool wait_for(const std::function<bool()>& done) override {
        te_.run_until_idle();
        return done();
    }
    void settle() override { te_.run_until_idle(); }
    void advance(clock_type::duration d) override { te_.advance(d); }
    [[nodiscard]] bool has(feature f) const override {
        return f == feature::fault_injection || f == feature::broker_inspection;
    }
    [[nodiscard]] std::size_t backlog(const std::string& topic, const std::string& sub) override {
        return te_.broker()->backlog(topic, sub);
    }
    void fail_next_acks(std::size_t n) override { te_.broker()->fail_next_acks(n); }

private:
    testing::test_env te_;
};

}  // namespace

std::unique_ptr<env> make_inproc_env() {
    return std::make_unique<inproc_env>();
}

}  // namespace nereus::runtime::conformance
