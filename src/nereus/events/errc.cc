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
            case errc::expired:
                return "subscription expired or its history was trimmed";
            case errc::timeout:
                return "deadline passed; outcome unknown";
            case errc::unadmitted_format:
                return "payload is not in the admitted source format";
            case errc::unknown_policy:
                return "unknown policy";
            case errc::not_registered:
                return "subscription not registered";
            case errc::resume_needs_durable_store:
                return "RESUME needs a durable projection store (choose SNAPSHOT)";
            case errc::ack_beyond_delivered:
                return "ack names no delivered page";
            case errc::ack_behind_committed:
                return "ack is at or behind the committed cursor";
            case errc::lease_lost:
                return "the page's lease was lost to another holder";
            case errc::conflict:
                return "subscription state kept changing (CAS retries exhausted)";
            case errc::ownership_denied:
                return "another process owns the subscription exclusively";
            case errc::fenced:
                return "fenced by a newer exclusive owner";
            case errc::broker:
                return "broker or admin API error";
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
