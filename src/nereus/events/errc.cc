#include "nereus/events/errc.h"

namespace nereus::events {
namespace {

class category final : public std::error_category {
public:
    const char* name() const noexcept override { return "nereus.events"; }

    std::string message(int value) const override {
        switch (static_cast<errc>(value)) {
            case errc::success:
                return "success";
            case errc::not_bootstrapped:
                return "projection has no cursor for this partition (bootstrap it first)";
            case errc::epoch_mismatch:
                return "delivery is of another epoch than the projection";
            case errc::storage:
                return "projection store failed";
            case errc::invalid_argument:
                return "invalid argument";
        }
        return "unknown events error " + std::to_string(value);
    }
};

}  // namespace

const std::error_category& events_category() noexcept {
    static const category instance;
    return instance;
}

}  // namespace nereus::events
