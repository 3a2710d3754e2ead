#include "nereus/runtime/errc.h"

#include <string>

namespace nereus::runtime {
namespace {

class category final : public std::error_category {
public:
    const char* name() const noexcept override { return "nereus.runtime"; }

    std::string message(int ev) const override {
        switch (static_cast<errc>(ev)) {
            case errc::success:
                return "success";
            case errc::message_too_large:
                return "payload larger than the broker's max message size";
            case errc::consumer_busy:
                return "the Exclusive subscription already has a consumer";
            case errc::shut_down:
                return "handle used after shutdown";
            case errc::invalid_spec:
                return "inconsistent subscriber spec";
            case errc::already_started:
                return "the runtime is already started";
            case errc::not_started:
                return "the runtime is not started";
            case errc::settle_failed:
                return "the broker did not confirm the settlement";
            case errc::seek_failed:
                return "the broker refused the seek";
            case errc::publish_failed:
                return "the broker did not confirm the publish";
            case errc::topic_not_found:
                return "topic not found";
            case errc::unsupported:
                return "not supported by this transport";
        }
        return "unknown nereus.runtime error";
    }
};

}  // namespace

const std::error_category& runtime_category() noexcept {
    static const category c;
    return c;
}

}  // namespace nereus::runtime
